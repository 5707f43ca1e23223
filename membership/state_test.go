package membership

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/layercast/layercast/event"
)

// randomOps changes x at random: joins, leaves and removals of 12 nodes
// over 6 groups.
func randomOps(x *Index, r *rand.Rand, n int) {
	for range n {
		nd, g := event.NodeID(1+r.IntN(12)), event.GroupID(1+r.IntN(6))
		switch r.IntN(4) {
		case 0, 1:
			x.Join(nd, g)
		case 2:
			x.Leave(nd, g)
		default:
			x.Remove(nd)
		}
	}
}

// A restored index goes on exactly as the original: the same views, with
// the same numbers, and the same region ids and region views, after the
// same changes (view numbers that never go back across a failover).
func TestRestoredIndexContinuesAsTheOriginal(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 1))
		x := NewIndex()
		for range 1 + r.IntN(5) {
			randomOps(x, r, 10)
			x.Commit()
		}
		// Sometimes with removals pending: the churn must survive.
		randomOps(x, r, r.IntN(8))
		st := x.State()
		var committed event.RegionID
		for _, r := range st.Regions {
			committed = max(committed, r.Region)
		}
		y, err := RestoreIndex(&st)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		// y lacks x's pending joins and leaves (the service replays those
		// from its node records): replay them as the diff of group sets.
		for _, n := range x.Nodes() {
			want, have := x.Groups(n), slices.Clone(y.Groups(n))
			y.JoinMany(n, want)
			var leave []event.GroupID
			for _, g := range have {
				if !slices.Contains(want, g) {
					leave = append(leave, g)
				}
			}
			y.LeaveMany(n, leave)
		}
		for _, n := range y.Nodes() {
			if len(x.Groups(n)) == 0 {
				y.Remove(n)
			}
		}
		for step := range 4 {
			cx, cy := x.Commit(), y.Commit()
			if !reflect.DeepEqual(cx.Views, cy.Views) {
				t.Fatalf("seed %d step %d: views differ:\noriginal %v\nrestored %v", seed, step, views(cx.Views), views(cy.Views))
			}
			// Regions formed after the snapshot may be numbered apart
			// (both fresh); those committed before keep their ids.
			if !reflect.DeepEqual(regionsOf(x, committed), regionsOf(y, committed)) {
				t.Fatalf("seed %d step %d: regions differ:\noriginal %v\nrestored %v", seed, step, regionsOf(x, committed), regionsOf(y, committed))
			}
			randomOps(x, rand.New(rand.NewPCG(seed, uint64(step)+2)), 8)
			randomOps(y, rand.New(rand.NewPCG(seed, uint64(step)+2)), 8)
		}
	}
}

func views(vs []*event.ViewInfo) []event.ViewInfo {
	out := make([]event.ViewInfo, len(vs))
	for i, v := range vs {
		out[i] = *v
	}
	return out
}

// regionsOf lists the committed region views of every node, with the
// region ids handed out up to upTo (those after may differ: both fresh).
func regionsOf(x *Index, upTo event.RegionID) map[event.NodeID][]event.RegionView {
	out := map[event.NodeID][]event.RegionView{}
	for _, n := range x.Nodes() {
		rs, _ := x.RegionsOf(n)
		for _, r := range rs {
			c := *r
			if c.Region > upTo {
				c.Region = 0
			}
			out[n] = append(out[n], c)
		}
		slices.SortFunc(out[n], func(a, b event.RegionView) int { return slices.Compare(a.Groups, b.Groups) })
	}
	return out
}

// A group that emptied and forms again after a restore goes on numbering
// its views where it stopped.
func TestRestoredIndexKeepsEmptiedGroupsNumbers(t *testing.T) {
	x := NewIndex()
	x.Join(1, 7)
	x.Commit()
	x.Join(2, 7)
	x.Commit()
	x.Remove(1)
	x.Remove(2)
	x.Commit() // view 3, empty
	st := x.State()
	y, err := RestoreIndex(&st)
	if err != nil {
		t.Fatal(err)
	}
	y.Join(3, 7)
	c := y.Commit()
	if len(c.Views) != 1 || c.Views[0].ID != 4 {
		t.Fatalf("group 7 formed again after a restore: views %v, want one numbered 4", views(c.Views))
	}
}

func TestRestoreIndexRefusesContradictions(t *testing.T) {
	bad := []IndexState{
		{Views: []*event.ViewInfo{{Group: 1, ID: 1, Members: []event.NodeID{2, 1}}}},
		{Views: []*event.ViewInfo{{Group: 1, ID: 1, Members: []event.NodeID{1}}, {Group: 1, ID: 2, Members: []event.NodeID{1}}}},
		{Views: []*event.ViewInfo{{Group: 1, ID: 0, Members: []event.NodeID{1}}}},
		{Views: []*event.ViewInfo{nil}},
		{Regions: []*event.RegionView{{Region: 1, ID: 1, Groups: []event.GroupID{2, 1}}}},
		{Regions: []*event.RegionView{{Region: 1, ID: 1}, {Region: 1, ID: 1}}},
	}
	for i, st := range bad {
		if _, err := RestoreIndex(&st); err == nil {
			t.Errorf("state %d restored without error", i)
		}
	}
}

// A member removed and readmitted before the next Commit (R2: the view
// lists it in Joined and Left) still gets that view from a restored index.
func TestRestoredIndexKeepsPendingChurn(t *testing.T) {
	x := NewIndex()
	x.JoinMany(1, []event.GroupID{5})
	x.JoinMany(2, []event.GroupID{5})
	x.Commit()
	x.Remove(2)
	st := x.State()
	y, err := RestoreIndex(&st)
	if err != nil {
		t.Fatal(err)
	}
	y.Join(2, 5) // the service replays node 2's new request
	c := y.Commit()
	if len(c.Views) != 1 || c.Views[0].ID != 2 || !slices.Equal(c.Views[0].Joined, []event.NodeID{2}) || !slices.Equal(c.Views[0].Left, []event.NodeID{2}) {
		t.Fatalf("after restore: views %v, want view 2 of g5 with n2 in Joined and Left", views(c.Views))
	}
}
