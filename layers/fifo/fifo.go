// Package fifo delivers each sender's casts to a group in the order they were
// sent, over a reliable layer that delivers every message exactly once but
// in any order.
//
// Each cast carries a per-(group, sender) sequence number; receivers hold
// early messages in a bounded reorder buffer until the gap before them is
// filled. Views: the state of a sender that leaves is dropped with whatever
// it still held; a sender's stream starts, at a receiver that joins, where
// the sender stood when it installed the receiver's first view. The data
// header says where that is (base, base view) whenever the sender has cast
// nothing between the receiver's joining and base; otherwise the receiver
// asks the sender once with a point-to-point control message (made reliable
// by the layer below), holding the sender's messages meanwhile.
//
// A member listed in a view's Joined starts afresh (issue 8's rejoin
// contract): its stream and our floor for it are reset, and its casts tagged
// with an earlier view are not owed. A node that finds itself in Joined, or
// gets a view without itself, drops the group and starts as a first-time
// joiner. Floor requests and answers name the view they are about, so
// neither side uses a floor of a relationship that ended.
//
// The reorder buffer is bounded per sender by max_reorder messages and
// max_reorder_bytes; on overflow the gap at the head of the stream is given
// up (reported with event.Lost) rather than the newcomer dropped, because
// the layer below delivers each message once and the stream would otherwise
// wait forever.
//
// Control casts and point-to-point sends pass through unnumbered (reliable
// already delivers sends in order per peer).
package fifo

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/pairindex"
	"github.com/layercast/layercast/internal/seqwin"
	"github.com/layercast/layercast/stack"
)

// Header types, the first byte of every message fifo passes down. Wire
// values, append-only.
const (
	// tData is an ordered cast:
	//
	//	byte 0      tData
	//	bytes 1-4   view tag of the sender's view when it cast
	//	bytes 5-8   base view: the sender cast nothing from its install up to base
	//	bytes 9-12  base: the sender's first sequence number since base view
	//	bytes 13-16 sequence number (per group and sender, from 1)
	tData byte = 1
	// tPass is anything fifo does not order (control casts, sends).
	tPass byte = 2
	// tFloorReq asks a sender where its stream starts for the asker
	// (bytes 1-4: group, bytes 5-8: the view tag since which the asker is
	// in the group with the sender).
	tFloorReq byte = 3
	// tFloor answers it (bytes 1-4: group, bytes 5-8: that view tag, bytes
	// 9-12: first sequence number).
	tFloor byte = 4
)

const (
	floorReqSize = 9
	floorSize    = 13
)

const headerSize = 17

var errHeader = errors.New("fifo: malformed header")

func init() {
	compose.Register(compose.LayerInfo{
		Name: "fifo",
		Summary: "Delivers each sender's messages to a group in the order they were sent. Casts carry a per-sender " +
			"sequence number and receivers hold early arrivals in a bounded reorder buffer until the reliable layer " +
			"below fills the gap; a joining member starts each sender's stream where the sender stood when it joined.",
		Params: []compose.Param{
			{Name: "max_reorder", Type: compose.Int, Default: "4096", Doc: "messages held per sender while waiting for an earlier one", Min: 1, Max: 1 << 24},
			{Name: "max_reorder_bytes", Type: compose.Size, Default: "4MB", Doc: "bytes held per sender while waiting for an earlier one, each message counted with its buffer (at least 1.5 KB and headers; a lone larger message is still held). " +
				"On overflow of either bound the missing messages at the head of the stream are given up and reported lost (counters overflow, skipped; " +
				"late counts those that arrive afterwards) and the held ones delivered in order: the stream never waits for a message it dropped", Min: 1, Max: 1 << 40},
		},
		Needs: []compose.Property{compose.Reliable},
		Gives: []compose.Property{compose.FIFO},
		Counters: []compose.CounterDoc{
			{Name: "delivered", Doc: "messages delivered up in order"},
			{Name: "reordered", Doc: "messages that arrived early and were held for the gap before them"},
			{Name: "peak_buffer_bytes", Kind: compose.Peak, Role: compose.BufferPeakRole, Doc: "most bytes held out of order at once"},
			{Name: "buffer_bytes", Kind: compose.Gauge, Doc: "bytes held out of order at the end"},
			{Name: "released", Doc: "held messages let go when their sender left the view"},
			{Name: "malformed", Doc: "packets whose fifo header did not decode"},
			{Name: "before_join", Doc: "messages from before this node joined, not delivered"},
			{Name: "overflow", Doc: "times a stream's reorder bounds overflowed and its head gap was given up"},
			{Name: "non_member", Doc: "messages from senders outside the view"},
			{Name: "floor_requests", Doc: "requests for a sender's join floor"},
			{Name: "skipped", Doc: "messages given up on overflow (reported lost)"},
			{Name: "late", Doc: "messages that arrived after they were given up"},
		},
		New: func(p compose.Params) (stack.Layer, error) {
			return New(p.Int("max_reorder"), int64(p.Int("max_reorder_bytes"))), nil
		},
	})
}

