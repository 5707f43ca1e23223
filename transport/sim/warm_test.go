package sim_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// warmPass is a pass-through layer that counts the Warm calls it gets, by
// (group, source) and stage.
type warmPass struct {
	stack.Base
	calls map[[3]int]int
}

func (l *warmPass) Warm(g event.GroupID, src event.NodeID, stage int) {
	l.calls[[3]int{int(g), int(src), stage}]++
}

// On a network large enough to prefetch, every stack whose layer is a
// Warmer is warmed for the packets it receives, at every stage, and the
// run is the one a network of layers without Warm gives: same deliveries,
// at the same times.
func TestWarmersWarmedAndRunUnchanged(t *testing.T) {
	const n = 80 // above the size from which the network prefetches
	cfg := sim.Config{Seed: 3, Latency: time.Millisecond, Jitter: 200 * time.Microsecond, Loss: sim.Uniform{P: 0.05}}
	run := func(warm bool) (*harness, map[event.NodeID]*warmPass) {
		ws := map[event.NodeID]*warmPass{}
		h := newHarness(t, cfg, n, func(id event.NodeID) []stack.Entry {
			if !warm {
				return nil
			}
			ws[id] = &warmPass{calls: map[[3]int]int{}}
			return []stack.Entry{{Name: "warm", Layer: ws[id]}}
		})
		h.every(ms(1), 100*time.Microsecond, 50, func(i int) { h.cast(event.NodeID(1+i%5), "m") })
		h.net.RunUntil(ms(100))
		return h, ws
	}
	plain, _ := run(false)
	warmed, ws := run(true)
	if !reflect.DeepEqual(plain.got, warmed.got) || plain.net.Stats() != warmed.net.Stats() {
		t.Fatalf("a run with Warmer layers differs from one without: stats %+v, want %+v", warmed.net.Stats(), plain.net.Stats())
	}
	for id := event.NodeID(1); id <= n; id++ {
		for _, r := range warmed.got[id] {
			for stage := 0; stage < stack.WarmStages; stage++ {
				if ws[id].calls[[3]int{int(grp), int(r.from), stage}] == 0 {
					t.Fatalf("n%d delivered a cast from n%d but was never warmed for it at stage %d", id, r.from, stage)
				}
			}
		}
	}
}
