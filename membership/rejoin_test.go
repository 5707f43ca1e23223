package membership

import (
	"slices"
	"testing"

	"github.com/layercast/layercast/event"
)

// R2 of the rejoin contract: a node removed and readmitted within one batch
// is not hidden. The group's member list is unchanged, yet a new view is
// installed (its ID goes up) listing the node in both Left and Joined, and
// the node's update carries that view once.
func TestRemoveAndRejoinInOneBatchIsAView(t *testing.T) {
	x := NewIndex()
	x.JoinMany(1, []event.GroupID{5, 6})
	x.Join(2, 5)
	x.Join(3, 5)
	x.Commit()
	old := x.View(5)

	x.Remove(2)  // declared failed (or a new incarnation)...
	x.Join(2, 5) // ...and back before the next installation
	c := x.Commit()
	if len(c.Views) != 1 {
		t.Fatalf("remove+rejoin of n2 in one batch installed %d views, want 1 (g5): %+v", len(c.Views), c.Views)
	}
	v := c.Views[0]
	if v.Group != 5 || v.ID != old.ID+1 || !slices.Equal(v.Members, nodes(1, 2, 3)) ||
		!slices.Equal(v.Joined, nodes(2)) || !slices.Equal(v.Left, nodes(2)) {
		t.Fatalf("view after remove+rejoin = %+v, want g5 #%d members [1 2 3] joined [2] left [2]", v, old.ID+1)
	}
	for _, u := range x.Updates(c) {
		n := 0
		for _, uv := range u.Views {
			if uv == v {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%v's update carries the new view %d times, want 1", u.Node, n)
		}
	}
	// A node that was not in the committed view and joins and leaves in
	// one batch still changes nothing.
	x.Join(4, 5)
	x.Leave(4, 5)
	if c := x.Commit(); len(c.Views) != 0 {
		t.Fatalf("join+leave of a newcomer gave views %+v", c.Views)
	}
	// Leave and join again through Leave (not Remove) is the same.
	x.Leave(3, 5)
	x.Join(3, 5)
	c = x.Commit()
	if len(c.Views) != 1 || !slices.Equal(c.Views[0].Joined, nodes(3)) || !slices.Equal(c.Views[0].Left, nodes(3)) {
		t.Fatalf("leave+join of n3 in one batch: %+v", c.Views)
	}
	// The next batch without change installs nothing.
	if c := x.Commit(); !c.Empty() {
		t.Fatalf("empty batch installed %+v", c)
	}
}
