package sim

import (
	"math/bits"
	"slices"
	"unsafe"

	"github.com/layercast/layercast/internal/prefetch"

	"github.com/layercast/layercast/stack"
)

// The event queue holds every queued event in (at, seq) order: the next
// few in a short sorted array (ahead), the others in a calendar (cal),
// which in a small network is a heap alone. Every event in ahead comes
// before every event in the calendar, so
// ahead[i] is the event handled i+1 steps after the one just popped,
// unless an earlier one is pushed meanwhile. Knowing that, the network
// prepares the memory of the next several steps while it handles one
// (prefetchNext). The order is exactly (at, seq), seq counting pushes.

// aheadLen is how many of the next events ahead holds: one for each step
// of prefetchNext's pipeline (node, stack, stack's pointers, then the
// stack's layers' stages).
const aheadLen = 3 + stack.WarmStages

// evQueue is the network's event queue.
type evQueue struct {
	// ahead is a ring of the next events, sorted from ahead[ah]: an
	// event leaves it by moving ah on, not by shifting the others (each
	// step pops one). an is how many it holds.
	ahead  [aheadCap]simEvent
	ah, an int
	cal    calendar
	// depth is how many events ahead holds when the calendar has them:
	// aheadLen from the network size at which prefetchNext runs, 0 below
	// it (where keeping ahead would cost without paying). See setDepth.
	depth int
	// heapOnly keeps the calendar's buckets off whatever the depth
	// (tests compare the two).
	heapOnly bool
}

// aheadCap is ahead's size: a power of two, at least aheadLen.
const aheadCap = 8

const _ = uint(aheadCap - aheadLen) // aheadCap >= aheadLen

// at is the i-th next event in ahead (i < an).
func (q *evQueue) at(i int) *simEvent { return &q.ahead[(q.ah+i)&(aheadCap-1)] }

// setDepth sets depth; from a non-zero depth (a large network) the
// calendar uses its buckets, below it (a network whose events all stay in
// the CPU's caches, where sorting buckets costs more than a heap) its heap
// alone.
func (q *evQueue) setDepth(d int) {
	q.depth = d
	q.cal.setBuckets(d > 0 && !q.heapOnly)
}

func before(a, b *simEvent) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

func cmpEvent(a, b simEvent) int {
	if a.at != b.at {
		if a.at < b.at {
			return -1
		}
		return 1
	}
	if a.seq < b.seq {
		return -1
	}
	return 1
}

// len is the number of queued events.
func (q *evQueue) len() int { return q.an + q.cal.n }

// push queues e, numbering it after every event pushed before.
func (n *Network) push(e simEvent) {
	n.seq++
	e.seq = n.seq
	q := &n.q
	k := q.an
	if k == 0 || !before(&e, q.at(k-1)) {
		q.cal.push(e)
		return
	}
	// e comes before ahead's last: it goes into ahead, and when ahead is
	// full its last moves to the calendar, where it comes first.
	if k == q.depth {
		k--
		last := q.at(k)
		q.cal.push(*last)
		*last = simEvent{}
		q.an = k
	}
	i := k
	for i > 0 && before(&e, q.at(i-1)) {
		*q.at(i) = *q.at(i - 1)
		i--
	}
	*q.at(i) = e
	q.an++
}

// peek is the next event, or nil if none is queued.
func (q *evQueue) peek() *simEvent {
	if q.an == 0 && q.depth > 0 {
		q.fill()
	}
	if q.an > 0 {
		return &q.ahead[q.ah]
	}
	return q.cal.peek()
}

// pop removes and returns the next event; the queue must not be empty.
func (n *Network) pop() simEvent {
	q := &n.q
	if q.an == 0 {
		if q.depth == 0 {
			return q.cal.pop()
		}
		q.fill()
	}
	h := &q.ahead[q.ah]
	e := *h
	*h = simEvent{} // drop the packet and node it held
	q.ah = (q.ah + 1) & (aheadCap - 1)
	q.an--
	q.fill()
	return e
}

