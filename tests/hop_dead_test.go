package tests

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	_ "github.com/layercast/layercast/layers/all"
)

// TestHopDeadLink: three sites; at 2 s site 3 is cut off. The Hop links of
// sites 1 and 2 towards it declare it dead (retry limit or silence), the
// site view loses it, the trees are rebuilt without it, and sites 1 and 2
// go on delivering each other's messages, every one of them, in order.
func TestHopDeadLink(t *testing.T) {
	sites := map[event.NodeID]event.SiteID{1: 1, 2: 2, 3: 3}
	groups := map[event.GroupID][]event.NodeID{1: {1, 2, 3}}
	h := newHopNet(t, "hop(link_rate=400KB, dead_after=1s, max_retries=5, nack_retry=100ms)", 5, sites, wanMesh(3, "uniform:1%"), groups)
	for _, n := range []event.NodeID{1, 2, 3} {
		h.castEvery(n, 1, sec(0.1)+event.Time(n)*event.Time(time.Millisecond), sec(6), 20*time.Millisecond)
	}
	h.net.At(sec(2), func() { h.net.Partition([]event.NodeID{1, 2}, []event.NodeID{3}) })
	h.net.RunUntil(sec(10))

	for _, n := range []event.NodeID{1, 2} {
		if d := h.counter("sites_declared_dead", n); d != 1 {
			t.Errorf("n%d declared %d sites dead, want 1 (site 3)", n, d)
		}
	}
	// Survivors: every message of the other survivor, in order, including
	// those cast after site 3 was declared dead.
	h.checkAll(1, []event.NodeID{1, 2}, []event.NodeID{1, 2})
	if got := h.from(2, 1); len(got) == 0 || got[len(got)-1].at < sec(5.9) {
		t.Errorf("n2 delivered %d messages of n1, want deliveries to go on until sending stops at 6s", len(got))
	}
	// Site 3's messages cast before the cut reached the others.
	if n := len(h.from(1, 3)); n < 80 {
		t.Errorf("n1 delivered %d of n3's messages, want those of the first 2 s (about 95)", n)
	}
}
