package reliable

import (
	"unsafe"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/prefetch"
	"github.com/layercast/layercast/stack"
)

var _ stack.Warmer = (*Layer)(nil)

// Warm implements stack.Warmer: the state dataUp and digestUp read for a
// packet of g from src, one link of the chain a stage (the table's slot,
// then the group and member, then the member's stream, then the word of
// its receive window the packet most likely falls in). It changes
// nothing, and does nothing while the table is stale.
func (l *Layer) Warm(g event.GroupID, src event.NodeID, stage int) {
	if l.stale {
		return
	}
	if stage == 0 {
		l.hits.Prefetch(g, src)
		return
	}
	e := l.hits.Get(g, src)
	if e == nil || e.m == nil {
		return
	}
	if stage == 1 {
		prefetch.Lines(unsafe.Pointer(e.g), 1)
		prefetch.Lines(unsafe.Pointer(e.m), 1)
		return
	}
	rs := e.m.rs
	if rs == nil {
		return
	}
	if stage == 2 {
		prefetch.Lines(unsafe.Pointer(rs), 1)
		return
	}
	rs.got.Prefetch(rs.next) // the next packet's number is most often at or just past next
}
