package gms

import (
	"fmt"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
)

// TestSiteViews: nodes declare their Spread sites; every node in a group
// gets the site views (the live nodes in some group, per site) in its
// neighbourhood, and a crashed node's site gets a new numbered view.
func TestSiteViews(t *testing.T) {
	sites := map[event.NodeID]event.SiteID{1: 1, 2: 1, 3: 2, 4: 3}
	c := newSiteCluster(t, 3, 5, 50*time.Millisecond, 500*time.Millisecond, nil, sites)
	c.join(1, 7)
	c.join(2, 8)
	c.join(3, 7, 8)
	c.join(4, 8)
	// node 5 (site 0) joins nothing: no site view lists it
	c.net.Run(time.Second)
	want := "[{1 1 [n1 n2]} {2 1 [n3]} {3 1 [n4]}]"
	for n := event.NodeID(1); n <= 4; n++ {
		nb := c.nodes[n].rec.nb
		if nb == nil {
			t.Fatalf("%v has no neighbourhood", n)
		}
		if got := fmt.Sprint(nb.Sites); got != want {
			t.Errorf("%v: sites %s, want %s", n, got, want)
		}
		if nb.OwnSite < 0 || nb.Sites[nb.OwnSite].Site != sites[n] {
			t.Errorf("%v: own site index %d in %v, want site %d", n, nb.OwnSite, nb.Sites, sites[n])
		}
	}
	c.net.Crash(2)
	c.net.Run(3 * time.Second)
	want = "[{1 2 [n1]} {2 1 [n3]} {3 1 [n4]}]"
	for _, n := range []event.NodeID{1, 3, 4} {
		if got := fmt.Sprint(c.nodes[n].rec.nb.Sites); got != want {
			t.Errorf("after n2 crashed, %v: sites %s, want %s", n, got, want)
		}
	}
}
