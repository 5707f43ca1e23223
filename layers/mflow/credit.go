package mflow

import "github.com/layercast/layercast/internal/ring"

// credits is one sender's window over its n-1 receivers in one group: the
// "one sender, n-1 receivers" instance of MFLOW section 2.1, in the shape of
// etcd-io/raft's tracker.Inflights (a small ring-backed structure with
// Full/Add/Free operations), specialised the way Ensemble's mcredit is.
//
// Credit is kept as an absolute limit per receiver: the sender may have sent
// at most limit[r] bytes (weighted) in total while receiver r is the least
// credited one. Sending costs O(1) (only the sender's running total moves),
// and an acknowledgement adds its bulk amount to one limit.
//
// The least-credited receiver is found in constant time. Receivers are kept
// in rotation order (view order, skipping the sender). Staggered initial
// limits differ by less than ack_thresh and every receiver acknowledges
// every ack_thresh bytes on its own lattice of positions, so the limits,
// read in rotation order from the least one, are non-decreasing and the
// minimum moves round robin: after the minimum's acknowledgement is applied,
// the next receiver in rotation is the new minimum. An acknowledgement from
// any other receiver is queued until its turn (Ensemble's mcredit). Each
// applied acknowledgement is checked to keep that order (the new limit is at
// least the largest one); if it does not (after a view change, or a peer
// that does not follow the lattice), the structure falls back to applying
// every acknowledgement at once and scanning for the minimum (O(n)) until
// the order holds again. Queued acknowledgements only delay credit, so the
// fast path is never less safe than the scan: the property test checks both
// give the same minimum.
type credits struct {
	limit []int64
	pend  []ackRing
	p     int  // slot of the least-credited receiver (fast mode)
	fast  bool // the rotation invariant holds
	// noFast keeps the O(n) mode (set by the sender while receivers are
	// between views).
	noFast bool
	sent   int64
}

// reset starts a fresh instance for m receivers with the given initial
// limits (window + stagger offset each, plus the sender's position).
func (c *credits) reset(limits []int64) {
	m := len(limits)
	if cap(c.limit) < m {
		c.limit = make([]int64, m)
		c.pend = make([]ackRing, m)
	}
	c.limit = c.limit[:m]
	c.pend = c.pend[:m]
	copy(c.limit, limits)
	for i := range c.pend {
		c.pend[i].reset()
	}
	c.p = 0
	c.fast = false
	c.tryFast()
}

// credited is receiver slot's limit with its queued acknowledgements
// applied: the credit it has returned so far.
func (c *credits) credited(slot int) int64 { return c.limit[slot] + c.pend[slot].sum }

// size is the number of receivers.
func (c *credits) size() int { return len(c.limit) }

// min returns the least limit and its slot (-1 with no receivers).
func (c *credits) min() (int64, int) {
	if len(c.limit) == 0 {
		return 1<<62 - 1, -1
	}
	if c.fast {
		return c.limit[c.p], c.p
	}
	best := 0
	for i := 1; i < len(c.limit); i++ {
		if c.limit[i] < c.limit[best] {
			best = i
		}
	}
	return c.limit[best], best
}

// ack records a bulk acknowledgement of amount bytes from the receiver in
// slot.
func (c *credits) ack(slot int, amount int64) {
	if amount == 0 {
		// Nothing to apply. Queued, it would take the receiver's turn
		// and leave its real acknowledgements one behind for good.
		return
	}
	if !c.fast {
		c.limit[slot] += amount
		c.tryFast()
		return
	}
	if slot != c.p {
		c.pend[slot].push(amount)
		return
	}
	if c.apply(slot, amount) {
		c.advance()
	}
}

// apply adds amount to the minimum's limit and checks that it now holds
// the largest limit, so the rotation stays sorted. It reports whether the
// fast mode survives.
func (c *credits) apply(slot int, amount int64) bool {
	m := len(c.limit)
	nl := c.limit[slot] + amount
	prev := slot - 1
	if prev < 0 {
		prev = m - 1
	}
	c.limit[slot] = nl
	if m > 1 && nl < c.limit[prev] {
		c.toSlow()
		return false
	}
	return true
}

// advance moves the minimum round robin, applying queued acknowledgements
// of each receiver whose turn it becomes.
func (c *credits) advance() {
	m := len(c.limit)
	for {
		c.p++
		if c.p == m {
			c.p = 0
		}
		a, ok := c.pend[c.p].pop()
		if !ok {
			return
		}
		if !c.apply(c.p, a) {
			return
		}
	}
}

// toSlow applies every queued acknowledgement and leaves fast mode.
func (c *credits) toSlow() {
	c.fast = false
	for i := range c.pend {
		for {
			a, ok := c.pend[i].pop()
			if !ok {
				break
			}
			c.limit[i] += a
		}
	}
}

// tryFast enters fast mode if the limits, in rotation order from the least
// one, are non-decreasing. Only called in slow mode (O(n)).
func (c *credits) tryFast() {
	m := len(c.limit)
	if m == 0 || c.noFast {
		return
	}
	lo, _ := c.min()
	start := -1
	for i := 0; i < m; i++ {
		prev := i - 1
		if prev < 0 {
			prev = m - 1
		}
		if c.limit[i] == lo && c.limit[prev] != lo {
			start = i
			break
		}
	}
	if start < 0 {
		start = 0 // all equal
	}
	for k := 1; k < m; k++ {
		i := (start + k) % m
		j := (start + k - 1) % m
		if c.limit[i] < c.limit[j] {
			return
		}
	}
	c.p = start
	c.fast = true
}

// adjust changes one receiver's limit outside the rotation (a corrected
// offset); the O(n) mode takes over until the order holds again.
func (c *credits) adjust(slot int, delta int64) {
	if c.fast {
		c.toSlow()
	}
	c.limit[slot] += delta
}

// slow leaves fast mode (view changes: until every receiver is known to
// count in the new epoch).
func (c *credits) slow() { c.toSlow() }

// ackRing is a FIFO of queued acknowledgement amounts for one receiver,
// with their total. It grows only when a receiver runs further ahead of the
// minimum than ever before (at most about window/ack_thresh + 2 entries),
// so steady state allocates nothing.
type ackRing struct {
	q   ring.Ring[int64]
	sum int64 // total of the queued amounts
}

func (r *ackRing) reset() { r.q.Clear(); r.sum = 0 }

func (r *ackRing) len() int { return r.q.Len() }

func (r *ackRing) push(a int64) {
	r.q.Push(a)
	r.sum += a
}

func (r *ackRing) pop() (int64, bool) {
	if r.q.Len() == 0 {
		return 0, false
	}
	a := r.q.Pop()
	r.sum -= a
	return a, true
}
