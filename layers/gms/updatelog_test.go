package gms

import (
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
)

// A node that loses the updates of several view installations gets them
// again as they were, not a full update of the latest views: it installs
// every view, so a member removed and readmitted meanwhile is seen leaving
// and rejoining (R2). With a full update n2 went from view 2 to view 4 with
// n3 in both and not in Joined, and kept n3's old streams (soak seed 11 of
// specs/gms.stack).
func TestLostUpdatesAreSentAgain(t *testing.T) {
	c := newCluster(t, 4, 4, 50*time.Millisecond, time.Second)
	for n := 1; n <= 4; n++ {
		c.join(event.NodeID(n), 5)
	}
	c.net.Run(500 * time.Millisecond)
	mark := len(c.nodes[2].rec.history)
	c.nodes[2].f.deaf = true
	c.nodes[3].st.Leave(5)
	c.net.Run(200 * time.Millisecond)
	c.join(3, 5)
	c.net.Run(200 * time.Millisecond)
	c.nodes[2].f.deaf = false
	c.net.Run(time.Second)
	var got []*event.ViewInfo
	for _, v := range c.nodes[2].rec.history[mark:] {
		if v.Group == 5 {
			got = append(got, v)
		}
	}
	if len(got) == 0 {
		t.Fatal("n2 installed no view of g5 after it heard again")
	}
	prev := c.nodes[2].rec.history[mark-1].ID
	left, back := false, false
	for _, v := range got {
		if v.ID != prev+1 {
			t.Errorf("n2 went from view %d to view %d of g5: skipped views", prev, v.ID)
		}
		prev = v.ID
		left = left || !v.Has(3)
		back = back || (left && v.Has(3) && slices.Contains(v.Joined, 3))
	}
	if !left || !back {
		t.Errorf("n2 did not see n3 leave and rejoin g5 (views %+v)", got)
	}
	c.checkConsistent(ids(1, 2, 3, 4))
}