// Layer is the fifo layer of one node.
type Layer struct {
	stack.Base
	maxReorder      int
	maxReorderBytes int64
	self            event.NodeID
	groups          map[event.GroupID]*group
	held            int64 // bytes in every reorder buffer

	delivered, reordered, peak, bufBytes, dropped, malformed, beforeJoin, overflow, nonMember, floorReqs *stack.Counter
	skipped, late                                                                                        *stack.Counter

	hits pairindex.Table[hitEntry] // (group, sender) -> state on the per-packet path
}

type group struct {
	id   event.GroupID
	view *event.ViewInfo
	tag  uint32
	// own stream
	next, base, baseView uint32
	floors               map[event.NodeID]floor // where our stream starts for each member
	// others' streams
	senders map[event.NodeID]*sender
	// floor requests for a view we have not installed yet, answered when
	// we do (at most one per member)
	asked map[event.NodeID]uint32
}

// floor is where our stream starts for a member, and the view tag since
// which we are in the group together (our first view, or the view that
// listed it as joined).
type floor struct {
	seq, since uint32
}

// sender is one member's stream at this receiver.
type sender struct {
	known bool // next is known (false: waiting for a floor answer)
	next  uint32
	ring  seqwin.Slots[*event.Message] // offset i holds sequence number next+i
	bytes int64                        // held in ring and early
	early []*event.Message             // held before next was known
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

// HeaderSize implements stack.HeaderSizer.
func (l *Layer) HeaderSize() int { return headerSize }

// Init implements stack.Layer.
func (l *Layer) Init(ctx *stack.Context) error {
	l.Ctx, l.self = ctx, ctx.Self()
	l.delivered = ctx.Counter("delivered")
	l.reordered = ctx.Counter("reordered")
	l.peak = ctx.Counter("peak_buffer_bytes")
	l.bufBytes = ctx.Counter("buffer_bytes")
	l.dropped = ctx.Counter("released")
	l.malformed = ctx.Counter("malformed")
	l.beforeJoin = ctx.Counter("before_join")
	l.overflow = ctx.Counter("overflow")
	l.nonMember = ctx.Counter("non_member")
	l.floorReqs = ctx.Counter("floor_requests")
	l.skipped = ctx.Counter("skipped")
	l.late = ctx.Counter("late")
	return nil
}

// Down implements stack.Layer.
func (l *Layer) Down(ev *event.Event) {
	switch {
	case ev.Kind == event.Cast && !ev.Control:
		g := l.groupFor(ev.Group)
		seq := g.next
		g.next++
		h := ev.Msg.Prepend(headerSize)
		h[0] = tData
		binary.BigEndian.PutUint32(h[1:], g.tag)
		binary.BigEndian.PutUint32(h[5:], g.baseView)
		binary.BigEndian.PutUint32(h[9:], g.base)
		binary.BigEndian.PutUint32(h[13:], seq)
		l.Ctx.Down(ev)
	case ev.Kind == event.Cast || ev.Kind == event.Send:
		ev.Msg.Prepend(1)[0] = tPass
		l.Ctx.Down(ev)
	default:
		l.Ctx.Down(ev)
	}
}

// Up implements stack.Layer.
func (l *Layer) Up(ev *event.Event) {
	switch ev.Kind {
	case event.Cast, event.Send:
		b, err := ev.Msg.Peek(1)
		if err != nil {
			l.bad(ev, err)
			return
		}
		switch {
		case b[0] == tData && ev.Kind == event.Cast:
			l.dataUp(ev)
		case b[0] == tPass:
			_, _ = ev.Msg.Consume(1)
			l.Ctx.Up(ev)
		case b[0] == tFloorReq && ev.Kind == event.Send:
			l.floorReqUp(ev)
		case b[0] == tFloor && ev.Kind == event.Send:
			l.floorUp(ev)
		default:
			l.bad(ev, fmt.Errorf("%w: type %d on a %v", errHeader, b[0], ev.Kind))
		}
	case event.View:
		l.installView(ev.View)
		l.Ctx.Up(ev)
	default:
		l.Ctx.Up(ev)
	}
}

func (l *Layer) bad(ev *event.Event, err error) {
	l.malformed.Inc()
	if l.Ctx.Logging() {
		l.Ctx.Logf("dropping %v from %v: %v", ev.Kind, ev.Peer, err)
	}
	ev.Msg.Release()
}

func (l *Layer) groupFor(id event.GroupID) *group {
	g := l.groups[id]
	if g == nil {
		g = &group{id: id, next: 1, base: 1, floors: map[event.NodeID]floor{}, senders: map[event.NodeID]*sender{}}
		l.groups[id] = g
	}
	return g
}

// installView drops departed senders (and what they still held), notes
// floors for joined members, and moves our base if we cast since it last
// moved.
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
		// re-admitted without having seen our removal (R3): start over as
		// a first-time joiner
		l.dropGroup(g)
	}
	g = l.groupFor(v.Group)
	if g.next != g.base {
		g.base, g.baseView = g.next, tag
	}
	for id, s := range g.senders {
		if !v.Has(id) || slices.Contains(v.Joined, id) {
			l.release(s)
			delete(g.senders, id)
		}
	}
	for id := range g.floors {
		if !v.Has(id) || slices.Contains(v.Joined, id) {
			delete(g.floors, id)
		}
	}
	for _, id := range v.Members {
		if _, ok := g.floors[id]; !ok && id != l.self {
			g.floors[id] = floor{seq: g.next, since: tag}
		}
	}
	g.view, g.tag = v, tag
	l.reindex() // floors and senders changed
	for id, t := range g.asked {
		if t <= tag {
			delete(g.asked, id)
			l.answerFloor(g, id, t)
		}
	}
	// an answer naming a view we had not installed was dropped: ask again
	// (in id order: runs repeat exactly)
	for _, id := range slices.Sorted(maps.Keys(g.senders)) {
		if !g.senders[id].known {
			l.askFloor(g, id, g.floors[id].since)
		}
	}
}

