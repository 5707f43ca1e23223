package fifo

import "github.com/layercast/layercast/event"

// dataUp finds the (group, sender) state through a pairindex.Table of every
// (group, member) pair rather than two map lookups (groups, senders). The
// table is rebuilt whenever members or senders are dropped or groups
// forgotten (installView, dropGroup), which is rare next to packets; dataUp
// fills in a sender it creates.

type hitEntry struct {
	g *group
	s *sender // nil until the sender's first packet
}

// reindex rebuilds the table from the groups' views (one entry per other
// member). It runs at the first lookup after a change (l.stale), not at
// every view: that would cost O(groups) per view, quadratic at start-up.
func (l *Layer) reindex() {
	n := 0
	for _, g := range l.groups {
		if g.view != nil {
			n += len(g.view.Members)
		}
	}
	l.hits.Reset(n)
	for _, g := range l.groups {
		if g.view == nil {
			continue
		}
		for _, id := range g.view.Members {
			if id != l.self {
				l.hits.Put(g.id, id, hitEntry{g: g, s: g.senders[id]})
			}
		}
	}
}

// lookup returns the table's entry for a packet from peer in grp, or nil
// if the group has no view or peer is no member.
func (l *Layer) lookup(grp event.GroupID, peer event.NodeID) *hitEntry {
	if l.stale {
		l.reindex()
		l.stale = false
	}
	return l.hits.Get(grp, peer)
}
