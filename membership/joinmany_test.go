package membership

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/layercast/layercast/event"
)

// JoinMany must leave the index in the same state as joining one group at a
// time: the same views, and the same regions (group sets and members).
func TestJoinManyMatchesJoin(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	one, many := NewIndex(), NewIndex()
	for n := event.NodeID(1); n <= 40; n++ {
		var gs []event.GroupID
		for g := event.GroupID(1); g <= 30; g++ {
			if rng.IntN(3) == 0 {
				gs = append(gs, g)
			}
		}
		for _, g := range gs {
			one.Join(n, g)
		}
		many.JoinMany(n, gs)
	}
	one.Commit()
	many.Commit()
	for g := event.GroupID(1); g <= 30; g++ {
		a, b := one.View(g), many.View(g)
		if (a == nil) != (b == nil) || (a != nil && !slices.Equal(a.Members, b.Members)) {
			t.Fatalf("group %v: Join gives %v, JoinMany gives %v", g, a, b)
		}
	}
	if one.NumRegions() != many.NumRegions() {
		t.Fatalf("regions: Join %d, JoinMany %d", one.NumRegions(), many.NumRegions())
	}
	for n := event.NodeID(1); n <= 40; n++ {
		ra, oa := one.RegionsOf(n)
		rb, ob := many.RegionsOf(n)
		if len(ra) != len(rb) || (oa >= 0) != (ob >= 0) {
			t.Fatalf("node %v: %d regions (own %d) vs %d (own %d)", n, len(ra), oa, len(rb), ob)
		}
		if oa >= 0 && (!slices.Equal(ra[oa].Groups, rb[ob].Groups) || !slices.Equal(ra[oa].Members, rb[ob].Members)) {
			t.Fatalf("node %v: own region differs: %v vs %v", n, ra[oa], rb[ob])
		}
	}
}

func BenchmarkStatic(b *testing.B) {
	// 64 nodes in 1024 groups each (s=8): the Ricochet sweep's largest point.
	const n, d, s = 64, 1024, 8
	views := map[event.GroupID]*event.ViewInfo{}
	g := event.GroupID(1)
	for k := 0; k < n*d/s; k++ {
		v := &event.ViewInfo{Group: g, ID: 1}
		for j := 0; j < s; j++ {
			v.Members = append(v.Members, event.NodeID((k*s+j)%n+1))
		}
		slices.Sort(v.Members)
		v.Members = slices.Compact(v.Members)
		views[g] = v
		g++
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Static(views)
	}
}
