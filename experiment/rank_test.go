package experiment

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/layercast/layercast/event"
)

// A member's rank is its position in its group's sorted members, and any
// other node has none (-1), for groups counted without branches (up to
// rankScan members) and bisected (larger), with ids up to the largest a
// NodeID holds, and for groups that are not the run's.
func TestRankIsPositionInGroup(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	groups := map[event.GroupID][]event.NodeID{}
	var probes []event.NodeID
	for size := 1; size <= 2*rankScan+1; size++ {
		set := map[event.NodeID]bool{}
		for len(set) < size {
			var id event.NodeID
			switch rng.IntN(3) {
			case 0:
				id = event.NodeID(1 + rng.IntN(64))
			case 1:
				id = event.NodeID(math.MaxUint32 - rng.IntN(64))
			default:
				id = event.NodeID(rng.Uint32())
			}
			if id != event.NoNode {
				set[id] = true
			}
		}
		ms := make([]event.NodeID, 0, size)
		for id := range set {
			ms = append(ms, id)
			probes = append(probes, id-1, id, id+1)
		}
		slices.Sort(ms)
		groups[event.GroupID(size)] = ms
	}
	probes = append(probes, 0, 1, math.MaxUint32)
	c := NewCollector(Default(), &Assignment{Groups: groups})
	for g := event.GroupID(0); g <= event.GroupID(len(groups)+1); g++ {
		for _, n := range probes {
			want := slices.Index(groups[g], n)
			if got := c.rank(g, n); got != want {
				t.Fatalf("rank(g%d, %d) = %d, want %d (members %v)", g, n, got, want, groups[g])
			}
		}
	}
}
