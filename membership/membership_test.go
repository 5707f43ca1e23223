package membership

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/layercast/layercast/event"
)

func nodes(ids ...int) []event.NodeID {
	out := make([]event.NodeID, len(ids))
	for i, id := range ids {
		out[i] = event.NodeID(id)
	}
	return out
}

// qsmExample builds a membership equivalent to Figure 2 of the first QSM
// paper: 18 nodes subscribe to 300 groups that overlap in 7 regions. The 300
// groups come in three families (A, B, C) of 100 groups each; a node
// subscribes to every group of the families it is interested in, and the
// 18 nodes cover the 7 non-empty combinations (the Venn diagram of A, B, C).
func qsmExample() (x *Index, combos map[string][]event.NodeID) {
	combos = map[string][]event.NodeID{
		"A": nodes(1, 2, 3), "B": nodes(4, 5, 6), "C": nodes(7, 8),
		"AB": nodes(9, 10, 11), "AC": nodes(12, 13), "BC": nodes(14, 15), "ABC": nodes(16, 17, 18),
	}
	family := map[byte]event.GroupID{'A': 0, 'B': 100, 'C': 200}
	x = NewIndex()
	for combo, ns := range combos {
		for _, n := range ns {
			for i := 0; i < len(combo); i++ {
				for k := event.GroupID(1); k <= 100; k++ {
					x.Join(n, family[combo[i]]+k)
				}
			}
		}
	}
	x.Commit()
	return x, combos
}

func TestQSMExampleRegions(t *testing.T) {
	x, combos := qsmExample()
	if got := x.NumGroups(); got != 300 {
		t.Fatalf("NumGroups() = %d, want 300", got)
	}
	if got := x.NumRegions(); got != 7 {
		t.Fatalf("NumRegions() = %d, want 7", got)
	}
	// Each node's own region is exactly the nodes of its combination, and
	// lists the groups of its families.
	for combo, ns := range combos {
		for _, n := range ns {
			rs, own := x.RegionsOf(n)
			if own < 0 {
				t.Fatalf("RegionsOf(%v): no own region", n)
			}
			r := rs[own]
			if !slices.Equal(r.Members, ns) {
				t.Errorf("own region of %v (%s) = %v, want %v", n, combo, r.Members, ns)
			}
			if len(r.Groups) != 100*len(combo) {
				t.Errorf("own region of %v (%s) has %d groups, want %d", n, combo, len(r.Groups), 100*len(combo))
			}
		}
	}
	// A node in A and B sends to 200 groups, but only to the 6 regions that
	// overlap them (every region except C alone), as in the paper's example.
	rs, _ := x.RegionsOf(9)
	if len(rs) != 6 {
		t.Errorf("len(RegionsOf(n9)) = %d, want 6", len(rs))
	}
	// Each group view maps onto the 4 regions of combinations holding its
	// family, whose sizes add up to the group's size.
	for _, g := range []event.GroupID{1, 150, 300} {
		rv := x.RegionsOfGroup(g)
		if len(rv) != 4 {
			t.Errorf("len(RegionsOfGroup(%v)) = %d, want 4", g, len(rv))
		}
		sum := 0
		for _, r := range rv {
			sum += len(r.Members)
		}
		if v := x.View(g); v == nil || sum != v.Size() {
			t.Errorf("regions of %v hold %d members, view has %v", g, sum, v)
		}
	}
	// A group of family A holds the nodes of A, AB, AC and ABC: 3+3+2+3.
	if got := x.View(1).Size(); got != 11 {
		t.Errorf("View(g1).Size() = %d, want 11", got)
	}
}

// ricochetViews is Ricochet's example (section 4.1, Figure 6): node 1 is in
// groups A, B and C, which overlap in every way.
func ricochetViews() map[event.GroupID]*event.ViewInfo {
	const a, b, c = 10, 20, 30
	mk := func(g event.GroupID, ms ...int) *event.ViewInfo {
		return &event.ViewInfo{Group: g, ID: 1, Members: nodes(ms...)}
	}
	// abc: 1,2  ab: 3  ac: 4,5  bc: 6  a: 7,8,9  b: 10  c: 11,12
	return map[event.GroupID]*event.ViewInfo{
		a: mk(a, 1, 2, 3, 4, 5, 7, 8, 9),
		b: mk(b, 1, 2, 3, 6, 10),
		c: mk(c, 1, 2, 4, 5, 6, 11, 12),
	}
}

