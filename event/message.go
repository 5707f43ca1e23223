package event

import (
	"errors"
	"sync"
	"sync/atomic"
)

// Headroom is the room a message from Pool.Get keeps in front of its payload
// for the headers layers prepend going down. A stack does not use it: it
// reserves, with Pool.GetRoom, the sum of its layers' declared header sizes
// and its frame, so that no buffer grows in steady state. A layer that
// prepends more than was reserved still works (the buffer grows, and the
// pool counts it in Grows).
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
	room int // headroom reserved when the message was made (0: Headroom)
	refs int32
	pool *Pool
	// A slice of another message (Slice) shares parent's buffer and holds
	// a reference to it; own is the pooled buffer it had, restored when
	// the slice goes back to the pool.
	parent *Message
	own    []byte
	// car, set on a carrier (NewCarrier), is its state: done is called
	// instead of returning the message to a pool when its last reference
	// is released.
	car *carrier

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
	if m.pool != nil {
		m.pool.grows.Add(1)
	}
	room := m.headroom()
	size := len(m.buf) - m.off
	nb := make([]byte, n+room+size)
	copy(nb[n+room:], m.buf[m.off:])
	m.buf = nb
	m.off = n + room
}

// headroom is the room the message keeps in front of a new payload.
func (m *Message) headroom() int {
	if m.room == 0 {
		return Headroom
	}
	return m.room
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

// SetPayload replaces the contents with a copy of p, with the headroom the
// message was made with.
func (m *Message) SetPayload(p []byte) {
	room := m.headroom()
	need := room + len(p)
	if cap(m.buf) < need {
		m.buf = make([]byte, need)
	}
	m.buf = m.buf[:need]
	m.off = room
	copy(m.buf[room:], p)
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
	if p := m.parent; p != nil {
		m.parent, m.buf, m.own = nil, m.own, nil
		p.Release()
	}
	if k := m.car; k != nil {
		k.unpin()
		k.done()
		return
	}
	if m.pool != nil {
		m.pool.put(m)
	}
}

// Slice returns a message whose bytes are m.Bytes()[from:to], sharing m's
// buffer instead of copying it (a pack's messages going up): m keeps one
// more reference until the slice is released. The slice has no headroom
// and no spare capacity, so a header prepended or bytes appended move it
// to a buffer of its own; the bytes it has are its own to change. A layer
// that holds it keeps Compact's result, which copies a slice (unless it
// lies in a carrier whose Pins has room), so a held slice never pins a
// pooled buffer it came from. It panics if from:to is out of range.
func (m *Message) Slice(from, to int) *Message {
	b := m.Bytes()[from:to:to]
	p := m.pool
	if p == nil {
		p = DefaultPool
	}
	v, _ := p.p.Get().(*Message)
	if v == nil {
		v = &Message{}
	}
	v.own, v.buf = v.buf[:0], b
	v.off, v.room, v.refs, v.pool = 0, m.room, 1, p
	v.parent = m
	v.Recovery, v.Stamp = Recovery{}, 0
	m.refs++
	return v
}

// NewCarrier returns a carrier: a message that stands for memory no pool
// owns (a transport's read batch), which messages made with Borrow share.
// Each borrowed message holds a reference on it; when the last reference
// is released, done is called (the memory may be used again). A carrier
// starts with no reference: Open gives it its first.
func NewCarrier(done func()) *Message { return &Message{car: &carrier{done: done}} }

// Open gives a carrier its first reference (again, once done has run).
func (m *Message) Open() {
	if m.refs != 0 {
		panic("event: Open of a carrier still referenced")
	}
	m.refs = 1
}

// Borrow returns a message from p whose bytes are b, which lies in the
// memory carrier stands for, sharing it instead of copying: carrier keeps
// one more reference until the message is released. Like a Slice, it has
// no headroom and no spare capacity (room is the headroom Clone and
// SetPayload give it), and Compact copies it unless the carrier's Pins
// has room, so layers that hold such messages pin at most Pins.Max
// carriers.
func (p *Pool) Borrow(carrier *Message, b []byte, room int) *Message {
	v, _ := p.p.Get().(*Message)
	if v == nil {
		v = &Message{}
	}
	v.own, v.buf = v.buf[:0], b[:len(b):len(b)]
	v.off, v.room, v.refs, v.pool = 0, room, 1, p
	v.parent = carrier
	v.Recovery, v.Stamp = Recovery{}, 0
	carrier.refs++
	return v
}

// Clone returns a new message (from the same pool, with the same headroom)
// with a copy of the current bytes and the same Recovery and Stamp.
func (m *Message) Clone() *Message {
	p := m.pool
	if p == nil {
		p = DefaultPool
	}
	c := p.GetRoom(m.headroom())
	c.SetPayload(m.Bytes())
	c.Recovery = m.Recovery
	c.Stamp = m.Stamp
	return c
}

// Pool recycles Messages. It is safe for concurrent use. The zero Pool is
// ready to use.
type Pool struct {
	p     sync.Pool
	grows atomic.Int64
}

// DefaultPool is the pool NewMessage draws from.
var DefaultPool = &Pool{}

// NewMessage returns an empty message from DefaultPool.
func NewMessage() *Message { return DefaultPool.Get() }

// Get returns an empty message with Headroom bytes of headroom and one
// reference.
func (p *Pool) Get() *Message { return p.GetRoom(Headroom) }

// GetRoom returns an empty message with room bytes of headroom (at least
// one), which SetPayload and Clone keep, and one reference.
func (p *Pool) GetRoom(room int) *Message {
	room = max(room, 1)
	m, _ := p.p.Get().(*Message)
	if m == nil || cap(m.buf) < room {
		if m == nil {
			m = &Message{}
		}
		m.buf = make([]byte, room, room+1500)
	}
	m.buf = m.buf[:room]
	m.off = room
	m.room = room
	m.refs = 1
	m.pool = p
	m.Recovery = Recovery{}
	m.Stamp = 0
	return m
}

// FromBytes returns a pooled message holding a copy of b.
func (p *Pool) FromBytes(b []byte) *Message { return p.FromBytesRoom(b, Headroom) }

// FromBytesRoom returns a pooled message holding a copy of b with room
// bytes of headroom.
func (p *Pool) FromBytesRoom(b []byte, room int) *Message {
	m := p.GetRoom(room)
	m.SetPayload(b)
	return m
}

// Grows is how many times a message of this pool had to move to a larger
// buffer because a header did not fit in its headroom. A stack whose layers
// declare their header sizes keeps it at zero.
func (p *Pool) Grows() int64 { return p.grows.Load() }

func (p *Pool) put(m *Message) {
	if cap(m.buf) > 1<<20 {
		return // don't keep huge buffers around
	}
	p.p.Put(m)
}
