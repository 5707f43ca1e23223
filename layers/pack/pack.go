// Package pack is the packing layer: consecutive messages to the same
// destination (a group's channel, a node) share one datagram, one frame
// header and one system call, as Spread and QSM pack and JGroups bundles.
//
// Going down, a Cast or Send is held while more follow to the same place;
// the held messages leave as one packed message once the next one would not
// fit in Size bytes, or Delay after the first was held, whichever comes
// first: at high rates packs fill, at low rates no message waits longer
// than Delay. A Delay of 0 (the default) holds messages only until the
// stack has nothing more queued: what is cast together shares a datagram,
// and a lone message leaves at once. A message alone leaves as it came, behind a one-byte header,
// uncopied; so does every control message (acknowledgements, NAKs,
// credit), at once. Going up, a pack is split back into its messages, each passed
// up as if it had arrived alone. Layers above keep their own headers and
// sequence numbers per message; only the datagram is shared.
//
// Place it just above the transport (below reliable), or above gms, which
// passes membership packets through unpacked.
package pack

import (
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// Config configures the layer.
type Config struct {
	// Size is the most bytes a packed message carries (its entries and the
	// pack header; the layers below add theirs).
	Size int
	// Delay is the longest a message waits for others to share its
	// datagram.
	Delay time.Duration
	// MaxPending bounds the destinations with messages held at once; one
	// more flushes the one held longest.
	MaxPending int
}

// dest is where a packet goes: everything of a Cast or Send going down
// but its message.
type dest struct {
	kind    event.Kind
	group   event.GroupID
	peer    event.NodeID
	channel event.ChannelID
	control bool
	one     bool
	best    bool // event.Event.BestEffort: kept apart so it stays so below
}

// held is the messages held for one destination.
type held struct {
	to    dest
	first *event.Message // the first message, kept as it came until a second joins it
	buf   *event.Message // the pack, once there are two
	n     int
	size  int // bytes of the pack as it would leave (header and entries)
	since event.Time
}

// Layer is the packing layer.
type Layer struct {
	stack.Base
	cfg   Config
	held  []*held // destinations with messages held, oldest first
	spare []*held
	timer *stack.Timer
	// packs recycles the layer's pack buffers apart from the stack's pool:
	// returned there, a pack's buffer (size bytes) went to the next cast,
	// which reliable then copied into a buffer of its own size to hold it
	// (event.Message.Compact), while the next pack grew a small buffer
	// again: two allocations and copies per pack on the sender's path.
	packs event.Pool

	c counters
}

// New makes the layer.
func New(cfg Config) *Layer { return &Layer{cfg: cfg} }

// HeaderSize is the one-byte pack header.
func (l *Layer) HeaderSize() int { return 1 }

// Init makes the timer and the counters.
func (l *Layer) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	l.timer = ctx.NewTimer(l.expire)
	ctx.BindCounters(&l.c)
	return nil
}

// Down holds Casts and Sends for packing; everything else passes, after
// the held messages on Exit.
func (l *Layer) Down(ev *event.Event) {
	switch {
	case ev.Kind == event.Exit:
		l.flushAll()
		l.Ctx.Down(ev)
		return
	case ev.Kind != event.Cast && ev.Kind != event.Send || ev.Msg == nil:
		l.Ctx.Down(ev)
		return
	}
	to := dest{kind: ev.Kind, group: ev.Group, peer: ev.Peer, channel: ev.Channel, control: ev.Control, one: ev.OneMember, best: ev.BestEffort}
	m := ev.Msg
	h := l.find(to)
	if to.control || m.Len()+1+entryHead > l.cfg.Size || m.Len() > MaxEntry {
		// Control (acks, NAKs, credit) never waits: the loops it closes
		// are what throughput waits on. Too long to share a datagram: it
		// leaves alone, after what was held for the same place.
		if h != nil {
			l.flush(h)
		}
		l.single(to, m)
		return
	}
	if h != nil && h.size+entryHead+m.Len() > l.cfg.Size {
		l.c.BySize.Inc()
		l.flush(h)
		h = nil
	}
	if h == nil {
		h = l.hold(to)
	}
	switch h.n {
	case 0:
		h.first, h.size = m, 1+entryHead+m.Len()
	case 1:
		h.buf = l.packs.GetRoom(event.Headroom)
		// Room for a full pack at once: a pooled buffer grows at most once.
		h.buf.Append(l.cfg.Size)
		h.buf.Truncate(0)
		h.buf.Append(1)[0] = kindPacked
		l.add(h.buf, h.first)
		h.first = nil
		fallthrough
	default:
		l.add(h.buf, m)
		h.size += entryHead + m.Len()
	}
	h.n++
}

