package reliable

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/layertest"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// TestIndexFollowsViews: through a random run of view changes (members
// leaving, joining, re-admitted, node 1 itself removed and re-admitted,
// groups left), the per-packet index answers exactly what the maps do, for
// every (group, node) pair: no stale member after a view change.
func TestIndexFollowsViews(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		var l *Layer
		c := layertest.New(t, sim.Config{Seed: seed, Latency: time.Millisecond}, 1, func() []stack.Entry {
			info, _ := compose.Lookup("reliable")
			x, err := info.New(compose.MustParams("reliable", nil))
			if err != nil {
				t.Fatal(err)
			}
			l = x.(*Layer)
			return []stack.Entry{{Name: "reliable", Layer: x}}
		})
		rng := rand.New(rand.NewPCG(seed, 7))
		ids := map[event.GroupID]uint64{}
		for step := 0; step < 60; step++ {
			v := layertest.RandomView(rng, ids)
			c.Stacks[1].InstallView(v)
			c.Net.Run(time.Millisecond)
			for g := event.GroupID(0); g <= 5; g++ {
				for n := event.NodeID(0); n <= 13; n++ {
					wg, wm := l.groups[g], (*member)(nil)
					if wg != nil && wg.view != nil {
						wm = wg.members[n]
					}
					gg, gm := l.lookup(g, n)
					if gm != wm || (wm != nil && gg != wg) {
						t.Fatalf("seed %d step %d: lookup(%v, %v) = %p, maps say %p", seed, step, g, n, gm, wm)
					}
					if wm != nil && !slices.Contains(wg.view.Members, n) {
						t.Fatalf("seed %d: member %v not in view %v", seed, n, wg.view.Members)
					}
				}
			}
		}
	}
}
