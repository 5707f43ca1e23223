package event

import (
	"errors"
	"sync"
)

// Headroom is the room a new Message keeps in front of its payload for the
// headers layers prepend going down. A layer that needs more still works (the
// buffer grows once), but the stack raises Headroom to the sum of its layers'
// declared header sizes so that growth never happens in steady state.
const Headroom = 128

// ErrShort is returned by Consume when the message holds fewer bytes than asked.
var ErrShort = errors.New("message shorter than its header")

// Recovery says how a message that was lost on the way was brought back. The
// layer that recovers a message sets it; layers above keep it. It feeds the
// run reports (recovered_by, discovery and recovery latency).
type Recovery struct {
	// By names the mechanism ("nak", "lec", "lec-xor2", ...); empty if the
	// message arrived first time.
	By string
	// Discovered is when the loss was discovered; zero if unknown.
	Discovered Time
}

// Message is a packet in the making: a payload with headers in front. The
// bytes live in buf[off:]; the room in front of off is headroom for Prepend.
// Going up, Consume advances off past each layer's header.
//
// Messages come from a Pool and return to it with Release; Retain adds a
// reference for a layer that keeps a message (a retransmission buffer).
type Message struct {
	buf  []byte
	off  int
	refs int32
	pool *Pool

	// Recovery is set by the layer that recovered the message.
	Recovery Recovery
	// Stamp is free for local use within one stack (a layer may note when
	// it buffered the message). It is not carried on the wire: an
	// application that needs the send time at receivers puts it in the
	// payload.
	Stamp Time
}

// Bytes returns the message as it stands: every header prepended so far
// followed by the payload; going up, what has not been consumed yet. The slice
// is valid until the message is changed or released.
func (m *Message) Bytes() []byte { return m.buf[m.off:] }

// Len is len(m.Bytes()).
func (m *Message) Len() int { return len(m.buf) - m.off }

// Prepend makes room for an n-byte header in front and returns it for the
// caller to fill.
func (m *Message) Prepend(n int) []byte {
	if n > m.off {
		m.grow(n)
	}
	m.off -= n
	return m.buf[m.off : m.off+n : m.off+n]
}

// grow moves the contents to a larger buffer so that at least n bytes of
// headroom are free.
func (m *Message) grow(n int) {
	size := len(m.buf) - m.off
	nb := make([]byte, n+Headroom+size)
	copy(nb[n+Headroom:], m.buf[m.off:])
	m.buf = nb
	m.off = n + Headroom
}

// Consume takes an n-byte header off the front and returns it. The returned
// slice stays valid until the message is released.
func (m *Message) Consume(n int) ([]byte, error) {
	if n < 0 || m.Len() < n {
		return nil, ErrShort
	}
	h := m.buf[m.off : m.off+n : m.off+n]
	m.off += n
	return h, nil
}

// Peek returns the first n bytes without consuming them.
func (m *Message) Peek(n int) ([]byte, error) {
	if n < 0 || m.Len() < n {
		return nil, ErrShort
	}
	return m.buf[m.off : m.off+n : m.off+n], nil
}

// Restore undoes Consume of n bytes (a layer that looked at a header and
// decided the message belongs to someone else).
func (m *Message) Restore(n int) {
	if n > m.off {
		panic("event: Restore past the start of the buffer")
	}
	m.off -= n
}

// SetPayload replaces the contents with a copy of p, with full headroom.
func (m *Message) SetPayload(p []byte) {
	need := Headroom + len(p)
	if cap(m.buf) < need {
		m.buf = make([]byte, need)
	}
	m.buf = m.buf[:need]
	m.off = Headroom
	copy(m.buf[Headroom:], p)
}

// Append extends the message at the end by n bytes and returns them.
func (m *Message) Append(n int) []byte {
	l := len(m.buf)
	if cap(m.buf)-l < n {
		nb := make([]byte, l, 2*cap(m.buf)+n)
		copy(nb, m.buf)
		m.buf = nb
	}
	m.buf = m.buf[:l+n]
	return m.buf[l : l+n : l+n]
}

// Truncate keeps the first n bytes of what remains.
func (m *Message) Truncate(n int) {
	if n < m.Len() {
		m.buf = m.buf[:m.off+n]
	}
}

// Retain adds a reference: the message is returned to its pool only after
// one more Release.
func (m *Message) Retain() { m.refs++ }

// Release drops a reference and returns the message to its pool when none is
// left. A nil message is ignored.
func (m *Message) Release() {
	if m == nil {
		return
	}
	m.refs--
	if m.refs > 0 {
		return
	}
	if m.refs < 0 {
		panic("event: Message released more often than retained")
	}
	if m.pool != nil {
		m.pool.put(m)
	}
}

// Clone returns a new message (from the same pool) with a copy of the
// current bytes and the same Recovery and Stamp.
func (m *Message) Clone() *Message {
	var c *Message
	if m.pool != nil {
		c = m.pool.Get()
	} else {
		c = NewMessage()
	}
	c.SetPayload(m.Bytes())
	c.Recovery = m.Recovery
	c.Stamp = m.Stamp
	return c
}

// Pool recycles Messages. It is safe for concurrent use. The zero Pool is
// ready to use.
type Pool struct {
	p sync.Pool
}

// DefaultPool is the pool NewMessage draws from.
var DefaultPool = &Pool{}

// NewMessage returns an empty message from DefaultPool.
func NewMessage() *Message { return DefaultPool.Get() }

// Get returns an empty message with Headroom bytes of headroom and one
// reference.
func (p *Pool) Get() *Message {
	m, _ := p.p.Get().(*Message)
	if m == nil {
		m = &Message{buf: make([]byte, Headroom, Headroom+1500)}
	}
	m.buf = m.buf[:Headroom]
	m.off = Headroom
	m.refs = 1
	m.pool = p
	m.Recovery = Recovery{}
	m.Stamp = 0
	return m
}

// FromBytes returns a pooled message holding a copy of b.
func (p *Pool) FromBytes(b []byte) *Message {
	m := p.Get()
	m.SetPayload(b)
	return m
}

func (p *Pool) put(m *Message) {
	if cap(m.buf) > 1<<20 {
		return // don't keep huge buffers around
	}
	p.p.Put(m)
}
