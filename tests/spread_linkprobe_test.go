package tests

import (
	"testing"

	"github.com/layercast/layercast/event"
	_ "github.com/layercast/layercast/layers/all"
)

// TestSpreadLinkProbedBackUp: three sites of two nodes, full mesh, 1%
// loss; the link 2-3 loses everything from 2 s to 4 s. Its two ends
// declare it down and the trees route around it through site 1; then they
// probe it every quarter of dead_after, and once it carries again they
// bring it up: site 2's messages reach site 3 over it directly again, and
// every member delivers every message, in order. Before, a link declared
// down stayed down until a representative changed: n5 never again heard
// from n3.
func TestSpreadLinkProbedBackUp(t *testing.T) {
	h, wan, t0 := threeSites(t, sec(8))
	senders := []event.NodeID{2, 4, 5}
	groups := map[event.GroupID][]event.NodeID{1: {1, 2, 3, 4, 5, 6}}
	l23 := wan[[2]int{2, 3}]
	h.hopKill(t0+sec(2), 2, 3, l23)
	heal := t0 + sec(4)
	h.net.At(heal, func() { h.net.WANLink(2, 3, l23) })
	h.net.RunUntil(t0 + sec(12))

	h.checkAll(1, senders, groups[1])
	for _, n := range []event.NodeID{3, 5} {
		if d := h.counter("links_down", n); d < 1 {
			t.Errorf("links_down at n%d (a representative at an end of 2-3) = %d, want the cut seen", n, d)
		}
		if u := h.counter("links_up_again", n); u < 1 {
			t.Errorf("links_up_again at n%d = %d, want the link brought up again after the heal (probes sent %d)", n, u, h.counter("link_probes", n))
		}
	}
	// Site 2's data reaches site 3 over the link again (n3 -> n5 directly).
	if got := h.afterCount(5, 3, heal+sec(2)); got == 0 {
		t.Errorf("n5 received no data packets from n3 from 2 s after the heal on: the link stayed down")
	}
	if d := h.counter("sites_declared_dead", 1, 2, 3, 4, 5, 6); d != 0 {
		t.Errorf("sites_declared_dead = %d, want 0", d)
	}
}