// fill moves the calendar's first events into ahead until it holds depth.
func (q *evQueue) fill() {
	for q.an < q.depth && q.cal.n > 0 {
		*q.at(q.an) = q.cal.pop()
		q.an++
	}
}

// The calendar is a bucketed queue (Brown's calendar queue, with a fixed
// bucket width): time is cut into buckets of calWidth, and a ring of
// calBuckets of them holds the events of the next calBuckets buckets,
// unsorted, in push order; later events wait in a heap (far). The bucket
// due next is sorted when its turn comes and handed out from the sorted
// array (cur). A push or a pop then touches a line or two of memory where
// a heap of tens of thousands of events (every group's digest in flight at
// once, with thousands of nodes) touched a dozen, most of them cold.
//
// Without buckets (calendar.buckets false) every event is in far.
//
// Invariant: every event in cur comes before every event in the ring,
// and every event in the ring before every event in far. cur holds the
// events of buckets up to b0 (sorted from head on), the ring those of
// buckets b0+1 to b0+calBuckets-1 (slot: bucket mod calBuckets), far
// the later ones.
type calendar struct {
	cur  []simEvent // sorted; cur[head:] are queued
	head int
	b0   int64 // the bucket cur was taken from
	n    int   // events queued in cur, ring and far
	// ring holds the buckets after b0; occ has bit s set when ring[s] is
	// not empty, inRing counts the events in it.
	ring   [][]simEvent
	occ    []uint64
	inRing int
	far    []simEvent // 4-ary heap; sifting moves a hole instead of swapping
	// free holds emptied bucket arrays by size class (capacity
	// calMinCap<<k), so that steady state allocates nothing.
	free    [calClasses][][]simEvent
	buckets bool
	// keys and tmp are sortKeyed's scratch arrays, kept for reuse.
	keys []uint64
	tmp  []simEvent
}

// setBuckets turns the buckets on or off, keeping the queued events.
func (c *calendar) setBuckets(on bool) {
	if on == c.buckets {
		return
	}
	var all []simEvent
	for c.n > 0 {
		all = append(all, c.pop())
	}
	c.buckets = on
	for _, e := range all {
		c.push(e)
	}
}

const (
	// calShift sets the bucket width, 1<<calShift ns (about 4 µs): a few
	// events per bucket at a thousand nodes' packet rate.
	calShift = 12
	// calBuckets is the ring's size (a power of two): it spans about 34
	// ms, beyond the usual latencies, jitters and send periods; timers
	// further away wait in far.
	calBuckets = 1 << 13
	calMask    = calBuckets - 1
	calMinCap  = 16
	calClasses = 24
)

func bucketOf(e *simEvent) int64 { return int64(e.at) >> calShift }

// push queues e; its seq must be above every queued event's.
func (c *calendar) push(e simEvent) {
	c.n++
	if !c.buckets {
		c.farPush(e)
		return
	}
	b := bucketOf(&e)
	switch {
	case b <= c.b0:
		c.insertCur(e)
	case b < c.b0+calBuckets:
		c.ringAdd(int(b&calMask), e)
	default:
		c.farPush(e)
	}
}

// insertCur puts e in its place in cur. Every queued event of cur comes
// before any other queued event, and e (the last pushed, or an event
// moved back from ahead) before those.
func (c *calendar) insertCur(e simEvent) {
	rest := c.cur[c.head:]
	i := len(rest)
	if i > 0 && before(&e, &rest[i-1]) {
		i, _ = slices.BinarySearchFunc(rest, e, cmpEvent)
	}
	if i == 0 && c.head > 0 {
		c.head--
		c.cur[c.head] = e
		return
	}
	c.cur = append(c.cur, simEvent{})
	copy(c.cur[c.head+i+1:], c.cur[c.head+i:])
	c.cur[c.head+i] = e
}

