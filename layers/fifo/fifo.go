// Package fifo delivers each sender's casts to a group in the order they were
// sent, over a layer that delivers every message exactly once but in any
// order, each stamped with its sequence number in its sender's stream and
// where that stream starts for this node (compose.Sequenced: reliable).
//
// fifo adds nothing on the wire: the join floor (where a sender's stream
// starts for a receiver that joined, issue 8's rejoin contract) is kept by
// the layer below, which delivers nothing before it and says where it is
// (event.Event Seq and Start). Receivers hold early messages in a bounded
// reorder buffer until the gap before them is filled. Views: the state of a
// sender that leaves, or that a view lists in Joined, is dropped with
// whatever it still held (the layer below starts its stream afresh in the
// same view); a node that finds itself in Joined, or gets a view without
// itself, drops the group.
//
// The reorder buffer is bounded per sender by max_reorder messages and
// max_reorder_bytes; on overflow the gap at the head of the stream is given
// up (reported with event.Lost) rather than the newcomer dropped, because
// the layer below delivers each message once and the stream would otherwise
// wait forever.
//
// Casts without a sequence number (control casts) and point-to-point sends
// pass through (reliable already delivers sends in order per peer).
package fifo

import (
	"errors"
	"slices"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/seqwin"
	"github.com/layercast/layercast/layers/internal/pairindex"
	"github.com/layercast/layercast/stack"
)

var errSeq = errors.New("fifo: inconsistent sequence numbers from the layer below")

// Layer is the fifo layer of one node.
type Layer struct {
	stack.Base
	// the per-packet path's table first, beside Ctx: the cache line a
	// simulator prefetches (stack.Stack.Prefetch) before each step, and
	// Warm reads a few steps before every packet
	hits  pairindex.Table[hitEntry] // (group, sender) -> state on the per-packet path
	stale bool                      // hits needs rebuilding before its next use (see index.go)

	maxReorder      int
	maxReorderBytes int64
	self            event.NodeID
	groups          map[event.GroupID]*group
	held            int64 // bytes in every reorder buffer

	c counters
}

type group struct {
	id      event.GroupID
	view    *event.ViewInfo
	tag     uint32
	senders map[event.NodeID]*sender // others' streams, from their first message
}

// sender is one member's stream at this receiver.
type sender struct {
	next  uint32
	ring  seqwin.Slots[*event.Message] // offset i holds sequence number next+i
	bytes int64                        // held in ring
	// gaveUp: messages from skipFrom on were given up on overflow (those
	// arriving afterwards, below next, are counted late)
	gaveUp   bool
	skipFrom uint32
}

// New returns a fifo layer holding at most maxReorder messages and
// maxReorderBytes bytes per sender (at least one message).
func New(maxReorder int, maxReorderBytes int64) *Layer {
	return &Layer{maxReorder: max(1, maxReorder), maxReorderBytes: maxReorderBytes, groups: map[event.GroupID]*group{}}
}

var _ stack.Layer = (*Layer)(nil)

// Init implements stack.Layer.
func (l *Layer) Init(ctx *stack.Context) error {
	l.Ctx, l.self = ctx, ctx.Self()
	ctx.BindCounters(&l.c)
	return nil
}

// Up implements stack.Layer.
func (l *Layer) Up(ev *event.Event) {
	switch {
	case ev.Kind == event.Cast && ev.Seq != 0:
		l.dataUp(ev)
	case ev.Kind == event.View:
		l.installView(ev.View)
		l.Ctx.Up(ev)
	default:
		l.Ctx.Up(ev)
	}
}

func (l *Layer) groupFor(id event.GroupID) *group {
	g := l.groups[id]
	if g == nil {
		g = &group{id: id, senders: map[event.NodeID]*sender{}}
		l.groups[id] = g
	}
	return g
}

// installView drops departed and re-admitted senders with what they still
// held: the layer below starts their streams afresh in this view.
func (l *Layer) installView(v *event.ViewInfo) {
	if v == nil {
		return
	}
	g := l.groups[v.Group]
	if !v.Has(l.self) {
		// we left or were removed (R1): drop everything for the group
		if g != nil {
			l.dropGroup(g)
		}
		return
	}
	tag := uint32(v.ID)
	if g != nil && g.view != nil && tag <= g.tag {
		return
	}
	if g != nil && g.view != nil && slices.Contains(v.Joined, l.self) {
		// re-admitted without having seen our removal (R3): start over
		// as a first-time joiner
		l.dropGroup(g)
	}
	g = l.groupFor(v.Group)
	for id, s := range g.senders {
		if !v.Has(id) || slices.Contains(v.Joined, id) {
			l.release(s)
			delete(g.senders, id)
		}
	}
	g.view, g.tag = v, tag
	l.stale = true // members and senders changed
}

// dropGroup releases every sender's held messages and forgets the group.
func (l *Layer) dropGroup(g *group) {
	for id, s := range g.senders {
		l.release(s)
		delete(g.senders, id)
	}
	delete(l.groups, g.id)
	l.stale = true
}

