package reliable

import "github.com/layercast/layercast/event"

// The per-packet path (dataUp, digestUp) finds the (group, sender) state
// through a pairindex.Table of every (group, member) pair, rather than two
// map lookups (groups, then members). The table is rebuilt at the first
// lookup after a group's members changed (installView, dropGroup mark it
// stale): rebuilding at every change cost O(groups) per view, quadratic in
// the groups a node joins (8,192 views at start-up); what it does not hold (a viewless group, a non-member) is looked
// up in the maps as before.

type hitEntry struct {
	g *group
	m *member
}

// reindex rebuilds the table from the groups and their members.
func (l *Layer) reindex() {
	n := 0
	for _, g := range l.groups {
		if g.view != nil {
			n += len(g.members) + 1
		}
	}
	l.hits.Reset(n)
	l.rebuilt++
	for _, g := range l.groups {
		if g.view == nil {
			continue
		}
		for id, m := range g.members {
			l.hits.Put(g.id, id, hitEntry{g: g, m: m})
		}
		// ourselves, never a member: advanceStability and sendDigest look
		// every view member up, and a miss would cost two map lookups
		l.hits.Put(g.id, l.self, hitEntry{g: g})
	}
}

// rankedOf is g's members by view rank (nil where we are), as lookup
// would find them; g must have a view. It is kept by installView, per
// group: rebuilding it with the pair table made every view installed at
// start-up rebuild the whole table (advanceStability walks it), quadratic
// in the groups a node joins.
func (l *Layer) rankedOf(g *group) []*member { return g.ranked }

// rerank rebuilds g.ranked from its view and members.
func (g *group) rerank() {
	g.ranked = g.ranked[:0]
	for _, id := range g.view.Members {
		g.ranked = append(g.ranked, g.members[id])
	}
}

// lookup returns the group (nil if unknown) and the member (nil if not
// one) for a packet from peer in grp.
func (l *Layer) lookup(grp event.GroupID, peer event.NodeID) (*group, *member) {
	if l.stale {
		l.reindex()
		l.stale = false
	}
	if e := l.hits.Get(grp, peer); e != nil {
		return e.g, e.m
	}
	g := l.groups[grp]
	if g == nil || g.view == nil {
		return g, nil
	}
	return g, g.members[peer]
}
