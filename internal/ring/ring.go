// Package ring is a FIFO queue over a circular buffer that grows by
// doubling when full and never shrinks: once it has grown to the most its
// owner lets it hold (the owner's configured bound: a window, a buffer
// size), pushing and popping allocate nothing. The layers' retransmission
// buffers and waiting queues are rings.
package ring

// Ring is a FIFO queue of T. The zero value is an empty ring that allocates
// MinCap slots (16 by default) on the first Push.
type Ring[T any] struct {
	buf     []T
	head, n int
	// MinCap is the capacity of the first allocation (0: 16).
	MinCap int
}

// Len is the number of elements held.
func (r *Ring[T]) Len() int { return r.n }

// Cap is the number of slots allocated.
func (r *Ring[T]) Cap() int { return len(r.buf) }

// Push appends v at the back, doubling the buffer if it is full.
func (r *Ring[T]) Push(v T) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[r.index(r.n)] = v
	r.n++
}

func (r *Ring[T]) grow() {
	n := 2 * len(r.buf)
	if n == 0 {
		n = r.MinCap
		if n <= 0 {
			n = 16
		}
	}
	nb := make([]T, n)
	for i := 0; i < r.n; i++ {
		nb[i] = r.buf[r.index(i)]
	}
	r.buf, r.head = nb, 0
}

func (r *Ring[T]) index(i int) int {
	j := r.head + i
	if j >= len(r.buf) {
		j -= len(r.buf)
	}
	return j
}

// At returns a pointer to the i-th element from the front (0 is the
// front), valid until the next Push. It panics if i is out of range.
func (r *Ring[T]) At(i int) *T {
	if i < 0 || i >= r.n {
		panic("ring: index out of range")
	}
	return &r.buf[r.index(i)]
}

// Front returns a pointer to the front element; see At.
func (r *Ring[T]) Front() *T { return r.At(0) }

// Pop removes and returns the front element, zeroing its slot (so the
// ring keeps no reference to it). It panics on an empty ring.
func (r *Ring[T]) Pop() T {
	if r.n == 0 {
		panic("ring: Pop of an empty ring")
	}
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = r.index(1)
	r.n--
	if r.n == 0 {
		r.head = 0
	}
	return v
}

// Clear removes every element (zeroing the slots) and keeps the buffer.
func (r *Ring[T]) Clear() {
	for i := 0; i < r.n; i++ {
		var zero T
		r.buf[r.index(i)] = zero
	}
	r.head, r.n = 0, 0
}
