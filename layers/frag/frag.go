// Package frag is the fragmentation layer (Ensemble's and JGroups' FRAG2):
// an application message longer than a datagram leaves as several
// fragments of at most Size bytes and is put back together at every
// receiver, up to MaxMsg bytes, the payload limit the stack's
// ErrTooLarge names.
//
// frag stands at the top, above FIFO reliable delivery (fifo : reliable),
// so fragments of one sender's message arrive in order and all of them:
// reassembly is a buffer per (group, sender) and nothing else. A receiver
// holds at most MaxPending partly gathered messages; one more drops the
// oldest.
package frag

import (
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// Config configures the layer.
type Config struct {
	// Size is the most payload bytes one fragment carries.
	Size int
	// MaxMsg is the longest message the layer takes and reassembles.
	MaxMsg int
	// MaxPending bounds the messages partly gathered at a receiver.
	MaxPending int
}

// stream is where fragments come from: a sender in a group, or a node
// sending point to point.
type stream struct {
	kind  event.Kind
	group event.GroupID
	from  event.NodeID
}

type pending struct {
	from stream
	r    Reassembly
}

// Layer is the fragmentation layer.
type Layer struct {
	stack.Base
	cfg     Config
	pending []*pending // partly gathered, oldest first

	c counters
}

// New makes the layer.
func New(cfg Config) *Layer { return &Layer{cfg: cfg} }

// HeaderSize is the fragment header.
func (l *Layer) HeaderSize() int { return HeaderLen }

// MaxPayload is MaxMsg: the stack refuses longer payloads (ErrTooLarge
// names it).
func (l *Layer) MaxPayload() int { return l.cfg.MaxMsg }

// Init makes the counters.
func (l *Layer) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	ctx.BindCounters(&l.c)
	return nil
}

// Down cuts long Casts and Sends into fragments.
func (l *Layer) Down(ev *event.Event) {
	if ev.Kind != event.Cast && ev.Kind != event.Send || ev.Msg == nil || ev.Control {
		l.Ctx.Down(ev)
		return
	}
	m := ev.Msg
	n := m.Len()
	if n <= l.cfg.Size {
		putHeader(m.Prepend(HeaderLen), Header{First: true, Last: true, Total: n})
		l.Ctx.Down(ev)
		return
	}
	l.c.Fragmented.Inc()
	b := m.Bytes()
	out := *ev
	for off := 0; off < n; off += l.cfg.Size {
		end := min(off+l.cfg.Size, n)
		f := l.Ctx.MessageFrom(b[off:end])
		putHeader(f.Prepend(HeaderLen), Header{First: off == 0, Last: end == n, Total: n})
		out.Msg = f
		l.c.Frags.Inc()
		l.Ctx.Down(&out)
	}
	m.Release()
}

// Up puts messages back together.
func (l *Layer) Up(ev *event.Event) {
	if ev.Kind != event.Cast && ev.Kind != event.Send || ev.Msg == nil || ev.Control {
		l.Ctx.Up(ev)
		return
	}
	m := ev.Msg
	hb, err := m.Consume(HeaderLen)
	var h Header
	if err == nil {
		h, err = ParseHeader(hb)
	}
	if err != nil {
		l.c.Malformed.Inc()
		m.Release()
		return
	}
	if h.First && h.Last {
		if h.Total != m.Len() {
			l.c.Malformed.Inc()
			m.Release()
			return
		}
		l.Ctx.Up(ev)
		return
	}
	p := l.find(stream{ev.Kind, ev.Group, ev.Peer}, h.First)
	if p == nil {
		l.c.Malformed.Inc() // a middle or last fragment of nothing we gather
		m.Release()
		return
	}
	whole, done, err := p.r.Add(h, m.Bytes(), l.cfg.MaxMsg)
	m.Release()
	l.c.Peak.Max(int64(l.held()))
	if err != nil {
		l.c.Malformed.Inc()
		if l.Ctx.Logging() {
			l.Ctx.Logf("from %v in %v: %v", ev.Peer, ev.Group, err)
		}
		l.drop(p)
		return
	}
	if !done {
		return
	}
	l.c.Reassembled.Inc()
	up := *ev
	up.Msg = l.Ctx.MessageFrom(whole)
	l.drop(p)
	l.Ctx.Up(&up)
}

// find is the stream's reassembly; a first fragment makes one, evicting
// the oldest past MaxPending.
func (l *Layer) find(s stream, first bool) *pending {
	for _, p := range l.pending {
		if p.from == s {
			return p
		}
	}
	if !first {
		return nil
	}
	if len(l.pending) >= l.cfg.MaxPending {
		l.c.Evicted.Inc()
		l.drop(l.pending[0])
	}
	p := &pending{from: s}
	l.pending = append(l.pending, p)
	return p
}

func (l *Layer) drop(p *pending) {
	for i, x := range l.pending {
		if x == p {
			l.pending = append(l.pending[:i], l.pending[i+1:]...)
			return
		}
	}
}

func (l *Layer) held() int {
	n := 0
	for _, p := range l.pending {
		n += p.r.Held()
	}
	return n
}

var (
	_ stack.Layer          = (*Layer)(nil)
	_ stack.HeaderSizer    = (*Layer)(nil)
	_ stack.PayloadLimiter = (*Layer)(nil)
)
