package gms

import (
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/removal"
)

// The service's rule for sites a member's wide-area links cut off (msgCut,
// Service.cut): both sides of a split report each other, in either order,
// and only the smaller side is removed (on a tie, the side holding the
// lowest site id stays), each removal recorded as cut off from the wide
// area and told to join again; the other side's report removes nobody.
func TestCutRemovesTheSmallerSideOnly(t *testing.T) {
	for _, c := range []struct {
		name   string
		sites  map[event.NodeID]event.SiteID
		first  event.NodeID // reports first; the other reporter second
		second event.NodeID
		gone   []event.NodeID
	}{
		{"smaller-side-first", map[event.NodeID]event.SiteID{1: 1, 2: 1, 3: 2, 4: 3, 5: 3, 6: 3}, 1, 4, ids(1, 2)},
		{"larger-side-first", map[event.NodeID]event.SiteID{1: 1, 2: 1, 3: 2, 4: 3, 5: 3, 6: 3}, 4, 1, ids(1, 2)},
		{"tie-lower-site-stays", map[event.NodeID]event.SiteID{1: 1, 2: 1, 3: 2, 4: 3, 5: 3}, 4, 1, ids(4, 5)},
		{"tie-lower-site-stays-other-order", map[event.NodeID]event.SiteID{1: 1, 2: 1, 3: 2, 4: 3, 5: 3}, 1, 4, ids(4, 5)},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newSvcHarness(t, ServiceConfig{ViewInterval: 10 * time.Millisecond, FDTimeout: time.Hour})
			now := event.Time(0)
			for n, s := range c.sites {
				if err := h.recv(now, n, &wireMsg{T: msgRequest, Inc: uint64(n), Seq: 1, Join: []event.GroupID{1}, Site: s}); err != nil {
					t.Fatal(err)
				}
			}
			now = now.Add(20 * time.Millisecond)
			h.svc.Tick(now)
			report := func(from event.NodeID) {
				cut, reach := []event.SiteID{3}, []event.SiteID{1}
				if c.sites[from] == 3 {
					cut, reach = reach, cut
				}
				if err := h.recv(now, from, &wireMsg{T: msgCut, Inc: uint64(from), Cut: cut, Reach: reach}); err != nil {
					t.Fatal(err)
				}
			}
			report(c.first)
			report(c.second)
			report(c.first) // again (hop repeats its report): changes nothing
			now = now.Add(20 * time.Millisecond)
			h.svc.Tick(now)
			var gone []event.NodeID
			for n := range c.sites {
				if len(h.svc.Index().Groups(n)) == 0 {
					gone = append(gone, n)
				}
			}
			slices.Sort(gone)
			if !slices.Equal(gone, c.gone) {
				t.Fatalf("nodes removed %v, want %v (the smaller side only)", gone, c.gone)
			}
			recs, _ := h.svc.Removals()
			if len(recs) != len(c.gone) {
				t.Fatalf("%d removal records, want %d: %+v", len(recs), len(c.gone), recs)
			}
			for _, r := range recs {
				if r.Cause != removal.CutOff || !slices.Contains(c.gone, r.Node) || r.HeardBy == event.NoNode || slices.Contains(c.gone, r.HeardBy) {
					t.Errorf("record %+v: want cut off from the wide area, reported by a node of the side that stays", r)
				}
				told := slices.ContainsFunc(h.out[r.Node], func(m wireMsg) bool { return m.T == msgRemoved })
				if !told {
					t.Errorf("%v not told it was removed (it would not join again)", r.Node)
				}
			}
			if st := h.svc.Stats(); st.CutOff != int64(len(c.gone)) || st.CutIgnored != 2 {
				t.Errorf("stats: %d nodes cut off, %d reports ignored; want %d and 2", st.CutOff, st.CutIgnored, len(c.gone))
			}
		})
	}
}