// ringAdd appends e to the ring's slot s.
func (c *calendar) ringAdd(s int, e simEvent) {
	if c.ring == nil {
		c.ring = make([][]simEvent, calBuckets)
		c.occ = make([]uint64, calBuckets/64)
	}
	b := c.ring[s]
	if len(b) == cap(b) {
		b = c.grow(b)
	}
	c.ring[s] = append(b, e)
	c.occ[s/64] |= 1 << (s % 64)
	c.inRing++
}

// grow returns an array of the next size class holding b's events, and
// gives b's array back.
func (c *calendar) grow(b []simEvent) []simEvent {
	k := 0
	if cap(b) > 0 {
		k = classOf(cap(b)) + 1
	}
	nb := c.take(k)
	nb = append(nb, b...)
	clear(b) // drop the packets and nodes it held
	c.give(b)
	return nb
}

// classOf is the size class of an array of capacity n (at least calMinCap).
func classOf(n int) int { return bits.Len(uint(n/calMinCap)) - 1 }

// take returns an empty array of class k.
func (c *calendar) take(k int) []simEvent {
	if k < calClasses {
		if f := c.free[k]; len(f) > 0 {
			b := f[len(f)-1]
			f[len(f)-1] = nil
			c.free[k] = f[:len(f)-1]
			return b
		}
	}
	return make([]simEvent, 0, calMinCap<<k)
}

// give keeps b's array, which must hold no events (zero values), for
// reuse.
func (c *calendar) give(b []simEvent) {
	if cap(b) < calMinCap {
		return
	}
	if k := classOf(cap(b)); k < calClasses {
		c.free[k] = append(c.free[k], b[:0])
	}
}

// peek is the next event, or nil.
func (c *calendar) peek() *simEvent {
	if !c.buckets {
		if c.n == 0 {
			return nil
		}
		return &c.far[0]
	}
	if c.head == len(c.cur) && !c.advance() {
		return nil
	}
	return &c.cur[c.head]
}

// pop removes and returns the next event; the calendar must not be empty.
func (c *calendar) pop() simEvent {
	if !c.buckets {
		c.n--
		return c.farPop()
	}
	if c.head == len(c.cur) {
		c.advance()
	}
	e := c.cur[c.head]
	c.cur[c.head] = simEvent{}
	c.head++
	c.n--
	return e
}

// advance makes the next bucket that holds events cur, once cur is empty;
// it reports false when nothing is queued.
func (c *calendar) advance() bool {
	if c.n == 0 {
		return false
	}
	var nb int64
	if c.inRing > 0 {
		nb = c.b0 + 1 + int64(c.nextOcc(int((c.b0+1)&calMask)))
	} else {
		nb = bucketOf(&c.far[0])
	}
	c.give(c.cur)
	c.cur, c.head = nil, 0
	c.b0 = nb
	if s := int(nb & calMask); c.inRing > 0 && c.occ[s/64]&(1<<(s%64)) != 0 {
		c.cur = c.ring[s]
		c.ring[s] = nil
		c.occ[s/64] &^= 1 << (s % 64)
		c.inRing -= len(c.cur)
	}
	// the window moved: far events within it join the ring (or cur)
	for len(c.far) > 0 && bucketOf(&c.far[0]) < nb+calBuckets {
		e := c.farPop()
		if b := bucketOf(&e); b == nb {
			if len(c.cur) == cap(c.cur) {
				c.cur = c.grow(c.cur)
			}
			c.cur = append(c.cur, e)
		} else {
			c.ringAdd(int(b&calMask), e)
		}
	}
	c.sortEvents(c.cur)
	c.warmNext(nb)
	return true
}

