package gms

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
)

// A replicated service (stacktool gms --etcd) keeps its state in a
// membership.Store: before it acknowledges a request and before it sends
// views, it saves the committed views with their numbers, the region ids,
// the site views and every node's wishes (what it asked for, its last
// request, its incarnation). A new leader restores that state (Restore):
// its first views go on from the saved numbers, and every node finds the
// service holding what it asked for, so none is removed or told to join
// again. The update sequence numbers are not saved (they change with
// every packet): the new leader's first update to each node is a full
// one (the existing resync), repeating the views it already holds, and
// numbering goes on from termBase, past every number the earlier leaders
// used. A node's heartbeat says the last update it applied; numbered
// from 1 again, a node that had applied k of the old leader's updates
// looked up to date once the new leader had sent it k, even though all
// k were lost (over UDP the first are: the new leader learns a node's
// address only from its next packet). The term is saved, so each leader
// has its own range.

// save gives the state to the Store if it changed since the last save; a
// failure halts the service.
func (s *Service) save() error {
	if s.cfg.Store == nil || !s.unsaved {
		return s.halted
	}
	if err := s.cfg.Store.Save(s.State()); err != nil {
		s.halted = fmt.Errorf("gms: membership state not saved, service stopped: %w", err)
		s.logf("%v", s.halted)
		return s.halted
	}
	s.unsaved = false
	return nil
}

// Halted is the error that stopped the service (a failed save), or nil.
func (s *Service) Halted() error { return s.halted }

// State is what the next leader needs to go on from this service.
func (s *Service) State() *membership.ServiceState {
	st := &membership.ServiceState{Index: s.idx.State(), Sites: slices.Clone(s.sites), Term: s.term}
	for _, p := range s.peers {
		gs := s.idx.Groups(p.id)
		if p.lastReq == 0 && len(gs) == 0 {
			continue // asked for nothing yet: its next heartbeat makes it again
		}
		st.Nodes = append(st.Nodes, membership.NodeState{
			ID: p.id, Inc: p.inc, Site: p.site, LastReq: p.lastReq, Refused: slices.Clone(p.refused),
			Groups: slices.Clone(gs), Timeout: int64(p.timeout), Suspect: int64(p.suspectT), Interval: int64(p.interval),
		})
	}
	slices.SortFunc(st.Nodes, func(a, b membership.NodeState) int { return cmp.Compare(a.ID, b.ID) })
	for site, id := range s.siteIDs {
		st.SiteIDs = append(st.SiteIDs, membership.SiteViewID{Site: site, ID: id})
	}
	slices.SortFunc(st.SiteIDs, func(a, b membership.SiteViewID) int { return cmp.Compare(a.Site, b.Site) })
	return st
}

// Restore makes a service with no members go on from st (saved by another
// instance's State): every node in it is live as if heard at now, and what
// was pending there is installed at the next commit. A state that
// contradicts itself or exceeds the service's bounds is an error.
func (s *Service) Restore(now event.Time, st *membership.ServiceState) error {
	if len(s.peers) > 0 || s.idx.NumGroups() > 0 {
		return fmt.Errorf("gms: restore into a service that has members")
	}
	if len(st.Nodes) > s.cfg.MaxNodes {
		return fmt.Errorf("gms: saved state holds %d nodes, the service at most %d", len(st.Nodes), s.cfg.MaxNodes)
	}
	idx, err := membership.RestoreIndex(&st.Index)
	if err != nil {
		return err
	}
	peers := map[event.NodeID]*peer{}
	for _, ns := range st.Nodes {
		if ns.ID == event.NoNode || peers[ns.ID] != nil {
			return fmt.Errorf("gms: saved state holds node %v twice or node 0", ns.ID)
		}
		if len(ns.Groups) > s.cfg.MaxGroupsPerNode {
			return fmt.Errorf("gms: saved state has %v in %d groups, at most %d", ns.ID, len(ns.Groups), s.cfg.MaxGroupsPerNode)
		}
		p := &peer{id: ns.ID, inc: ns.Inc, site: ns.Site, lastReq: ns.LastReq, refused: slices.Clone(ns.Refused), heard: now, lastSend: now, sent: termBase(st.Term + 1),
			timeout: s.restoreTimeout(ns.Timeout, s.cfg.FDTimeout), suspectT: s.restoreTimeout(ns.Suspect, s.cfg.SuspectTimeout)}
		p.interval = max(min(s.restoreTimeout(ns.Interval, p.timeout/4), p.timeout), p.suspectT/maxProbes)
		peers[ns.ID] = p
	}
	s.idx, s.peers = idx, peers
	s.term = st.Term + 1
	s.unsaved = true // the term, before anything is sent under it
	// Nodes in a committed view without a record had been dropped: their
	// removal was pending.
	for _, n := range idx.Nodes() {
		if peers[n] == nil {
			idx.Remove(n)
		}
	}
	for _, ns := range st.Nodes {
		want := slices.Clone(ns.Groups)
		slices.Sort(want)
		want = slices.Compact(want)
		var leave []event.GroupID
		for _, g := range idx.Groups(ns.ID) {
			if _, in := slices.BinarySearch(want, g); !in {
				leave = append(leave, g)
			}
		}
		idx.LeaveMany(ns.ID, leave)
		idx.JoinMany(ns.ID, want)
		p := peers[ns.ID]
		l := s.lists[p.timeout]
		if l == nil {
			l = &peerList{d: p.timeout}
			s.lists[p.timeout] = l
		}
		p.list = l
		l.pushBack(p)
		// The old leader's update numbers are not saved: the first
		// update this one sends a node is full (a node takes any full
		// update; a numbered one could look old to it and be dropped).
		p.needFull = true
		s.resync = append(s.resync, p)
	}
	s.sites = slices.Clone(st.Sites)
	s.sitesSeen = len(st.Sites) > 0
	s.siteIDs = map[event.SiteID]uint64{}
	for _, v := range st.SiteIDs {
		s.siteIDs[v.Site] = max(s.siteIDs[v.Site], v.ID)
	}
	for _, v := range st.Sites {
		s.siteIDs[v.Site] = max(s.siteIDs[v.Site], v.ID)
	}
	s.logf("restored %d nodes in %d groups from the saved state", len(peers), idx.NumGroups())
	s.schedule(now) // what was pending, if anything, is installed
	return nil
}

// termBase is the first update number of leader term t: a leader would
// have to send one node 2^32 updates to reach the next term's range.
func termBase(t uint64) uint64 { return t << 32 }

// restoreTimeout is a saved timeout, clamped as a heartbeat's would be, or
// def if none was saved.
func (s *Service) restoreTimeout(ns int64, def time.Duration) time.Duration {
	if ns <= 0 {
		return def
	}
	return min(max(time.Duration(ns), s.cfg.MinTimeout), s.cfg.MaxTimeout)
}

// UseStore makes the layer's service save its state in st and, if from is
// not nil, start from it (membership.Durable: stacktool gms --etcd). Call
// it before the stack starts.
func (l *ServiceLayer) UseStore(st membership.Store, from *membership.ServiceState) {
	l.Config.Store = st
	l.restore = from
}

var _ membership.Durable = (*ServiceLayer)(nil)
