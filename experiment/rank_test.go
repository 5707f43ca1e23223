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

// ranks answers as rank does for every pair, asked in an order that
// makes pairs share the memo's slots and asked twice (the second from the
// memo), for the group 0 (no group, whose zero slot the memo starts with)
// and groups that are not the run's.
func TestRanksRemembersRightly(t *testing.T) {
	groups := map[event.GroupID][]event.NodeID{
		1: {1, 2, 3, 4, 5, 6, 7, 8},
		2: {2, 4, 6, 8, 10, 12},
		3: {1, 3, 5, 7, 9, 11, 13, 15, 17},
	}
	c := NewCollector(Default(), &Assignment{Groups: groups})
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		g := event.GroupID(rng.IntN(5))
		tx, rx := event.NodeID(rng.IntN(19)), event.NodeID(rng.IntN(19))
		for range 2 {
			tr, rr := c.ranks(g, tx, rx)
			if want := slices.Index(groups[g], tx); tr != want {
				t.Fatalf("ranks(g%d, %d, %d): tx's rank %d, want %d", g, tx, rx, tr, want)
			}
			if want := slices.Index(groups[g], rx); rr != want {
				t.Fatalf("ranks(g%d, %d, %d): rx's rank %d, want %d", g, tx, rx, rr, want)
			}
		}
	}
}