// dropGroup releases every sender's held messages and forgets the group.
func (l *Layer) dropGroup(g *group) {
	for id, s := range g.senders {
		l.release(s)
		delete(g.senders, id)
	}
	delete(l.groups, g.id)
	l.reindex()
}

// release drops a departed sender's held messages.
func (l *Layer) release(s *sender) {
	s.ring.Clear(func(m *event.Message) {
		l.hold(-event.HeldCost(m.Len()))
		m.Release()
		l.dropped.Inc()
	})
	for _, m := range s.early {
		l.hold(-event.HeldCost(m.Len()))
		m.Release()
		l.dropped.Inc()
	}
	s.early = nil
	s.bytes = 0
}

// What a held message counts against max_reorder_bytes is event.HeldCost
// of its length, and a held message is kept compact (event.Message.Compact).
func (l *Layer) hold(d int64) {
	l.held += d
	l.bufBytes.Set(l.held)
	l.peak.Max(l.held)
}

func (l *Layer) dataUp(ev *event.Event) {
	m := ev.Msg
	h, err := m.Peek(headerSize)
	if err != nil {
		l.bad(ev, fmt.Errorf("%w: %d bytes", errHeader, m.Len()))
		return
	}
	tag, baseView := binary.BigEndian.Uint32(h[1:]), binary.BigEndian.Uint32(h[5:])
	base, seq := binary.BigEndian.Uint32(h[9:]), binary.BigEndian.Uint32(h[13:])
	if seq == 0 || base == 0 || base > seq || baseView > tag {
		l.bad(ev, fmt.Errorf("%w: seq %d base %d", errHeader, seq, base))
		return
	}
	e := l.lookup(ev.Group, ev.Peer)
	if e == nil {
		l.nonMember.Inc()
		m.Release()
		return
	}
	g, f := e.g, e.f
	if tag < f.since {
		// cast before we were in the group together: not owed to us
		l.beforeJoin.Inc()
		m.Release()
		return
	}
	s := e.s
	if s == nil {
		s = &sender{ring: seqwin.Slots[*event.Message]{Max: l.maxReorder}}
		g.senders[ev.Peer] = s
		e.s = s
		if baseView <= f.since {
			// it cast nothing between our start and base
			s.known, s.next = true, base
		} else {
			l.askFloor(g, ev.Peer, f.since)
		}
	}
	_, _ = m.Consume(headerSize)
	if !s.known {
		if len(s.early) < l.maxReorder && (len(s.early) == 0 || s.bytes+event.HeldCost(m.Len()) <= l.maxReorderBytes) {
			m.Restore(headerSize) // earlySeq reads it again
			m = m.Compact()
			_, _ = m.Consume(headerSize)
			s.early = append(s.early, m)
			s.bytes += event.HeldCost(m.Len())
			l.hold(event.HeldCost(m.Len()))
			return
		}
		// no room to wait for the floor any longer: start the stream at
		// the lowest sequence number held (every message here was cast
		// after we were in the group together, so none is delivered
		// twice); what comes below it is reported lost
		lowest := seq
		for _, e := range s.early {
			lowest = min(lowest, earlySeq(e))
		}
		l.overflow.Inc()
		l.Ctx.Up(&event.Event{Kind: event.Lost, Group: g.id, Peer: ev.Peer, Lost: &event.LostRange{End: lowest}})
		s.gaveUp, s.skipFrom = true, 0 // anything below lowest arriving later is late
		l.place(g, ev.Peer, s, lowest)
	}
	l.accept(g, ev.Peer, s, seq, m)
}

