package reliable

import "github.com/layercast/layercast/event"

// The per-packet path (dataUp, digestUp) finds the (group, sender) state
// through an open-addressing table of every (group, member) pair, rather
// than two map lookups (groups, then members): at thousands of simulated
// nodes every stack's maps are cold and each lookup costs several cache
// misses (issue 9 item 11); one probe of this table usually costs one.
// The table is rebuilt whenever a group's members change (installView,
// dropGroup), which is rare next to packets; what it does not hold (a
// viewless group, a non-member) is looked up in the maps as before.

type hitEntry struct {
	grp  event.GroupID
	peer event.NodeID
	g    *group // nil: empty slot
	m    *member
}

// hitIndex is the table: a power of two of slots, at most half full.
type hitIndex struct {
	slots []hitEntry
}

func hitHash(grp event.GroupID, peer event.NodeID) uint32 {
	return uint32(grp)*0x85EBCA6B ^ uint32(peer)*0x9E3779B1
}

// reindex rebuilds the table from the groups and their members.
func (l *Layer) reindex() {
	n := 0
	for _, g := range l.groups {
		if g.view != nil {
			n += len(g.members)
		}
	}
	size := 16
	for size < 2*n {
		size *= 2
	}
	x := &l.hits
	if cap(x.slots) >= size && cap(x.slots) <= 4*size {
		x.slots = x.slots[:size]
		clear(x.slots)
	} else {
		x.slots = make([]hitEntry, size)
	}
	mask := uint32(size - 1)
	for _, g := range l.groups {
		if g.view == nil {
			continue
		}
		for id, m := range g.members {
			i := hitHash(g.id, id) & mask
			for x.slots[i].g != nil {
				i = (i + 1) & mask
			}
			x.slots[i] = hitEntry{grp: g.id, peer: id, g: g, m: m}
		}
	}
}

// lookup returns the group (nil if unknown) and the member (nil if not
// one) for a packet from peer in grp.
func (l *Layer) lookup(grp event.GroupID, peer event.NodeID) (*group, *member) {
	if s := l.hits.slots; len(s) > 0 {
		mask := uint32(len(s) - 1)
		for i := hitHash(grp, peer) & mask; s[i].g != nil; i = (i + 1) & mask {
			if s[i].grp == grp && s[i].peer == peer {
				return s[i].g, s[i].m
			}
		}
	}
	g := l.groups[grp]
	if g == nil || g.view == nil {
		return g, nil
	}
	return g, g.members[peer]
}
