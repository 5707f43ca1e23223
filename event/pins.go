package event

import "sync/atomic"

// How many of a transport's read buffers held messages may keep.
//
// A received message borrows a transport's read batch (Pool.Borrow), and a
// layer that holds it past the event that brought it up (fifo behind a
// gap, almost every message at 1% loss) keeps Compact's result. Copying
// every held message was a quarter of a receiver's CPU; holding every one
// as it is would pin batches until the gap before it fills, and once all
// of a socket's batches were pinned the transport could not read the
// retransmission that fills the gap: a stall. So a transport gives its
// carriers a budget (Pins): Compact holds a borrowed message in place
// while its carrier is pinned already or the budget has room for one more
// carrier, and copies it (the copy-break of a driver that copies small
// packets out of its receive ring) once Max carriers are pinned and the
// transport has no room for more (Room). A carrier stays pinned until its
// last reference is released. Pinned carriers never pass Max unless Room
// lets them, so with Max below the batches a socket has (or Room keeping
// a read's worth of its memory free), the transport always has a batch to
// read into, and each batch it reads comes back when the call that handed
// it over returns or within the budget.

// Pins bounds how many carriers (NewPinnedCarrier) messages held as
// Compact's result may keep at once; the zero Pins pins none. A Pins and
// its carriers are used by one goroutine at a time (a stack's node): it is
// not safe for concurrent use.
type Pins struct {
	// Max is the most carriers pinned at once, unless Room allows more.
	Max int
	// Room, if set, is asked once Max carriers are pinned whether one
	// more may be (a transport that counts its read memory in finer units
	// than carriers: a carrier of a few packets keeps little of it); it
	// runs on the Pins' goroutine.
	Room func() bool

	n, peak int
	copies  atomic.Int64 // read by transports' counters from any goroutine
}

// Pinned is how many carriers held messages keep now.
func (p *Pins) Pinned() int { return p.n }

// Peak is the most carriers held messages kept at once.
func (p *Pins) Peak() int { return p.peak }

// Copies counts the borrowed messages Compact copied because Max carriers
// were pinned already (and Room said no). It may be read from any
// goroutine.
func (p *Pins) Copies() int64 { return p.copies.Load() }

// carrier is a carrier message's state (NewCarrier).
type carrier struct {
	done   func()
	pins   *Pins // nil: held messages never pin it
	pinned bool  // counted in pins.n until the last reference is released
}

// pin reports whether a held message may keep the carrier, pinning it if
// the budget has room.
func (k *carrier) pin() bool {
	p := k.pins
	switch {
	case p == nil:
		return false
	case k.pinned:
		return true
	case p.n >= p.Max && (p.Room == nil || !p.Room()):
		p.copies.Add(1)
		return false
	}
	k.pinned = true
	p.n++
	p.peak = max(p.peak, p.n)
	return true
}

// unpin frees the carrier's place in its budget (its last reference was
// released).
func (k *carrier) unpin() {
	if k.pinned {
		k.pinned = false
		k.pins.n--
	}
}

// NewPinnedCarrier is NewCarrier with a budget: a message borrowed from it
// (or a Slice of one) that a layer holds, as Compact's result, shares its
// memory instead of being copied while pins has room (see Pins). A nil
// pins is NewCarrier.
func NewPinnedCarrier(done func(), pins *Pins) *Message {
	return &Message{car: &carrier{done: done, pins: pins}}
}

// heldInPlace reports whether m, which shares another message's buffer,
// may be held as it is: the buffer is a carrier's whose budget has room
// (or already counts it).
func (m *Message) heldInPlace() bool {
	c := m.parent
	for c.car == nil {
		if c = c.parent; c == nil {
			return false // a Slice of a pooled message
		}
	}
	return c.car.pin()
}
