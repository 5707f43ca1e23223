package seqwin

// Slots is a reorder buffer: values for the offsets 0..Max-1 past a
// stream's next expected number (offset 0 is that number), on a ring that
// grows by doubling, from 16 slots, up to Max. The zero value of T marks an
// empty slot. The owner keeps the stream's next number and moves the
// window with Advance and Skip.
type Slots[T comparable] struct {
	buf  []T
	head int
	n    int // values held
	// Max bounds the window (the owner's configured reorder bound).
	Max int
}

// Len is the number of values held.
func (s *Slots[T]) Len() int { return s.n }

func (s *Slots[T]) index(off int) int {
	i := s.head + off
	if i >= len(s.buf) {
		i -= len(s.buf)
	}
	return i
}

// Get returns the value at offset off (the zero value if none, or if off
// is outside the window).
func (s *Slots[T]) Get(off int) T {
	if off < 0 || off >= len(s.buf) {
		var zero T
		return zero
	}
	return s.buf[s.index(off)]
}

// Put stores v (not the zero value) at offset off, growing the ring if
// needed. It reports false, storing nothing, if the slot is taken or off is
// outside 0..Max-1.
func (s *Slots[T]) Put(off int, v T) bool {
	if off < 0 || off >= s.Max {
		return false
	}
	if off >= len(s.buf) {
		n := max(16, len(s.buf))
		for n <= off {
			n *= 2
		}
		s.resize(min(n, s.Max))
	}
	var zero T
	i := s.index(off)
	if s.buf[i] != zero {
		return false
	}
	s.buf[i] = v
	s.n++
	return true
}

func (s *Slots[T]) resize(n int) {
	nb := make([]T, n)
	for i := range s.buf {
		nb[i] = s.buf[s.index(i)]
	}
	s.buf, s.head = nb, 0
}

// Advance moves the window one number forward and returns what was at
// offset 0 (the zero value if nothing).
func (s *Slots[T]) Advance() T {
	var zero T
	if len(s.buf) == 0 {
		return zero
	}
	v := s.buf[s.head]
	if v != zero {
		s.buf[s.head] = zero
		s.n--
	}
	s.head = s.index(1)
	return v
}

// Skip moves the window k numbers forward; the slots it passes must be
// empty (see FirstHeld).
func (s *Slots[T]) Skip(k int) {
	if s.n == 0 || len(s.buf) == 0 {
		s.head = 0
		return
	}
	s.head = (s.head + k) % len(s.buf)
}

// FirstHeld is the lowest offset holding a value, -1 if none.
func (s *Slots[T]) FirstHeld() int {
	if s.n == 0 {
		return -1
	}
	var zero T
	for off := 0; ; off++ {
		if s.buf[s.index(off)] != zero {
			return off
		}
	}
}

// Clear calls f (if not nil) with every value held, lowest offset first,
// and empties the buffer.
func (s *Slots[T]) Clear(f func(T)) {
	var zero T
	for off := 0; off < len(s.buf) && s.n > 0; off++ {
		i := s.index(off)
		if s.buf[i] != zero {
			if f != nil {
				f(s.buf[i])
			}
			s.buf[i] = zero
			s.n--
		}
	}
	s.head = 0
}
