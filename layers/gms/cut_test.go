package gms

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership/removal"
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
			ct := cutHarness(t, c.sites, 0)
			h := ct.h
			report := func(from event.NodeID) {
				cut, reach := []event.SiteID{3}, []event.SiteID{1}
				if c.sites[from] == 3 {
					cut, reach = reach, cut
				}
				ct.report(from, cut, reach)
			}
			report(c.first)
			report(c.second)
			report(c.first) // again (hop repeats its report): changes nothing
			if gone := ct.gone(); !slices.Equal(gone, c.gone) {
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

// A three-way split with no majority: every site's representative reports
// the other two cut off, in any order. Each report alone takes the two
// sites it cannot reach as one side, larger than its own, and removes
// nobody; together they give three sides, and the largest stays (on a tie
// the one holding the lowest site), the other two removed, whichever
// order the reports came in.
func TestCutThreeWaySplitKeepsTheLargestSide(t *testing.T) {
	for _, c := range []struct {
		name  string
		sites map[event.NodeID]event.SiteID
		gone  []event.NodeID
	}{
		{"largest-stays", map[event.NodeID]event.SiteID{1: 1, 2: 1, 3: 2, 4: 2, 5: 3, 6: 3, 7: 3}, ids(1, 2, 3, 4)},
		{"tie-lowest-stays", map[event.NodeID]event.SiteID{1: 1, 2: 1, 3: 2, 4: 2, 5: 3, 6: 3}, ids(3, 4, 5, 6)},
	} {
		for _, order := range [][]event.SiteID{{1, 2, 3}, {1, 3, 2}, {2, 1, 3}, {2, 3, 1}, {3, 1, 2}, {3, 2, 1}} {
			t.Run(fmt.Sprint(c.name, order), func(t *testing.T) {
				h := cutHarness(t, c.sites, 0)
				for _, s := range order {
					var cut []event.SiteID
					for _, x := range []event.SiteID{1, 2, 3} {
						if x != s {
							cut = append(cut, x)
						}
					}
					h.report(repOf(c.sites, s), cut, []event.SiteID{s})
				}
				if gone := h.gone(); !slices.Equal(gone, c.gone) {
					t.Fatalf("nodes removed %v, want %v (all but the largest side)", gone, c.gone)
				}
			})
		}
	}
}

// A report counts toward the sides only for CutReportTTL: site 1's old
// report (it reached nobody) would, with site 3's, make three sides and
// remove site 1; expired, site 3's report alone sets its 3 nodes against
// sites 1 and 2 together (3 nodes too, and the lower site), and nobody is
// removed.
func TestCutReportsExpire(t *testing.T) {
	sites := map[event.NodeID]event.SiteID{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 3}
	for _, c := range []struct {
		name  string
		after time.Duration
		gone  []event.NodeID
	}{
		{"fresh", 500 * time.Millisecond, ids(1)},
		{"expired", 2 * time.Second, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := cutHarness(t, sites, time.Second)
			h.report(1, []event.SiteID{2, 3}, []event.SiteID{1})
			h.advance(c.after)
			h.report(4, []event.SiteID{1}, []event.SiteID{3})
			if gone := h.gone(); !slices.Equal(gone, c.gone) {
				t.Fatalf("nodes removed %v, want %v", gone, c.gone)
			}
		})
	}
}

// cutTest is a service whose nodes joined group 1 from the sites given.
type cutTest struct {
	t   *testing.T
	h   *svcHarness
	now event.Time
	ns  []event.NodeID
}

// cutHarness starts a service (CutReportTTL ttl, 0 the default) and joins
// every node of sites to group 1.
func cutHarness(t *testing.T, sites map[event.NodeID]event.SiteID, ttl time.Duration) *cutTest {
	c := &cutTest{t: t, h: newSvcHarness(t, ServiceConfig{ViewInterval: 10 * time.Millisecond, FDTimeout: time.Hour, CutReportTTL: ttl})}
	for _, n := range slices.Sorted(maps.Keys(sites)) {
		c.ns = append(c.ns, n)
		if err := c.h.recv(c.now, n, &wireMsg{T: msgRequest, Inc: uint64(n), Seq: 1, Join: []event.GroupID{1}, Site: sites[n]}); err != nil {
			t.Fatal(err)
		}
	}
	c.advance(20 * time.Millisecond)
	return c
}

func (c *cutTest) advance(d time.Duration) {
	c.now = c.now.Add(d)
	c.h.svc.Tick(c.now)
}

func (c *cutTest) report(from event.NodeID, cut, reach []event.SiteID) {
	if err := c.h.recv(c.now, from, &wireMsg{T: msgCut, Inc: uint64(from), Cut: cut, Reach: reach}); err != nil {
		c.t.Fatal(err)
	}
}

// gone lists the nodes in no group, after a view installation.
func (c *cutTest) gone() []event.NodeID {
	c.advance(20 * time.Millisecond)
	var gone []event.NodeID
	for _, n := range c.ns {
		if len(c.h.svc.Index().Groups(n)) == 0 {
			gone = append(gone, n)
		}
	}
	return gone
}

// repOf is the lowest node of site s.
func repOf(sites map[event.NodeID]event.SiteID, s event.SiteID) event.NodeID {
	for _, n := range slices.Sorted(maps.Keys(sites)) {
		if sites[n] == s {
			return n
		}
	}
	return event.NoNode
}
