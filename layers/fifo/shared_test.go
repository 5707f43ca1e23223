package fifo_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/layercast/layercast/internal/layertest"
	"github.com/layercast/layercast/transport/sim"
)

// Received messages share the transport's read buffers (sim.Config.
// ShareReceive: each buffer is scribbled over once the stack lets go of
// it): fifo, holding most messages behind gaps, keeps them compacted, so
// no buffer outlives the call that handed it over and what every node
// delivers is what it delivers with every packet copied.
func TestSharedReceiveBuffers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		layers []string
		loss   float64
	}{
		{"fifo:reliable/5pct", []string{"fifo", "reliable"}, 0.05},
		{"fifo:reliable/20pct", []string{"fifo", "reliable"}, 0.20},
		{"fifo:reliable:pack/5pct", []string{"fifo", "reliable", "pack"}, 0.05},
		{"mflow:fifo:reliable:pack/5pct", []string{"mflow", "fifo", "reliable", "pack"}, 0.05},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(share bool) *layertest.Cluster {
				cfg := sim.Config{Seed: 12, Latency: time.Millisecond, Jitter: 3 * time.Millisecond,
					Loss: sim.Uniform{P: tc.loss}, ShareReceive: share}
				c := layertest.New(t, cfg, 9, layertest.Registered(nil, tc.layers...))
				c.RunThreeGroups(300, time.Millisecond, true)
				return c
			}
			copied, shared := run(false), run(true)
			all := shared.All()
			if !shared.Stacks[1].Shares() {
				t.Fatalf("%v does not share read buffers", tc.layers)
			}
			if r := shared.Counter("fifo", "reordered", all...); r == 0 {
				t.Fatal("reordered = 0: fifo held nothing")
			}
			if k := shared.Net.SharedKept(); k != 0 {
				t.Errorf("%d read buffers kept past the call that handed them over", k)
			}
			if !reflect.DeepEqual(copied.Got, shared.Got) {
				t.Error("deliveries differ from the run that copies every packet")
			}
			if copied.Net.Stats() != shared.Net.Stats() {
				t.Errorf("network stats differ: copied %+v, shared %+v", copied.Net.Stats(), shared.Net.Stats())
			}
		})
	}
}
