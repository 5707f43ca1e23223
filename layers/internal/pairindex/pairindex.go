// Package pairindex is an open-addressing table from (group, node) pairs to
// a layer's per-pair state, for the per-packet path of per-group layers.
//
// At thousands of simulated nodes every stack's maps are cold and a lookup
// in groups, then members, costs several cache misses (issue 9 item 11);
// one probe of this table usually costs one. A layer rebuilds the table
// whenever its (group, member) pairs change (a view installed, a group
// dropped), which is rare next to packets, and looks up what the table does
// not hold in its maps as before.
package pairindex

import (
	"unsafe"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/prefetch"
)

type slot[V any] struct {
	grp  event.GroupID
	peer event.NodeID
	used bool
	v    V
}

// Table maps (group, node) pairs to values of V. The zero Table is empty
// and ready to use. It is not safe for concurrent use.
type Table[V any] struct {
	slots []slot[V]
}

func hash(grp event.GroupID, peer event.NodeID) uint32 {
	return uint32(grp)*0x85EBCA6B ^ uint32(peer)*0x9E3779B1
}

// Reset empties the table and sizes it for n pairs (at most half full),
// reusing its slots when their number fits.
func (t *Table[V]) Reset(n int) {
	size := 16
	for size < 2*n {
		size *= 2
	}
	if cap(t.slots) >= size && cap(t.slots) <= 4*size {
		t.slots = t.slots[:size]
		clear(t.slots)
	} else {
		t.slots = make([]slot[V], size)
	}
}

// Put adds the pair with its value. Each pair is put at most once between
// two Resets, and at most the n pairs Reset was sized for.
func (t *Table[V]) Put(grp event.GroupID, peer event.NodeID, v V) {
	mask := uint32(len(t.slots) - 1)
	i := hash(grp, peer) & mask
	for t.slots[i].used {
		i = (i + 1) & mask
	}
	t.slots[i] = slot[V]{grp: grp, peer: peer, used: true, v: v}
}

// Get returns the pair's value, which the caller may update in place, or
// nil if the table does not hold the pair.
func (t *Table[V]) Get(grp event.GroupID, peer event.NodeID) *V {
	s := t.slots
	if len(s) == 0 {
		return nil
	}
	mask := uint32(len(s) - 1)
	for i := hash(grp, peer) & mask; s[i].used; i = (i + 1) & mask {
		if s[i].grp == grp && s[i].peer == peer {
			return &s[i].v
		}
	}
	return nil
}

// Prefetch asks the CPU to start loading the slot where Get(grp, peer)
// starts looking, for a caller that knows the lookup is coming (a
// stack.Warmer). It changes nothing.
func (t *Table[V]) Prefetch(grp event.GroupID, peer event.NodeID) {
	s := t.slots
	if len(s) == 0 {
		return
	}
	prefetch.Lines(unsafe.Pointer(&s[hash(grp, peer)&uint32(len(s)-1)]), 1)
}

// Warmable is per-pair state that can ask the CPU to load the memory it
// points to, in stages (Warm).
type Warmable interface {
	Warm(stage int)
}

// Warm is one stage of warming t's state for a coming packet of grp from
// peer, for a layer's stack.Warmer: stage 0 asks for the pair's slot, and
// each later stage hands the value there (loaded by then) its own stage,
// one less; a pair the table does not hold warms nothing. It changes
// nothing.
func Warm[V Warmable](t *Table[V], grp event.GroupID, peer event.NodeID, stage int) {
	if stage == 0 {
		t.Prefetch(grp, peer)
		return
	}
	if v := t.Get(grp, peer); v != nil {
		(*v).Warm(stage - 1)
	}
}