// warmNext asks the CPU to load the events of the first occupied bucket
// after b, which advance sorts when the one it just took is used up: a
// bucket is filled up to a few milliseconds before its turn, and with
// thousands of nodes its events have left the caches by then (sorting
// them waited for memory, event after event). It changes nothing.
func (c *calendar) warmNext(b int64) {
	if c.inRing == 0 {
		return
	}
	s := int((b + 1) & calMask)
	s = (s + c.nextOcc(s)) & calMask
	a := c.ring[s]
	n := (len(a)*int(unsafe.Sizeof(simEvent{})) + prefetch.LineSize - 1) / prefetch.LineSize
	prefetch.Lines(unsafe.Pointer(unsafe.SliceData(a)), min(n, warmBucketLines))
}

// warmBucketLines bounds how many lines of a bucket warmNext asks for at
// once: more hints than the CPU can track would stall the step.
const warmBucketLines = 16

// sortEvents sorts a bucket's events by (at, seq). A bucket holds a few
// events, mostly in seq order: insertion sort, unless it is long; a long
// one (every group's digests in flight at once, hundreds of events a
// bucket at thousands of nodes) is sorted by keys (sortKeyed).
func (c *calendar) sortEvents(a []simEvent) {
	if len(a) > 48 {
		c.sortKeyed(a)
		return
	}
	insertionSort(a)
}

// sortKeyed sorts a by (at, seq) through an array of integer keys, each
// an event's time within the bucket and its index, which sort without a
// comparison function and move 8 bytes where the events are 40: about
// three times faster than sorting the events themselves. Events of one
// time come out in index order; the final insertion sort puts them in seq
// order (they almost always are already: the bucket holds them in push
// order).
func (c *calendar) sortKeyed(a []simEvent) {
	base := a[0].at
	for i := range a {
		base = min(base, a[i].at)
	}
	keys := c.keys[:0]
	for i := range a {
		off := uint64(a[i].at - base)
		if off >= 1<<(64-keyIdxBits) || len(a) > 1<<keyIdxBits {
			// not one bucket's span (cannot happen) or too many
			// events for the key: sort the events themselves
			slices.SortFunc(a, cmpEvent)
			return
		}
		keys = append(keys, off<<keyIdxBits|uint64(i))
	}
	slices.Sort(keys)
	tmp := append(c.tmp[:0], a...)
	for i, k := range keys {
		a[i] = tmp[k&(1<<keyIdxBits-1)]
	}
	clear(tmp) // drop the packets and nodes it held
	c.keys, c.tmp = keys[:0], tmp[:0]
	insertionSort(a)
}

// keyIdxBits is how many low bits of a sortKeyed key hold the index.
const keyIdxBits = 24

// insertionSort sorts a by (at, seq); fast when a is nearly sorted.
func insertionSort(a []simEvent) {
	for i := 1; i < len(a); i++ {
		if !before(&a[i], &a[i-1]) {
			continue
		}
		e := a[i]
		j := i - 1
		for j > 0 && before(&e, &a[j-1]) {
			j--
		}
		copy(a[j+1:i+1], a[j:i])
		a[j] = e
	}
}

// nextOcc is how many slots after s (s itself counting 0) the first
// occupied slot of the ring lies; the ring must hold an event.
func (c *calendar) nextOcc(s int) int {
	w := s / 64
	if m := c.occ[w] >> (s % 64); m != 0 {
		return bits.TrailingZeros64(m)
	}
	d := 64 - s%64
	for i := 1; ; i++ {
		if m := c.occ[(w+i)%len(c.occ)]; m != 0 {
			return d + bits.TrailingZeros64(m)
		}
		d += 64
	}
}

func (c *calendar) farPush(e simEvent) {
	c.far = append(c.far, e)
	h := c.far
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

func (c *calendar) farPop() simEvent {
	h := c.far
	top := h[0]
	last := len(h) - 1
	e := h[last]
	h[last] = simEvent{}
	h = h[:last]
	c.far = h
	if last == 0 {
		return top
	}
	i := 0
	for {
		ch := 4*i + 1
		if ch >= last {
			break
		}
		m := ch
		end := min(ch+4, last)
		for j := ch + 1; j < end; j++ {
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