// earlySeq is the sequence number of a message held before its stream was
// placed: it was consumed past our header, which is still just before the
// payload.
func earlySeq(m *event.Message) uint32 {
	m.Restore(headerSize)
	h, _ := m.Consume(headerSize)
	return binary.BigEndian.Uint32(h[13:])
}

// place starts a stream held while its floor was unknown at next, and
// passes on what was held.
func (l *Layer) place(g *group, from event.NodeID, s *sender, next uint32) {
	s.known, s.next = true, next
	early := s.early
	s.early = nil
	for _, m := range early {
		s.bytes -= event.HeldCost(m.Len())
		l.hold(-event.HeldCost(m.Len()))
	}
	for _, m := range early {
		l.accept(g, from, s, earlySeq(m), m)
	}
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
			l.late.Inc()
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
	l.reordered.Inc()
	l.hold(event.HeldCost(m.Len()))
}

// drain delivers the held messages that follow next without a gap.
func (l *Layer) drain(g *group, from event.NodeID, s *sender) {
	for s.ring.Len() > 0 && s.ring.Get(0) != nil {
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
		l.overflow.Inc()
		l.skipped.Add(int64(to - s.next))
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
	l.delivered.Inc()
	l.Ctx.Up(&event.Event{Kind: event.Cast, Group: g.id, Peer: from, Msg: m})
}

// askFloor asks a sender where its stream starts for us, since the view
// tagged since.
func (l *Layer) askFloor(g *group, to event.NodeID, since uint32) {
	l.floorReqs.Inc()
	m := l.Ctx.NewMessage()
	b := m.Append(floorReqSize)
	b[0] = tFloorReq
	binary.BigEndian.PutUint32(b[1:], uint32(g.id))
	binary.BigEndian.PutUint32(b[5:], since)
	l.Ctx.Down(&event.Event{Kind: event.Send, Peer: to, Control: true, Msg: m})
}

// floorReqUp answers a member asking where our stream starts for it; a
// request for a view we have not installed yet waits for it.
func (l *Layer) floorReqUp(ev *event.Event) {
	g, since, _, ok := l.floorFields(ev, floorReqSize, "floor request")
	if !ok {
		return
	}
	if g == nil || g.view == nil {
		l.nonMember.Inc()
		return
	}
	if since > g.tag {
		if g.asked == nil {
			g.asked = map[event.NodeID]uint32{}
		}
		// bounded: one per member of a view we will install (a
		// non-member's request is dropped when that view comes)
		if _, ok := g.asked[ev.Peer]; ok || len(g.asked) < len(g.view.Members)+8 {
			g.asked[ev.Peer] = since
		}
		return
	}
	l.answerFloor(g, ev.Peer, since)
}

func (l *Layer) answerFloor(g *group, to event.NodeID, since uint32) {
	f, ok := g.floors[to]
	if !ok || f.since < since {
		// not a member, or we hold a relationship that ended (its view
		// re-admitting us, or it, is still to come here)
		l.nonMember.Inc()
		return
	}
	// f.since > since: we started the relationship at a later view than
	// the asker, e.g. we missed the view that re-admitted us and took the
	// next one as our first. The answer names our view; the asker takes
	// it only if it installed that view with us still in it.
	since = f.since
	m := l.Ctx.NewMessage()
	r := m.Append(floorSize)
	r[0] = tFloor
	binary.BigEndian.PutUint32(r[1:], uint32(g.id))
	binary.BigEndian.PutUint32(r[5:], since)
	binary.BigEndian.PutUint32(r[9:], f.seq)
	l.Ctx.Down(&event.Event{Kind: event.Send, Peer: to, Control: true, Msg: m})
}

// floorFields decodes a floor request or answer (what, size bytes): the
// group's state (nil if unknown), the view tag it is about and, in an
// answer, the floor. It releases the message; false if it was malformed.
func (l *Layer) floorFields(ev *event.Event, size int, what string) (g *group, since, f uint32, ok bool) {
	b := ev.Msg.Bytes()
	if len(b) != size {
		l.bad(ev, fmt.Errorf("%w: %s of %d bytes", errHeader, what, len(b)))
		return nil, 0, 0, false
	}
	g, since = l.groups[event.GroupID(binary.BigEndian.Uint32(b[1:]))], binary.BigEndian.Uint32(b[5:])
	if size >= floorSize {
		f = binary.BigEndian.Uint32(b[9:])
	}
	ev.Msg.Release()
	return g, since, f, true
}

// floorUp places a stream we were holding messages of.
func (l *Layer) floorUp(ev *event.Event) {
	from := ev.Peer
	g, since, f, ok := l.floorFields(ev, floorSize, "floor answer")
	if !ok {
		return
	}
	if g == nil || f == 0 {
		return
	}
	s := g.senders[from]
	fl, ok := g.floors[from]
	if s == nil || s.known || !ok || since < fl.since || since > g.tag {
		// not asked, already placed, an answer for an ended relationship,
		// or one for a view not installed here yet (asked again then)
		return
	}
	// since >= fl.since: every view we installed from fl.since to since
	// held the sender without listing it in Joined, so its relationship
	// since then is the one we start at fl.since
	l.place(g, from, s, f)
}

// Close releases every held message.
func (l *Layer) Close() {
	for _, g := range l.groups {
		for _, s := range g.senders {
			l.release(s)
		}
	}
}
