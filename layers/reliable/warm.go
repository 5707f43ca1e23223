package reliable

import (
	"unsafe"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/pairindex"
	"github.com/layercast/layercast/internal/prefetch"
	"github.com/layercast/layercast/stack"
)

var _ stack.Warmer = (*Layer)(nil)

// Warm implements stack.Warmer for what dataUp and digestUp read, a link
// of the chain a stage: the table's slot, the group and member (whose
// stream is in its own memory, member.recv), the word of the stream's
// receive window the packet most likely falls in (at or just past next).
// Nothing while the table is stale.
func (l *Layer) Warm(g event.GroupID, src event.NodeID, stage int) {
	if !l.stale {
		pairindex.Warm(&l.hits, g, src, stage)
	}
}

// Warm implements pairindex.Warmable.
func (e hitEntry) Warm(stage int) {
	switch {
	case e.m == nil:
	case stage == 0:
		// the group's first 64 bytes (a 224-byte object starts
		// anywhere in a line), the member and its stream's first fields
		// (next, the window)
		prefetch.Lines(unsafe.Pointer(e.g), 2)
		prefetch.Lines(unsafe.Pointer(e.m), 2)
	case stage == 1 && e.m.rs != nil:
		e.m.rs.got.Prefetch(e.m.rs.next)
	}
}
