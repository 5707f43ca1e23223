package reliable

import "github.com/layercast/layercast/event"

// The per-packet path (dataUp, digestUp) finds the (group, sender) state
// through a small direct-mapped cache rather than two map lookups
// (groups, then members): at thousands of simulated nodes every stack's
// maps are cold and each lookup is several cache misses (issue 9 item 11).
// An entry is valid only while the membership state it points into is
// unchanged: every change of a group's members (installView, dropGroup)
// moves the generation, which invalidates every entry at once.

// hitSlots is the size of the cache: a power of two, a few times the
// (group, sender) pairs a node usually has (4 groups of 8: 28).
const hitSlots = 64

type hitEntry struct {
	gen  uint32
	grp  event.GroupID
	peer event.NodeID
	g    *group
	m    *member
}

type hitIndex struct {
	gen   uint32 // entries of other generations are stale
	slots [hitSlots]hitEntry
}

func hitSlot(grp event.GroupID, peer event.NodeID) int {
	return int((uint32(grp)*0x85EBCA6B ^ uint32(peer)*0x9E3779B1) >> (32 - 6))
}

// invalidate forgets every entry (members or groups changed).
func (x *hitIndex) invalidate() {
	x.gen++
	if x.gen == 0 { // wrapped: old entries could look valid again
		x.slots = [hitSlots]hitEntry{}
		x.gen = 1
	}
}

// lookup returns the group (nil if unknown or viewless) and the member
// (nil if not one) for a packet from peer in grp.
func (l *Layer) lookup(grp event.GroupID, peer event.NodeID) (*group, *member) {
	e := &l.hits.slots[hitSlot(grp, peer)]
	if e.gen == l.hits.gen && e.grp == grp && e.peer == peer && e.g != nil {
		return e.g, e.m
	}
	g := l.groups[grp]
	if g == nil || g.view == nil {
		return g, nil
	}
	m := g.members[peer]
	if m != nil {
		*e = hitEntry{gen: l.hits.gen, grp: grp, peer: peer, g: g, m: m}
	}
	return g, m
}
