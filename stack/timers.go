package stack

import (
	"time"

	"github.com/layercast/layercast/event"
)

// Timer is a timer a layer owns: made once with Context.NewTimer, then set,
// moved and stopped as often as the layer likes. When it expires the stack
// calls its function, as one step of the layer's state machine (on the
// stack's goroutine, processed as control, before data).
//
// A Timer is reused, not re-made: Reset of an existing timer allocates
// nothing. It lives in the stack's one priority queue, on the stack's clock.
type Timer struct {
	q    *timerQueue
	fn   func()
	at   event.Time
	seq  uint64 // ties broken by order of setting, for determinism
	hidx int    // position in the heap, -1 if not pending
}

// Reset (re)arms the timer to fire after d (a negative d counts as zero). A
// pending timer is moved, not duplicated.
func (t *Timer) Reset(d time.Duration) {
	if d < 0 {
		d = 0
	}
	t.ResetAt(t.q.st.now + event.Time(d))
}

// ResetAt (re)arms the timer to fire at time at.
func (t *Timer) ResetAt(at event.Time) { t.q.set(t, at) }

// Follow keeps the timer on a deadline that a state machine recomputes
// after every step: armed at at, or stopped if at is event.Never. A timer
// already pending at at is left as it is (and keeps its place among ties).
func (t *Timer) Follow(at event.Time) {
	switch {
	case at == event.Never:
		t.Stop()
	case !t.Pending() || t.at != at:
		t.ResetAt(at)
	}
}

// Stop disarms the timer. It reports whether the timer was pending; stopping
// a stopped or fired timer does nothing.
func (t *Timer) Stop() bool {
	if t.hidx < 0 {
		return false
	}
	t.q.remove(t)
	return true
}

// Pending reports whether the timer is armed and has not fired.
func (t *Timer) Pending() bool { return t.hidx >= 0 }

// When is the time the timer fires, if it is pending.
func (t *Timer) When() event.Time { return t.at }

// timerQueue is one priority queue of timers per stack (an indexed binary
// heap of timer handles), allocation-free in steady state.
type timerQueue struct {
	st   *Stack
	heap []*Timer
	seq  uint64
	// first caches next() while fresh: the simulator asks every stack it
	// stepped for its next deadline, and most steps set no timer, so the
	// answer need not read the heap's (cold) top timer again.
	first event.Time
	fresh bool
}

func (q *timerQueue) less(a, b *Timer) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

func (q *timerQueue) swap(i, j int) {
	q.heap[i], q.heap[j] = q.heap[j], q.heap[i]
	q.heap[i].hidx = i
	q.heap[j].hidx = j
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

// set arms t at at, moving it if it is pending.
func (q *timerQueue) set(t *Timer, at event.Time) {
	q.fresh = false
	q.seq++
	t.at, t.seq = at, q.seq
	if t.hidx >= 0 {
		// A later seq never sorts earlier at the same time, so fixing both
		// ways covers a move in either direction.
		q.down(t.hidx)
		q.up(t.hidx)
		return
	}
	t.hidx = len(q.heap)
	q.heap = append(q.heap, t)
	q.up(t.hidx)
}

func (q *timerQueue) remove(t *Timer) {
	q.fresh = false
	i := t.hidx
	last := len(q.heap) - 1
	if i != last {
		q.swap(i, last)
	}
	q.heap[last] = nil
	q.heap = q.heap[:last]
	if i != last {
		q.down(i)
		q.up(i)
	}
	t.hidx = -1
}

// fire runs a timer taken from the queue.
func (q *timerQueue) fire(t *Timer) { t.fn() }

// next is the earliest deadline, or event.Never.
func (q *timerQueue) next() event.Time {
	if !q.fresh {
		q.first, q.fresh = event.Never, true
		if len(q.heap) > 0 {
			q.first = q.heap[0].at
		}
	}
	return q.first
}

// pop removes the earliest timer if it is due at now.
func (q *timerQueue) pop(now event.Time) *Timer {
	if q.next() > now {
		return nil
	}
	t := q.heap[0]
	q.remove(t)
	return t
}

// Len is the number of pending timers.
func (q *timerQueue) Len() int { return len(q.heap) }
