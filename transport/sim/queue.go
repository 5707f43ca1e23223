package sim

import "github.com/layercast/layercast/stack"

// The event queue holds every queued event in (at, seq) order: the next
// few in a short sorted array (ahead), the others in a 4-ary min-heap.
// Every event in ahead comes before every event in the heap, so ahead[i]
// is the event handled i+1 steps after the one just popped, unless an
// earlier one is pushed meanwhile. Knowing that, the network prepares the
// memory of the next several steps while it handles one (prefetchNext).
// The order is exactly the heap's: (at, seq), seq counting pushes.

// aheadLen is how many of the next events ahead holds: one for each step
// of prefetchNext's pipeline (node, stack, stack's pointers, then the
// stack's layers' stages).
const aheadLen = 3 + stack.WarmStages

// evQueue is the network's event queue.
type evQueue struct {
	ahead []simEvent // sorted; refilled from heap after each pop
	heap  []simEvent // 4-ary heap; sifting moves a hole instead of swapping
	// depth is how many events ahead holds when the heap has them:
	// aheadLen from the network size at which prefetchNext runs, 0 below
	// it (where keeping ahead would cost without paying).
	depth int
}

func before(a, b *simEvent) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// len is the number of queued events.
func (q *evQueue) len() int { return len(q.ahead) + len(q.heap) }

// push queues e, numbering it after every event pushed before.
func (n *Network) push(e simEvent) {
	n.seq++
	e.seq = n.seq
	q := &n.q
	k := len(q.ahead)
	if k == 0 || !before(&e, &q.ahead[k-1]) {
		q.heapPush(e)
		return
	}
	// e comes before ahead's last: it goes into ahead, and when ahead is
	// full its last moves to the heap, where it comes first.
	if k == q.depth {
		k--
		q.heapPush(q.ahead[k])
		q.ahead = q.ahead[:k]
	}
	i := k
	for i > 0 && before(&e, &q.ahead[i-1]) {
		i--
	}
	q.ahead = append(q.ahead, simEvent{})
	copy(q.ahead[i+1:], q.ahead[i:k])
	q.ahead[i] = e
}

// peek is the next event, or nil if none is queued.
func (q *evQueue) peek() *simEvent {
	if len(q.ahead) == 0 && q.depth > 0 {
		q.fill()
	}
	switch {
	case len(q.ahead) > 0:
		return &q.ahead[0]
	case len(q.heap) > 0:
		return &q.heap[0]
	}
	return nil
}

// pop removes and returns the next event; the queue must not be empty.
func (n *Network) pop() simEvent {
	q := &n.q
	if len(q.ahead) == 0 {
		if q.depth == 0 {
			return q.heapPop()
		}
		q.fill()
	}
	e := q.ahead[0]
	last := len(q.ahead) - 1
	copy(q.ahead, q.ahead[1:])
	q.ahead[last] = simEvent{} // drop the packet and node it held
	q.ahead = q.ahead[:last]
	q.fill()
	return e
}

// fill moves the heap's first events into ahead until it holds depth.
func (q *evQueue) fill() {
	if q.ahead == nil && q.depth > 0 {
		q.ahead = make([]simEvent, 0, q.depth)
	}
	for len(q.ahead) < q.depth && len(q.heap) > 0 {
		q.ahead = append(q.ahead, q.heapPop())
	}
}

func (q *evQueue) heapPush(e simEvent) {
	q.heap = append(q.heap, e)
	h := q.heap
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !before(&e, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
}

func (q *evQueue) heapPop() simEvent {
	h := q.heap
	top := h[0]
	last := len(h) - 1
	e := h[last]
	h[last] = simEvent{}
	h = h[:last]
	q.heap = h
	if last == 0 {
		return top
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= last {
			break
		}
		m := c
		end := min(c+4, last)
		for j := c + 1; j < end; j++ {
			if before(&h[j], &h[m]) {
				m = j
			}
		}
		if !before(&h[m], &e) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = e
	return top
}