func TestRicochetExampleRegions(t *testing.T) {
	views := ricochetViews()
	want := []struct {
		groups  []event.GroupID
		members []event.NodeID
	}{
		{[]event.GroupID{10, 20, 30}, nodes(1, 2)},
		{[]event.GroupID{10, 20}, nodes(3)},
		{[]event.GroupID{10, 30}, nodes(4, 5)},
		{[]event.GroupID{20, 30}, nodes(6)},
		{[]event.GroupID{10}, nodes(7, 8, 9)},
		{[]event.GroupID{20}, nodes(10)},
		{[]event.GroupID{30}, nodes(11, 12)},
	}
	check := func(name string, got []event.LocalRegion) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d regions %v, want %d", name, len(got), got, len(want))
		}
		for i, w := range want {
			if !slices.Equal(got[i].Groups, w.groups) || !slices.Equal(got[i].Members, w.members) {
				t.Errorf("%s: region %d = %v %v, want %v %v", name, i, got[i].Groups, got[i].Members, w.groups, w.members)
			}
		}
	}
	check("LocalRegions", LocalRegions([]event.GroupID{10, 20, 30}, views))
	nb := Static(views)[1]
	check("Static", nb.Local)
	if !slices.Equal(nb.Groups, []event.GroupID{10, 20, 30}) {
		t.Errorf("Static: Groups = %v", nb.Groups)
	}
	// The same seven sets are QSM regions too (nodes with identical group
	// sets), and node 1's own region is abc.
	if len(nb.Regions) != 7 || nb.Own < 0 || !slices.Equal(nb.Regions[nb.Own].Members, nodes(1, 2)) {
		t.Errorf("Static: Regions = %v, Own = %d", nb.Regions, nb.Own)
	}
	// Node 10 is only in B: its Ricochet regions are B's four slices,
	// seen from B alone (all in one region "b").
	nb10 := Static(views)[10]
	if len(nb10.Local) != 1 || !slices.Equal(nb10.Local[0].Members, nodes(1, 2, 3, 6, 10)) {
		t.Errorf("Static: n10 Local = %v", nb10.Local)
	}
	// Regions overlapping B: abc, ab, bc, b.
	if len(nb10.Regions) != 4 {
		t.Errorf("Static: n10 has %d regions, want 4: %v", len(nb10.Regions), nb10.Regions)
	}
	// Assemble from the same views and region views agrees with Static.
	rmap := map[event.RegionID]*event.RegionView{}
	for i := range nb.Regions {
		rmap[nb.Regions[i].Region] = &nb.Regions[i]
	}
	as := Assemble(1, views, rmap)
	check("Assemble", as.Local)
	if as.Own != nb.Own || len(as.Regions) != len(nb.Regions) {
		t.Errorf("Assemble: Own %d Regions %d, want %d %d", as.Own, len(as.Regions), nb.Own, len(nb.Regions))
	}
}

// naive recomputes regions from scratch: nodes grouped by identical group sets.
func naive(x *Index, all []event.NodeID) map[string][]event.NodeID {
	out := map[string][]event.NodeID{}
	for _, n := range all {
		gs := x.Groups(n)
		if len(gs) == 0 {
			continue
		}
		k := fmt.Sprint(gs)
		out[k] = append(out[k], n)
	}
	return out
}