// release drops a departed sender's held messages.
func (l *Layer) release(s *sender) {
	s.ring.Clear(func(m *event.Message) {
		l.hold(-event.HeldCost(m.Len()))
		m.Release()
		l.c.Released.Inc()
	})
	s.bytes = 0
}

// What a held message counts against max_reorder_bytes is event.HeldCost
// of its length, and a held message is kept compact (event.Message.Compact).
func (l *Layer) hold(d int64) {
	l.held += d
	l.c.BufBytes.Set(l.held)
	l.c.Peak.Max(l.held)
}

// dataUp orders a sequenced cast: the layer below delivers each message
// of a sender's stream once, from the stream's start for us on.
func (l *Layer) dataUp(ev *event.Event) {
	m, seq := ev.Msg, ev.Seq
	if ev.Start == 0 || ev.Start > seq {
		l.c.Malformed.Inc()
		if l.Ctx.Logging() {
			l.Ctx.Logf("dropping a cast from %v: %v (seq %d, start %d)", ev.Peer, errSeq, seq, ev.Start)
		}
		m.Release()
		return
	}
	e := l.lookup(ev.Group, ev.Peer)
	if e == nil {
		l.c.NonMember.Inc()
		m.Release()
		return
	}
	s := e.s
	if s == nil {
		s = &sender{next: ev.Start, ring: seqwin.Slots[*event.Message]{Max: l.maxReorder}}
		e.g.senders[ev.Peer] = s
		e.s = s
	}
	l.accept(e.g, ev.Peer, s, seq, m)
}

// accept delivers m (sequence number seq) if it is next, with whatever it
// unblocks, or holds it. When holding it would pass max_reorder messages or
// max_reorder_bytes, the gap at the head of the stream is given up (the
// layer below delivers each message once, so dropping the newcomer instead
// would leave a hole the stream waits at forever).
func (l *Layer) accept(g *group, from event.NodeID, s *sender, seq uint32, m *event.Message) {
	if seq < s.next {
		// before our start, or given up on overflow and arriving late
		if s.gaveUp && seq >= s.skipFrom {
			l.c.Late.Inc()
		}
		m.Release()
		return
	}
	if seq != s.next {
		l.makeRoom(g, from, s, seq, event.HeldCost(m.Len()))
	}
	if seq == s.next {
		l.deliver(g, from, m)
		s.next++
		if s.ring.Len() > 0 {
			s.ring.Advance() // offset 0 was empty: seq was missing
			l.drain(g, from, s)
		}
		return
	}
	m = m.Compact()
	if !s.ring.Put(int(seq-s.next), m) { // makeRoom keeps seq within max_reorder: a duplicate
		m.Release()
		return
	}
	s.bytes += event.HeldCost(m.Len())
	l.c.Reordered.Inc()
	l.hold(event.HeldCost(m.Len()))
}

// drain delivers the held messages that follow next without a gap.
func (l *Layer) drain(g *group, from event.NodeID, s *sender) {
	for s.ring.Len() > 0 && s.ring.Get(0) != nil {
		warmHeld(s)
		d := s.ring.Advance()
		s.next++
		s.bytes -= event.HeldCost(d.Len())
		l.hold(-event.HeldCost(d.Len()))
		l.deliver(g, from, d)
	}
}

// makeRoom gives up gaps at the head of the stream until a message of size
// bytes with sequence number seq fits the reorder buffer: the missing
// messages are reported lost (event.Lost, counters overflow and skipped),
// the held ones after them delivered. A lone message larger than
// max_reorder_bytes is still held.
func (l *Layer) makeRoom(g *group, from event.NodeID, s *sender, seq uint32, size int64) {
	for seq != s.next {
		off := int64(seq - s.next)
		if off < int64(l.maxReorder) && (s.ring.Len() == 0 || s.bytes+size <= l.maxReorderBytes) {
			return
		}
		var to uint32 // the new next
		if s.ring.Len() == 0 {
			to = seq - uint32(l.maxReorder-1)
		} else {
			k := s.ring.FirstHeld() // at least 1: next is missing
			to = s.next + uint32(k)
			s.ring.Skip(k)
		}
		l.c.Overflow.Inc()
		l.c.Skipped.Add(int64(to - s.next))
		if !s.gaveUp {
			s.gaveUp, s.skipFrom = true, s.next
		}
		lost := &event.LostRange{First: s.next, End: to, Bounded: true}
		s.next = to
		l.Ctx.Up(&event.Event{Kind: event.Lost, Group: g.id, Peer: from, Lost: lost})
		l.drain(g, from, s)
	}
}

func (l *Layer) deliver(g *group, from event.NodeID, m *event.Message) {
	l.c.Delivered.Inc()
	l.Ctx.Up(&event.Event{Kind: event.Cast, Group: g.id, Peer: from, Msg: m})
}

// Close releases every held message.
func (l *Layer) Close() {
	for _, g := range l.groups {
		for _, s := range g.senders {
			l.release(s)
		}
	}
}
