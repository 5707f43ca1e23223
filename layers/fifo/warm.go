package fifo

import (
	"unsafe"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/prefetch"
	"github.com/layercast/layercast/layers/internal/pairindex"
	"github.com/layercast/layercast/stack"
)

// Warm implements pairindex.Warmable: the group and the sender (an
// 80-byte object: its next and its reorder buffer's length can be a line
// apart).
func (e hitEntry) Warm(stage int) {
	if stage == 0 && e.s != nil {
		prefetch.Lines(unsafe.Pointer(e.g), 1)
		prefetch.Lines(unsafe.Pointer(e.s), 2)
	}
}

// Warm implements stack.Warmer for what dataUp reads: the table's slot,
// then the group and the sender; nothing of these while the table is
// stale. Beside them, the delivered counter every packet counts (its
// pointer, then the counter).
func (l *Layer) Warm(g event.GroupID, src event.NodeID, stage int) {
	switch stage {
	case 0:
		prefetch.Lines(unsafe.Pointer(&l.c.Delivered), 1)
	case 1:
		prefetch.Lines(unsafe.Pointer(l.c.Delivered), 1)
	}
	if !l.stale && stage <= 1 {
		// hitEntry.Warm asks for nothing past its stage 0 (the table's
		// stage 1): no lookup for it
		pairindex.Warm(&l.hits, g, src, stage)
	}
}

var _ stack.Warmer = (*Layer)(nil)

// WarmDepth implements stack.StagedWarmer: Warm asks for something at
// stages 0 and 1 only.
func (l *Layer) WarmDepth() (data, control int) { return 2, 0 }

var _ stack.StagedWarmer = (*Layer)(nil)

// How far ahead of the message drain delivers it asks for a held
// message's Message (warmAhead) and, that having come, for the start of
// its bytes (warmBytesAhead): what drain, the layers above and the
// application read first.
const (
	warmAhead      = 8
	warmBytesAhead = 4
)

// warmHeld asks the CPU for the held messages drain will deliver next.
// Behind a gap fifo holds messages for a repair's round trip (at 1% loss
// over UDP almost every message, thousands at once), and by the time the
// gap is filled their memory is cold: each delivery waited for main memory
// when it read the message (its length), then the layers above and the
// application its bytes, one message after another (a third of what 1%
// loss added to a receiver's CPU per message). Asked a few deliveries
// ahead, those loads overlap. It changes nothing a run can observe.
func warmHeld(s *sender) {
	if m := s.ring.Get(warmAhead); m != nil {
		prefetch.Lines(unsafe.Pointer(m), 3)
	}
	if m := s.ring.Get(warmBytesAhead); m != nil {
		prefetch.Lines(unsafe.Pointer(unsafe.SliceData(m.Bytes())), 2)
	}
}
