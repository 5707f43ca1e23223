package fifo

import (
	"unsafe"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/pairindex"
	"github.com/layercast/layercast/internal/prefetch"
	"github.com/layercast/layercast/stack"
)

// Warm implements pairindex.Warmable: the group and the sender.
func (e hitEntry) Warm(stage int) {
	if stage == 0 && e.s != nil {
		prefetch.Lines(unsafe.Pointer(e.g), 1)
		prefetch.Lines(unsafe.Pointer(e.s), 1)
	}
}

// Warm implements stack.Warmer for what dataUp reads: the table's slot,
// then the group and the sender. Nothing while the table is stale.
func (l *Layer) Warm(g event.GroupID, src event.NodeID, stage int) {
	if !l.stale {
		pairindex.Warm(&l.hits, g, src, stage)
	}
}

var _ stack.Warmer = (*Layer)(nil)
