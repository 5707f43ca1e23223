package fifo

import (
	"unsafe"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/prefetch"
	"github.com/layercast/layercast/stack"
)

var _ stack.Warmer = (*Layer)(nil)

// Warm implements stack.Warmer: the state dataUp reads for a cast of g from
// src (the table's slot, then the group and sender, then the sender's
// ring). It changes nothing, and does nothing while the table is stale.
func (l *Layer) Warm(g event.GroupID, src event.NodeID, stage int) {
	if l.stale {
		return
	}
	if stage == 0 {
		l.hits.Prefetch(g, src)
		return
	}
	e := l.hits.Get(g, src)
	if e == nil || e.s == nil {
		return
	}
	if stage == 1 {
		prefetch.Lines(unsafe.Pointer(e.g), 1)
		prefetch.Lines(unsafe.Pointer(e.s), 1)
	}
}
