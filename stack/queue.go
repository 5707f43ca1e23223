package stack

import "github.com/layercast/layercast/event"

type direction uint8

const (
	dirUp direction = iota
	dirDown
	dirTimer
)

// item is one queued step: deliver ev to layer target in direction dir, or
// fire timer tm.
type item struct {
	ev     event.Event
	target int
	dir    direction
	tm     *Timer
}

// ring is a growable FIFO of items. It grows only while one step produces
// more work than ever before, so steady state allocates nothing. Once
// empty it starts again from its first slot, so a step touches the same
// few cache lines of it as the last step did: with thousands of simulated
// stacks, slots further on would be cold memory at every push.
type ring struct {
	buf        []item
	head, size int
}

func (r *ring) push(it item, sc *Scratch) { *r.slot(sc) = it }

// slot appends an item and returns it to be filled in place: an event
// crosses a layer boundary with one copy into the ring (and one out),
// not one into a temporary item and another into the ring (about 100
// bytes each, several crossings per message). A ring without a buffer
// borrows one from sc, if any (see lend).
func (r *ring) slot(sc *Scratch) *item {
	if r.size == 0 && len(r.buf) == 0 && sc != nil {
		r.buf = sc.take()
	}
	if r.size == len(r.buf) {
		n := 2 * len(r.buf)
		if n == 0 {
			// a step queues a few items: a small first buffer (88 bytes
			// an item) is what thousands of simulated stacks each keep
			n = 16
		}
		nb := make([]item, n)
		for i := 0; i < r.size; i++ {
			nb[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = nb, 0
	}
	i := r.head + r.size
	if i >= len(r.buf) {
		i -= len(r.buf)
	}
	r.size++
	return &r.buf[i]
}

func (r *ring) pop(out *item) bool {
	if r.size == 0 {
		return false
	}
	*out = r.buf[r.head]
	r.buf[r.head] = item{} // drop references for the GC
	r.size--
	if r.size == 0 {
		r.head = 0
	} else if r.head++; r.head == len(r.buf) {
		r.head = 0
	}
	return true
}

// lend gives an empty ring's buffer back to sc (none: the ring keeps it).
func (r *ring) lend(sc *Scratch) {
	if sc != nil && r.size == 0 && r.buf != nil {
		sc.free = append(sc.free, r.buf) // every slot zero: pop cleared it
		r.buf, r.head = nil, 0
	}
}

// Scratch lends the buffers of their event queues to stacks that one
// goroutine steps one at a time (Config.Scratch), for the length of a
// step: a stack's queues are empty between steps, so the simulator's
// thousands of stacks need a few buffers between them, which stay in
// the CPU's caches, where each stack's own would be two more cold lines
// per step. The zero value is ready to use. Stacks sharing a Scratch must
// never be stepped concurrently.
type Scratch struct {
	free [][]item // empty buffers, the last lent first
}

// take returns an empty buffer, or nil when none is free.
func (sc *Scratch) take() []item {
	n := len(sc.free)
	if n == 0 {
		return nil
	}
	b := sc.free[n-1]
	sc.free[n-1] = nil
	sc.free = sc.free[:n-1]
	return b
}

// appSend is an application request waiting to be pulled into the stack.
type appSend struct {
	kind  event.Kind
	group event.GroupID
	peer  event.NodeID
	msg   *event.Message
}

// appQueue is the bounded queue between the application and the top layer.
// It holds at most max requests; its ring starts small and doubles as the
// backlog needs (no allocation once grown): a full queue of 256 on each of
// 2,048 simulated nodes was 13 MB that a paced application never uses.
type appQueue struct {
	buf        []appSend
	head, size int
	max        int
}

func (q *appQueue) full() bool { return q.size == q.max }

func (q *appQueue) push(a appSend) {
	if q.size == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.size)%len(q.buf)] = a
	q.size++
}

// grow doubles the ring (from 16, up to max), keeping the order.
func (q *appQueue) grow() {
	nb := make([]appSend, min(q.max, max(16, 2*len(q.buf))))
	for i := 0; i < q.size; i++ {
		nb[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.buf, q.head = nb, 0
}

func (q *appQueue) pop() (appSend, bool) {
	if q.size == 0 {
		return appSend{}, false
	}
	a := q.buf[q.head]
	q.buf[q.head] = appSend{}
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	return a, true
}
