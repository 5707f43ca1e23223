package stack

import "github.com/layercast/layercast/event"

// TimerID identifies a pending timer for cancellation. The zero TimerID is
// never issued, so it can mean "no timer".
type TimerID uint64

// timerSlot is one timer; slots are reused through a free list and a
// generation number makes stale TimerIDs harmless.
type timerSlot struct {
	at    event.Time
	seq   uint64 // ties broken by order of setting, for determinism
	layer int
	key   uint64
	gen   uint32
	hidx  int // position in the heap, -1 if not queued
}

// timerQueue is one priority queue of timers per stack (an indexed binary
// heap over slots), allocation-free in steady state.
type timerQueue struct {
	slots []timerSlot
	free  []int32
	heap  []int32
	seq   uint64
}

func (q *timerQueue) less(a, b int32) bool {
	sa, sb := &q.slots[a], &q.slots[b]
	if sa.at != sb.at {
		return sa.at < sb.at
	}
	return sa.seq < sb.seq
}

func (q *timerQueue) swap(i, j int) {
	q.heap[i], q.heap[j] = q.heap[j], q.heap[i]
	q.slots[q.heap[i]].hidx = i
	q.slots[q.heap[j]].hidx = j
}

func (q *timerQueue) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(q.heap[i], q.heap[p]) {
			break
		}
		q.swap(i, p)
		i = p
	}
}

func (q *timerQueue) down(i int) {
	n := len(q.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && q.less(q.heap[r], q.heap[l]) {
			m = r
		}
		if !q.less(q.heap[m], q.heap[i]) {
			return
		}
		q.swap(i, m)
		i = m
	}
}

func (q *timerQueue) add(at event.Time, layer int, key uint64) TimerID {
	var s int32
	if n := len(q.free); n > 0 {
		s = q.free[n-1]
		q.free = q.free[:n-1]
	} else {
		q.slots = append(q.slots, timerSlot{})
		s = int32(len(q.slots) - 1)
	}
	q.seq++
	sl := &q.slots[s]
	sl.gen++
	sl.at, sl.seq, sl.layer, sl.key = at, q.seq, layer, key
	sl.hidx = len(q.heap)
	q.heap = append(q.heap, s)
	q.up(sl.hidx)
	return TimerID(uint64(sl.gen)<<32 | uint64(s) + 1)
}

func (q *timerQueue) remove(s int32) {
	i := q.slots[s].hidx
	last := len(q.heap) - 1
	if i != last {
		q.swap(i, last)
	}
	q.heap = q.heap[:last]
	if i != last {
		q.down(i)
		q.up(i)
	}
	q.slots[s].hidx = -1
	q.free = append(q.free, s)
}

func (q *timerQueue) cancel(id TimerID) {
	if id == 0 {
		return
	}
	raw := uint64(id)
	s := int32(uint32(raw) - 1)
	gen := uint32(raw >> 32)
	if s < 0 || int(s) >= len(q.slots) {
		return
	}
	sl := &q.slots[s]
	if sl.gen != gen || sl.hidx < 0 {
		return
	}
	q.remove(s)
}

// next is the earliest deadline, or event.Never.
func (q *timerQueue) next() event.Time {
	if len(q.heap) == 0 {
		return event.Never
	}
	return q.slots[q.heap[0]].at
}

// pop removes the earliest timer if it is due at now.
func (q *timerQueue) pop(now event.Time) (layer int, key uint64, ok bool) {
	if len(q.heap) == 0 {
		return 0, 0, false
	}
	s := q.heap[0]
	sl := &q.slots[s]
	if sl.at > now {
		return 0, 0, false
	}
	layer, key = sl.layer, sl.key
	q.remove(s)
	return layer, key, true
}

// Len is the number of pending timers.
func (q *timerQueue) Len() int { return len(q.heap) }