// TestIndexIncrementalMatchesNaive applies random joins, leaves and
// removals in batches and checks after every Commit that views, regions and
// per-node updates agree with a from-scratch computation.
func TestIndexIncrementalMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := NewIndex()
	all := make([]event.NodeID, 40)
	for i := range all {
		all[i] = event.NodeID(i + 1)
	}
	// What every node has heard, maintained only from Updates.
	heardViews := map[event.NodeID]map[event.GroupID]*event.ViewInfo{}
	heardRegions := map[event.NodeID]map[event.RegionID]*event.RegionView{}
	for _, n := range all {
		heardViews[n] = map[event.GroupID]*event.ViewInfo{}
		heardRegions[n] = map[event.RegionID]*event.RegionView{}
	}
	for round := 0; round < 200; round++ {
		for k := rng.IntN(5); k >= 0; k-- {
			n := all[rng.IntN(len(all))]
			g := event.GroupID(1 + rng.IntN(12))
			switch rng.IntN(7) {
			case 0:
				x.Remove(n)
			case 1, 2:
				x.Leave(n, g)
			default:
				x.Join(n, g)
			}
		}
		c := x.Commit()
		for _, u := range x.Updates(c) {
			for _, v := range u.Views {
				if v.Has(u.Node) {
					heardViews[u.Node][v.Group] = v
				} else {
					delete(heardViews[u.Node], v.Group)
				}
			}
			if u.FullRegions {
				clear(heardRegions[u.Node])
			}
			for _, id := range u.Removed {
				delete(heardRegions[u.Node], id)
			}
			for _, r := range u.Regions {
				heardRegions[u.Node][r.Region] = r
			}
		}
		want := naive(x, all)
		if x.NumRegions() != len(want) {
			t.Fatalf("round %d: NumRegions() = %d, want %d", round, x.NumRegions(), len(want))
		}
		for _, n := range all {
			gs := x.Groups(n)
			rs, own := x.RegionsOf(n)
			if len(gs) == 0 {
				if own != -1 || len(heardViews[n]) != 0 {
					t.Fatalf("round %d: %v in no group: own=%d heard %v", round, n, own, heardViews[n])
				}
				continue
			}
			if !slices.Equal(rs[own].Members, want[fmt.Sprint(gs)]) {
				t.Fatalf("round %d: own region of %v = %v, want %v", round, n, rs[own].Members, want[fmt.Sprint(gs)])
			}
			// Every region overlapping n's groups, and nothing else.
			nwant := 0
			for _, ms := range want {
				if overlaps(x.Groups(ms[0]), gs) {
					nwant++
				}
			}
			if len(rs) != nwant {
				t.Fatalf("round %d: %v sees %d regions, want %d", round, n, len(rs), nwant)
			}
			// What n heard through Updates is exactly its current state.
			if len(heardViews[n]) != len(gs) {
				t.Fatalf("round %d: %v heard views of %d groups, is in %v", round, n, len(heardViews[n]), gs)
			}
			for _, g := range gs {
				if heardViews[n][g] != x.View(g) {
					t.Fatalf("round %d: %v heard view %v of %v, current %v", round, n, heardViews[n][g], g, x.View(g))
				}
			}
			if len(heardRegions[n]) != len(rs) {
				t.Fatalf("round %d: %v heard %d regions, want %d", round, n, len(heardRegions[n]), len(rs))
			}
			for _, r := range rs {
				if heardRegions[n][r.Region] != r {
					t.Fatalf("round %d: %v heard %v of region %v, want %v", round, n, heardRegions[n][r.Region], r.Region, r)
				}
			}
			// Assemble from what it heard equals the index's own view.
			a, b := Assemble(n, heardViews[n], heardRegions[n]), x.Neighbourhood(n)
			if len(a.Local) != len(b.Local) || a.Own != b.Own || len(a.Regions) != len(b.Regions) {
				t.Fatalf("round %d: Assemble(%v) differs from Neighbourhood", round, n)
			}
		}
	}
}

func TestViewNumbersAndChanges(t *testing.T) {
	x := NewIndex()
	x.Join(1, 5)
	x.Join(2, 5)
	c := x.Commit()
	if len(c.Views) != 1 || c.Views[0].ID != 1 || !slices.Equal(c.Views[0].Joined, nodes(1, 2)) {
		t.Fatalf("first commit views = %+v", c.Views)
	}
	x.Join(3, 5)
	x.Leave(3, 5) // cancels within the batch
	if c := x.Commit(); len(c.Views) != 0 {
		t.Fatalf("join+leave in one batch gave views %+v", c.Views)
	}
	x.Remove(1)
	c = x.Commit()
	if len(c.Views) != 1 || c.Views[0].ID != 2 || !slices.Equal(c.Views[0].Left, nodes(1)) || !slices.Equal(c.Views[0].Members, nodes(2)) {
		t.Fatalf("after Remove(1): %+v", c.Views[0])
	}
	us := x.Updates(c)
	if len(us) != 2 || us[0].Node != 1 || !us[0].FullRegions || len(us[0].Regions) != 0 {
		t.Fatalf("Updates after Remove(1) = %+v", us)
	}
}

// BenchmarkIndexChange is one node joining (then leaving) a group in an
// index of 1,000 nodes in 10,000 groups, 50 groups each: the change, the
// commit and the per-node updates.
func BenchmarkIndexChange(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	x := NewIndex()
	for n := 1; n <= 1000; n++ {
		for _, g := range rng.Perm(10000)[:50] {
			x.Join(event.NodeID(n), event.GroupID(g+1))
		}
	}
	x.Commit()
	var g event.GroupID = 1
	for x.View(g) == nil || x.View(g).Has(500) {
		g++
	}
	updated := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			x.Join(500, g)
		} else {
			x.Leave(500, g)
		}
		updated += len(x.Updates(x.Commit()))
	}
	b.ReportMetric(float64(updated)/float64(b.N), "nodes_updated/op")
}
