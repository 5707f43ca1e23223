package fifo_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/layercast/layercast/testbed/layertest"
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

// Held messages stay in the shared read buffers within a budget
// (sim.Config.SharePins, event.Pins): at 10% loss fifo holds most messages
// behind gaps, more buffers than the budget would be kept, and past it
// held messages are copied, so the buffers kept at once never pass it;
// every buffer is scribbled over once released, and what every node
// delivers is what it delivers with every packet copied.
func TestHeldInPlaceWithinBudget(t *testing.T) {
	const budget = 6
	for _, tc := range []struct {
		name   string
		layers []string
	}{
		{"fifo:reliable", []string{"fifo", "reliable"}},
		{"fifo:reliable:pack", []string{"fifo", "reliable", "pack"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(share bool) *layertest.Cluster {
				cfg := sim.Config{Seed: 12, Latency: time.Millisecond, Jitter: 3 * time.Millisecond,
					Loss: sim.Uniform{P: 0.10}, ShareReceive: share, SharePins: budget}
				c := layertest.New(t, cfg, 9, layertest.Registered(nil, tc.layers...))
				c.RunThreeGroups(300, time.Millisecond, true)
				return c
			}
			copied, shared := run(false), run(true)
			pins := shared.Net.SharedPins()
			t.Logf("peak %d buffers kept by held messages (budget %d), %d held messages copied, %d packets' buffers kept past the call",
				pins.Peak(), budget, pins.Copies(), shared.Net.SharedKept())
			if pins.Peak() > budget {
				t.Errorf("held messages kept %d read buffers at once, budget %d", pins.Peak(), budget)
			}
			if pins.Peak() == 0 || shared.Net.SharedKept() == 0 {
				t.Error("no held message stayed in its read buffer")
			}
			if pins.Copies() == 0 {
				t.Error("the budget was never full: the run does not test it")
			}
			if pins.Pinned() != 0 {
				t.Errorf("%d buffers still kept after Close", pins.Pinned())
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
