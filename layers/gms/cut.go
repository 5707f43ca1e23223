package gms

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership/removal"
)

// DefaultCutReportTTL is how long a member's report of a wide-area cut
// counts toward the sides of a split (ServiceConfig.CutReportTTL).
const DefaultCutReportTTL = 10 * time.Second

// cutReport is the latest report of one site's representative that the
// wide-area links cut the sites in cut off from it while it reaches those
// in reach (msgCut).
type cutReport struct {
	from       event.NodeID
	inc        uint64
	at         event.Time
	cut, reach []event.SiteID
}

// cut takes a member's report that the wide-area links cut the sites in
// m.Cut off from it for good while it reaches those in m.Reach (hop, after
// dead_after): Spread's answer to a link failure is a membership change,
// so all but one side of the split must leave the view, and the one that
// stays is the largest. Each site's latest report is kept for
// CutReportTTL (hop repeats it every dead_after while the cut lasts); the
// reports together give the sides: a site is on the side of every site it
// reaches, and the sites no report places (neither a reporter nor reached
// by one) are taken as one side, as a single report of a two-way split
// says. The side with the most live nodes in some group stays (as in the
// site views); on a tie the side holding the lowest site id. Once that
// side has reported, the sites its reports cut off are removed now,
// without probes (they may well answer the service, which reaches every
// side), and told to join again; they are readmitted as after any removal
// (a readmitted member starts afresh). So a two-way split removes the
// smaller side, whichever reports first, and a three-way split with no
// majority (each site reports the other two cut off) keeps the largest
// site rather than nobody. A report from a node that is not in a group, is
// suspected, or whose own site it does not list as reached, is ignored,
// and so are the reports of the sides removed (their reporters are gone).
func (s *Service) cut(now event.Time, from event.NodeID, m *wireMsg) {
	r := s.peers[from]
	ignore := func(why string) {
		s.stats.CutIgnored++
		s.logf("%v reports sites %v cut off from its side %v: ignored, %s", from, m.Cut, m.Reach, why)
	}
	switch {
	case r == nil || r.inc != m.Inc:
		ignore("not a live node")
		return
	case r.suspect:
		ignore("it is suspected itself")
		return
	case len(s.idx.Groups(from)) == 0:
		ignore("it is in no group")
		return
	}
	if _, ok := slices.BinarySearch(m.Reach, r.site); !ok {
		ignore(fmt.Sprintf("its own site %d is not on its side", r.site))
		return
	}
	if s.cuts == nil {
		s.cuts = map[event.SiteID]*cutReport{}
	}
	s.cuts[r.site] = &cutReport{from: from, inc: m.Inc, at: now, cut: slices.Clone(m.Cut), reach: slices.Clone(m.Reach)}

	// The live nodes in some group, by site, and the reports that still
	// count: fresh, from a node still live in the same life and in a group.
	nodes := map[event.SiteID][]*peer{}
	for _, id := range slices.Sorted(maps.Keys(s.peers)) {
		if p := s.peers[id]; len(s.idx.Groups(id)) > 0 {
			nodes[p.site] = append(nodes[p.site], p)
		}
	}
	for site, c := range s.cuts {
		if p := s.peers[c.from]; p == nil || p.inc != c.inc || p.suspect || p.site != site ||
			len(s.idx.Groups(c.from)) == 0 || now.Sub(c.at) > s.cfg.CutReportTTL {
			delete(s.cuts, site)
		}
	}
	side, keep := s.cutSides(nodes)

	// Remove what the staying side's reports cut off.
	var off []*peer
	var by *cutReport
	for _, site := range slices.Sorted(maps.Keys(s.cuts)) {
		c := s.cuts[site]
		if side[site] != keep {
			continue
		}
		if by == nil || c.from == from {
			by = c
		}
		for _, x := range c.cut {
			if side[x] != keep {
				for _, p := range nodes[x] {
					if !slices.Contains(off, p) {
						off = append(off, p)
					}
				}
			}
		}
	}
	if len(off) == 0 {
		if by == nil {
			ignore(fmt.Sprintf("the side that stays (sites %v) has not reported the cut", sidesOf(side, keep)))
		} else {
			ignore("nobody on the sides it cuts off")
		}
		return
	}
	stays := sidesOf(side, keep)
	kept := 0
	for _, x := range stays {
		kept += len(nodes[x])
	}
	slices.SortFunc(off, func(a, b *peer) int { return cmp.Compare(a.id, b.id) })
	for _, p := range off {
		s.stats.CutOff++
		lastReq := p.lastReq
		s.remove(p, now, removal.Record{Node: p.id, At: now, Cause: removal.CutOff, HeardBy: by.from,
			Reason: fmt.Sprintf("cut off from the wide area: %v's links reach no site of %v (its side %v, %d nodes, the largest, stays; %d cut off); the smaller sides leave the view and join again",
				by.from, by.cut, stays, kept, len(off))})
		s.sendRemoved(p.id, lastReq)
	}
}

// cutSides splits the sites with live grouped nodes, and those the fresh
// reports name, into the sides of a wide-area split (see cut): side[x] is
// the side of site x, numbered by its lowest site, and keep is the side
// that stays.
func (s *Service) cutSides(nodes map[event.SiteID][]*peer) (side map[event.SiteID]event.SiteID, keep event.SiteID) {
	// Union-find over sites, each root the lowest site of its side.
	side = map[event.SiteID]event.SiteID{}
	var find func(x event.SiteID) event.SiteID
	find = func(x event.SiteID) event.SiteID {
		if p, ok := side[x]; ok && p != x {
			root := find(p)
			side[x] = root
			return root
		}
		side[x] = x
		return x
	}
	union := func(a, b event.SiteID) {
		ra, rb := find(a), find(b)
		if ra > rb {
			ra, rb = rb, ra
		}
		side[rb] = ra
	}
	placed := map[event.SiteID]bool{}
	for site, c := range s.cuts {
		placed[site] = true
		for _, x := range c.reach {
			placed[x] = true
			union(site, x)
		}
	}
	var rest []event.SiteID
	for _, x := range slices.Sorted(maps.Keys(nodes)) {
		find(x)
		if !placed[x] {
			rest = append(rest, x)
		}
	}
	for _, c := range s.cuts {
		for _, x := range c.cut {
			if find(x); !placed[x] && !slices.Contains(rest, x) {
				rest = append(rest, x)
			}
		}
	}
	for _, x := range rest {
		union(rest[0], x)
	}
	size := map[event.SiteID]int{}
	for _, x := range slices.Sorted(maps.Keys(side)) {
		side[x] = find(x)
		size[side[x]] += len(nodes[x])
	}
	keep = event.SiteID(0)
	first := true
	for _, root := range slices.Sorted(maps.Keys(size)) {
		if first || size[root] > size[keep] {
			keep, first = root, false
		}
	}
	return side, keep
}

// sidesOf lists the sites on side k, in order.
func sidesOf(side map[event.SiteID]event.SiteID, k event.SiteID) []event.SiteID {
	var out []event.SiteID
	for _, x := range slices.Sorted(maps.Keys(side)) {
		if side[x] == k {
			out = append(out, x)
		}
	}
	return out
}
