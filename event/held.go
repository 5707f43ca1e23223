package event

// What a message a layer holds (a reorder buffer, early arrivals, a
// retransmission buffer) costs in memory, and how to keep that true.
//
// A pooled buffer keeps the capacity of the largest packet it ever carried:
// after a flood of large forged packets, small held messages each pinned
// 16 KB while a layer counted their few bytes (tests/fuzz's flood probe).
// A layer that holds messages therefore charges HeldCost against its byte
// bounds and keeps Compact's result, so the charge is true of the memory.
const (
	heldRoom     = 1500 // the payload room of a fresh pooled buffer, which a small message occupies whole
	heldSlack    = 128  // headers prepended into the headroom, or consumed from the front
	heldOverhead = Headroom + heldSlack + 192
)

// HeldCost is what holding a message of n bytes counts against a layer's
// byte bound: n, at least the payload room of a fresh pooled buffer, plus
// the headroom, spare room and the Message itself. It depends only on n, so
// what a simulated run holds is the same for a seed whatever buffers the
// pool recycled.
func HeldCost(n int) int64 { return int64(max(n, heldRoom)) + heldOverhead }

// Oversized reports whether a buffer of capacity c holding n bytes is
// larger than HeldCost(n) accounts for.
func Oversized(n, c int) bool { return c > max(n, heldRoom)+heldSlack }

// Compact returns m, or, when m's buffer is larger than HeldCost accounts
// for (or m is a Slice of a larger message, which it would keep alive), a
// copy of it in a buffer of about its own size, releasing m. Only held
// messages in oversized buffers pay the copy. A message that borrows a
// transport's read buffer (Pool.Borrow, or a Slice of such a message) is
// returned as it is while its carrier's budget (Pins) has room, and
// copied once it has none: the buffer is the transport's own fixed
// memory, and the budget bounds how much of it held messages keep. Copies
// come from a pool of their own, whose buffers never exceed what HeldCost
// accounts for when reused (a larger one left from a larger message is
// dropped): behind a gap fifo compacts every message a pack's datagram
// brought, and a fresh allocation for each (zeroed, then copied into,
// then collected) was a third of a receiver's CPU at 10% loss.
func (m *Message) Compact() *Message {
	b := m.Bytes()
	if m.parent == nil {
		if !Oversized(len(b), cap(b)) {
			return m
		}
	} else if m.heldInPlace() {
		return m
	}
	c := compactPool.GetRoom(Headroom)
	if Oversized(len(b), cap(c.buf)-c.room) {
		c.buf = make([]byte, c.room, c.room+len(b))
	}
	c.SetPayload(b)
	c.Recovery, c.Stamp = m.Recovery, m.Stamp
	m.Release()
	return c
}

// compactPool recycles Compact's copies (see Compact).
var compactPool = &Pool{}
