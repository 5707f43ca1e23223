package fifo

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/layertest"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// TestIndexFollowsViews: through a random run of view changes (members
// leaving, joining, re-admitted, node 1 itself removed and re-admitted),
// with casts from members between them, the per-packet index answers
// exactly what the views and maps do for every (group, node) pair: no
// stale member or sender after a view change.
func TestIndexFollowsViews(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		var l *Layer
		c := layertest.New(t, sim.Config{Seed: seed, Latency: time.Millisecond}, 1, func() []stack.Entry {
			l = New(16, 1<<20)
			return []stack.Entry{{Name: "fifo", Layer: l}}
		})
		c.Lax = true
		rng := rand.New(rand.NewPCG(seed, 7))
		ids := map[event.GroupID]uint64{}
		seqs := map[[2]uint32]uint32{}
		for step := 0; step < 60; step++ {
			v := layertest.RandomView(rng, ids)
			c.Stacks[1].InstallView(v)
			// casts from some members (creating senders)
			for _, n := range v.Members[:len(v.Members)/2] {
				k := [2]uint32{uint32(v.Group), uint32(n)}
				seqs[k]++
				c.Stacks[1].Inject(0, true, layertest.SeqCast(v.Group, n, seqs[k], 1, 4))
			}
			c.Net.Run(time.Millisecond)
			for g := event.GroupID(0); g <= 5; g++ {
				for n := event.NodeID(0); n <= 13; n++ {
					e := l.lookup(g, n)
					wg := l.groups[g]
					ok := wg != nil && wg.view != nil && n != 1 && wg.view.Has(n)
					switch {
					case !ok && e != nil:
						t.Fatalf("seed %d step %d: (%v, %v) indexed, not a member", seed, step, g, n)
					case ok && e == nil:
						t.Fatalf("seed %d step %d: member (%v, %v) not indexed", seed, step, g, n)
					case ok && (e.g != wg || e.s != wg.senders[n]):
						t.Fatalf("seed %d step %d: (%v, %v) indexed %p %p, maps say %p %p", seed, step, g, n, e.g, e.s, wg, wg.senders[n])
					}
				}
			}
		}
	}
}
