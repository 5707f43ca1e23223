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

// TestSuspectReported: a Suspect going down through gms (hop's dead link)
// makes the service probe that node at once: a live node answers and
// stays; a crashed one is suspected before its own fd timeout would have
// made it so, and removed.
func TestSuspectReported(t *testing.T) {
	c := newCluster(t, 4, 3, 50*time.Millisecond, time.Second)
	for n := event.NodeID(1); n <= 3; n++ {
		c.join(n, 7)
	}
	c.net.Run(time.Second)
	report := func(by, n event.NodeID) {
		c.nodes[by].st.Inject(1, false, event.Event{Kind: event.Suspect, Peer: n})
	}
	report(1, 2) // alive
	c.net.Run(300 * time.Millisecond)
	st := c.svc.Service().Stats()
	if st.Suspected != 1 || st.Cleared != 1 || st.Failed != 0 {
		t.Errorf("a live node reported: suspected %d, cleared %d, failed %d; want 1, 1, 0", st.Suspected, st.Cleared, st.Failed)
	}
	c.net.Crash(3)
	c.net.Run(100 * time.Millisecond)
	report(1, 3)
	c.net.Run(200 * time.Millisecond) // well within the 1 s fd timeout
	if st := c.svc.Service().Stats(); st.Suspected != 2 {
		t.Errorf("a crashed node reported: suspected %d, want 2", st.Suspected)
	}
	c.net.Run(3 * time.Second)
	if v := c.nodes[1].rec.views[7]; v == nil || v.Has(3) {
		t.Errorf("view of g7 at n1 = %v, want n3 removed", v)
	}
	if got := c.nodes[1].gms.c.Suspects.Value(); got != 2 {
		t.Errorf("suspects_reported = %d, want 2", got)
	}
}
