package fifo

import "github.com/layercast/layercast/event"

// dataUp finds the (group, sender) state through a small direct-mapped
// cache rather than three map lookups (groups, floors, senders): at
// thousands of simulated nodes every stack's maps are cold and each lookup
// is several cache misses (issue 9 item 11). An entry is valid only while
// the state it copies or points into is unchanged: installView and
// dropGroup (the only places that change floors, drop senders or forget
// groups) move the generation, which invalidates every entry at once.

// hitSlots is the size of the cache: a power of two, a few times the
// (group, sender) pairs a node usually has (4 groups of 8: 28).
const hitSlots = 64

type hitEntry struct {
	gen  uint32
	grp  event.GroupID
	peer event.NodeID
	f    floor
	g    *group
	s    *sender // nil until the sender's first packet
}

type hitIndex struct {
	gen   uint32 // entries of other generations are stale
	slots [hitSlots]hitEntry
}

func hitSlot(grp event.GroupID, peer event.NodeID) int {
	return int((uint32(grp)*0x85EBCA6B ^ uint32(peer)*0x9E3779B1) >> (32 - 6))
}

// invalidate forgets every entry (floors, senders or groups changed).
func (x *hitIndex) invalidate() {
	x.gen++
	if x.gen == 0 { // wrapped: old entries could look valid again
		x.slots = [hitSlots]hitEntry{}
		x.gen = 1
	}
}

// lookup returns the cache entry for a packet from peer in grp, filling it
// from the maps; nil if the group has no view or peer is no member.
func (l *Layer) lookup(grp event.GroupID, peer event.NodeID) *hitEntry {
	e := &l.hits.slots[hitSlot(grp, peer)]
	if e.gen == l.hits.gen && e.grp == grp && e.peer == peer && e.g != nil {
		return e
	}
	g := l.groups[grp]
	if g == nil || g.view == nil {
		return nil
	}
	f, ok := g.floors[peer]
	if !ok {
		return nil
	}
	*e = hitEntry{gen: l.hits.gen, grp: grp, peer: peer, f: f, g: g, s: g.senders[peer]}
	return e
}
