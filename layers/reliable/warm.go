package reliable

import (
	"unsafe"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/prefetch"
	"github.com/layercast/layercast/layers/internal/pairindex"
	"github.com/layercast/layercast/stack"
)

var _ stack.Warmer = (*Layer)(nil)

// Warm implements stack.Warmer for what dataUp and digestUp read, a link
// of the chain a stage: the table's slot, the group and member (whose
// stream is in its own memory, member.recv), the word of the stream's
// receive window the packet most likely falls in (at or just past next);
// nothing of these while the table is stale. Beside them, the layer's
// own fields a packet reads beyond its first cache line.
func (l *Layer) Warm(g event.GroupID, src event.NodeID, stage int) {
	l.warmOwn(stage)
	if !l.stale && stage <= 2 {
		// hitEntry.Warm asks for nothing past its stage 1 (the table's
		// stage 2): no lookup for it
		pairindex.Warm(&l.hits, g, src, stage)
	}
}

// warmOwn is Warm's part for the layer's own fields.
func (l *Layer) warmOwn(stage int) {
	switch stage {
	case 0:
		// the layer's own fields every packet reads beyond its first
		// line (which the stack's Prefetch asks for): the window and
		// the counters' pointers
		prefetch.Lines(unsafe.Pointer(&l.cfg.Window), 1)
		prefetch.Lines(unsafe.Pointer(&l.c.Malformed), 1)
		prefetch.Lines(unsafe.Pointer(&l.c.Delivered), 1)
	case 1:
		prefetch.Lines(unsafe.Pointer(l.c.Delivered), 1)
	}
}

// Warm implements pairindex.Warmable.
func (e hitEntry) Warm(stage int) {
	switch {
	case e.m == nil:
	case stage == 0:
		// the group's first 64 bytes (a 224-byte object starts
		// anywhere in a line), the member and its stream's fields a
		// data packet reads (next to the window and the gap records:
		// the member's first 128 bytes, three lines when the member
		// starts mid-line)
		prefetch.Lines(unsafe.Pointer(e.g), 2)
		prefetch.Lines(unsafe.Pointer(e.m), 3)
	case stage == 1 && e.m.rs != nil:
		e.m.rs.got.Prefetch(e.m.rs.next)
	}
}

var _ stack.ControlWarmer = (*Layer)(nil)

// WarmControl implements stack.ControlWarmer: a control packet of a group
// is mostly a member's digest, which reads, besides what Warm asks for,
// the group's members by rank and every one of them with its stream
// (digestUp): the ranked list's header, then the list, then the members,
// a link a stage. Nothing of these while the table is stale.
func (l *Layer) WarmControl(g event.GroupID, src event.NodeID, stage int) {
	l.warmOwn(stage)
	if l.stale {
		return
	}
	if stage == 0 {
		l.hits.Prefetch(g, src)
		return
	}
	// one lookup for Warm's part (pairindex.Warm) and this one's
	e := l.hits.Get(g, src)
	if e == nil {
		return
	}
	e.Warm(stage - 1)
	if e.m == nil {
		return
	}
	switch stage {
	case 1:
		prefetch.Lines(unsafe.Pointer(&e.g.ranked), 1)
	case 2:
		prefetch.Lines(unsafe.Pointer(unsafe.SliceData(e.g.ranked)), 1)
	default:
		for _, m := range e.g.ranked {
			if m != nil {
				prefetch.Lines(unsafe.Pointer(m), 2)
			}
		}
	}
}

var _ stack.CastWarmer = (*Layer)(nil)

// WarmCast implements stack.CastWarmer for what castDown and sendData read
// of our own stream: the table's slot for (g, ourselves), then the group's
// first lines (the view, our stream's ends, the send buffer's and the
// pending queue's fields), with the layer's own fields beside them;
// nothing of the group while the table is stale.
func (l *Layer) WarmCast(g event.GroupID, stage int) {
	l.warmOwn(stage)
	if l.stale {
		return
	}
	switch stage {
	case 0:
		l.hits.Prefetch(g, l.self)
	case 1:
		if e := l.hits.Get(g, l.self); e != nil && e.g != nil {
			prefetch.Lines(unsafe.Pointer(e.g), 4)
		}
	}
}

var _ stack.StagedWarmer = (*Layer)(nil)

// WarmDepth implements stack.StagedWarmer: Warm asks for something at
// stages 0 to 2 (its table's stage 2 is hitEntry.Warm's last, 1),
// WarmControl at every stage (the ranked members at the last).
func (l *Layer) WarmDepth() (data, control int) { return 3, stack.WarmStages }
