package fifo

import "github.com/layercast/layercast/event"

// dataUp finds the (group, sender) state through an open-addressing table
// of every (group, member) pair rather than three map lookups (groups,
// floors, senders): at thousands of simulated nodes every stack's maps are
// cold and each lookup costs several cache misses (issue 9 item 11); one
// probe of this table usually costs one. The table is rebuilt whenever
// floors or senders are dropped or groups forgotten (installView,
// dropGroup), which is rare next to packets; dataUp fills in a sender it
// creates. What it does not hold (a viewless group, a non-member) is
// looked up in the maps as before.

type hitEntry struct {
	grp  event.GroupID
	peer event.NodeID
	f    floor
	g    *group  // nil: empty slot
	s    *sender // nil until the sender's first packet
}

// hitIndex is the table: a power of two of slots, at most half full.
type hitIndex struct {
	slots []hitEntry
}

func hitHash(grp event.GroupID, peer event.NodeID) uint32 {
	return uint32(grp)*0x85EBCA6B ^ uint32(peer)*0x9E3779B1
}

// reindex rebuilds the table from the groups' floors (one per member).
func (l *Layer) reindex() {
	n := 0
	for _, g := range l.groups {
		if g.view != nil {
			n += len(g.floors)
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
		for id, f := range g.floors {
			i := hitHash(g.id, id) & mask
			for x.slots[i].g != nil {
				i = (i + 1) & mask
			}
			x.slots[i] = hitEntry{grp: g.id, peer: id, f: f, g: g, s: g.senders[id]}
		}
	}
}

// lookup returns the table's entry for a packet from peer in grp, or nil
// if the group has no view or peer is no member.
func (l *Layer) lookup(grp event.GroupID, peer event.NodeID) *hitEntry {
	s := l.hits.slots
	if len(s) == 0 {
		return nil
	}
	mask := uint32(len(s) - 1)
	for i := hitHash(grp, peer) & mask; s[i].g != nil; i = (i + 1) & mask {
		if s[i].grp == grp && s[i].peer == peer {
			return &s[i]
		}
	}
	return nil
}
