package gms

import (
	"slices"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
)

// Spread sites in the membership service: each node declares its site with
// its heartbeats and requests; the service computes one view per site of
// the live nodes that are in some group, numbers each site's views, and
// sends the whole list to every node in a group whenever it changes (it is
// small: one entry per node). Every node is in site 0 unless it declares
// another, and a service where none does still gives site 0's view: a
// layer that runs one protocol per site (ring) needs the same member set at
// every member, which the union of a node's groups is not when groups only
// partly overlap.

// placeSite records the site p declared.
func (s *Service) placeSite(p *peer, site event.SiteID, now event.Time) {
	if p.site == site {
		return
	}
	p.site = site
	s.sitesSeen = true
	s.schedule(now)
}

// commitSites recomputes the site views; it reports whether they changed.
func (s *Service) commitSites() bool {
	s.sitesSeen = true // site 0 counts too: full updates carry the views
	var nodes []event.NodeID
	for id := range s.peers {
		if len(s.idx.Groups(id)) > 0 {
			nodes = append(nodes, id)
		}
	}
	slices.Sort(nodes)
	vs := membership.SiteViews(nodes, func(n event.NodeID) event.SiteID { return s.peers[n].site }, 0)
	if s.siteIDs == nil {
		s.siteIDs = map[event.SiteID]uint64{}
	}
	changed := len(vs) != len(s.sites)
	for i := range vs {
		j, ok := slices.BinarySearchFunc(s.sites, vs[i].Site, func(a event.SiteView, b event.SiteID) int { return int(a.Site) - int(b) })
		if ok && slices.Equal(s.sites[j].Members, vs[i].Members) {
			vs[i].ID = s.sites[j].ID
			continue
		}
		changed = true
		s.siteIDs[vs[i].Site]++
		vs[i].ID = s.siteIDs[vs[i].Site]
	}
	if changed {
		s.sites = vs
	}
	return changed
}

// sendSites sends the new site views to every node in a group that the
// commit's updates (done) did not reach.
func (s *Service) sendSites(now event.Time, done []*membership.Update) {
	for _, sv := range s.sites {
		for _, n := range sv.Members {
			if _, ok := slices.BinarySearchFunc(done, n, func(u *membership.Update, n event.NodeID) int { return int(u.Node) - int(n) }); ok {
				continue
			}
			if p := s.peers[n]; p != nil && !(p.needFull && !p.canResend()) {
				s.stats.NodeUpdates++
				s.sendUpdate(p, now, false, nil, false, nil, nil, true)
			}
		}
	}
}