// add appends m to pack buf as one entry and releases it.
func (l *Layer) add(buf, m *event.Message) {
	putEntry(buf.Append(entryHead+m.Len()), m.Bytes())
	m.Release()
}

// find is the destination's held messages, or nil.
func (l *Layer) find(to dest) *held {
	for _, h := range l.held {
		if h.to == to {
			return h
		}
	}
	return nil
}

// hold starts holding for to, arming the timer for the first held.
func (l *Layer) hold(to dest) *held {
	if len(l.held) >= l.cfg.MaxPending {
		l.flush(l.held[0])
	}
	var h *held
	if n := len(l.spare); n > 0 {
		h, l.spare = l.spare[n-1], l.spare[:n-1]
	} else {
		h = &held{}
	}
	*h = held{to: to, since: l.Ctx.Now()}
	l.held = append(l.held, h)
	if !l.timer.Pending() {
		l.timer.ResetAt(h.since + event.Time(l.cfg.Delay))
	}
	return h
}

// flush sends h's messages and forgets h.
func (l *Layer) flush(h *held) {
	if h.n == 1 {
		l.single(h.to, h.first)
	} else if h.n > 1 {
		l.c.Packs.Inc()
		l.c.Packed.Add(int64(h.n))
		l.send(h.to, h.buf)
	}
	for i, x := range l.held {
		if x == h {
			copy(l.held[i:], l.held[i+1:])
			l.held[len(l.held)-1] = nil
			l.held = l.held[:len(l.held)-1]
			break
		}
	}
	*h = held{}
	l.spare = append(l.spare, h)
	if len(l.held) == 0 {
		l.timer.Stop()
	}
}

// single sends m alone behind the single header.
func (l *Layer) single(to dest, m *event.Message) {
	l.c.Singles.Inc()
	m.Prepend(1)[0] = kindSingle
	l.send(to, m)
}

func (l *Layer) send(to dest, m *event.Message) {
	ev := event.Event{Kind: to.kind, Group: to.group, Peer: to.peer, Channel: to.channel,
		Control: to.control, OneMember: to.one, BestEffort: to.best, Msg: m}
	l.Ctx.Down(&ev)
}

// expire flushes every destination held Delay or longer and re-arms for
// the next.
func (l *Layer) expire() {
	now := l.Ctx.Now()
	for len(l.held) > 0 && l.held[0].since+event.Time(l.cfg.Delay) <= now {
		l.c.ByDelay.Inc()
		l.flush(l.held[0])
	}
	if len(l.held) > 0 {
		l.timer.ResetAt(l.held[0].since + event.Time(l.cfg.Delay))
	}
}

func (l *Layer) flushAll() {
	for len(l.held) > 0 {
		l.flush(l.held[0])
	}
}

// Up splits packs into their messages; singles lose their header.
func (l *Layer) Up(ev *event.Event) {
	if ev.Kind != event.Cast && ev.Kind != event.Send || ev.Msg == nil {
		l.Ctx.Up(ev)
		return
	}
	h, err := ev.Msg.Consume(1)
	if err != nil || h[0] > kindPacked {
		l.c.Malformed.Inc()
		ev.Msg.Release()
		return
	}
	if h[0] == kindSingle {
		l.Ctx.Up(ev)
		return
	}
	m := ev.Msg
	up := *ev
	b := m.Bytes()
	if len(b) == 0 {
		l.c.Malformed.Inc()
	}
	for at := 0; at < len(b); {
		msg, _, err := Next(b[at:])
		if err != nil {
			l.c.Malformed.Inc() // the entries before the bad one went up
			if l.Ctx.Logging() {
				l.Ctx.Logf("from %v: %v", ev.Peer, err)
			}
			break
		}
		l.c.Unpacked.Inc()
		// Each message goes up as a slice of the pack, uncopied (a layer
		// that holds one compacts it into a buffer of its own).
		at += entryHead
		up.Msg = m.Slice(at, at+len(msg))
		l.Ctx.Up(&up)
		at += len(msg)
	}
	m.Release()
}

// Close releases what is held.
func (l *Layer) Close() {
	for _, h := range l.held {
		h.first.Release()
		h.buf.Release()
	}
	l.held = nil
}

var (
	_ stack.Layer       = (*Layer)(nil)
	_ stack.HeaderSizer = (*Layer)(nil)
	_ stack.Closer      = (*Layer)(nil)
)
