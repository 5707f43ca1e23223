package reliable

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

// TestIndexFollowsViews: through a random run of view changes (members
// leaving, joining, re-admitted, node 1 itself removed and re-admitted,
// groups left), the per-packet index answers exactly what the maps do, for
// every (group, node) pair: no stale member after a view change.
func TestIndexFollowsViews(t *testing.T) {
	var l *Layer
	mk := kept(t, nil, func(x *Layer) { l = x })
	layertest.RandomViews(t, mk, nil, func(g event.GroupID, n event.NodeID) error {
		wg, wm := l.groups[g], (*member)(nil)
		if wg != nil && wg.view != nil {
			wm = wg.members[n]
		}
		gg, gm := l.lookup(g, n)
		if gm != wm || (wm != nil && gg != wg) {
			return fmt.Errorf("lookup = %p, maps say %p", gm, wm)
		}
		if wm != nil && !slices.Contains(wg.view.Members, n) {
			return fmt.Errorf("member not in view %v", wg.view.Members)
		}
		return nil
	})
}

// TestManyViewsOneRebuild: a node joining 2,000 groups one view at a time
// (as at start-up with 8,192 groups per node) rebuilds its pair table once
// at the first packet, not at every view: rebuilding per view made the
// start-up quadratic in the groups (QSM Figure 1's baseline at 8,192 groups
// never finished). Each group's ranked members still follow its view.
func TestManyViewsOneRebuild(t *testing.T) {
	var ls []*Layer
	mk := kept(t, nil, func(x *Layer) { ls = append(ls, x) })
	c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 3, mk)
	const groups = 2000
	all := []event.NodeID{1, 2, 3}
	for g := event.GroupID(1); g <= groups; g++ {
		c.Install(&event.ViewInfo{Group: g, ID: 1, Members: all})
	}
	for g := event.GroupID(1); g <= 5; g++ {
		c.Caster(2, g)(3)
	}
	c.Net.Run(200 * time.Millisecond)
	for i, l := range ls {
		if l.rebuilt > 2 {
			t.Errorf("node %d rebuilt its pair table %d times for %d views", i+1, l.rebuilt, groups)
		}
		for _, g := range l.groups {
			for r, m := range l.rankedOf(g) {
				if id := g.view.Members[r]; (m == nil) != (id == l.self) || (m != nil && m.id != id) {
					t.Fatalf("node %d group %d rank %d: %v, view says %v", i+1, g.id, r, m, id)
				}
			}
		}
	}
	for g := event.GroupID(1); g <= 5; g++ {
		for _, id := range []event.NodeID{1, 3} {
			if got := c.Got[id][g][2]; len(got) != 3 {
				t.Errorf("node %v group %d got %v from node 2", id, g, got)
			}
		}
	}
}
