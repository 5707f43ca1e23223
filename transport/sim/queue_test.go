package sim

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/layercast/layercast/event"
)

// The queue hands events out in (at, seq) order, whatever the mix of
// pushes (before, among and after the events it holds ahead; in the
// calendar's current bucket, in its ring and beyond it; with its
// buckets, without, and turned on midway) and pops,
// and ahead always holds the next events in that order: checked against
// a sorted list, with lookahead (a large network) and without.
func TestQueueOrderAndLookahead(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		n := &Network{}
		if seed%4 == 1 || seed%4 == 2 {
			n.q.setDepth(aheadLen)
		}
		var ref []simEvent // what the queue should hold, sorted
		now := event.Time(0)
		for step := 0; step < 3000; step++ {
			if seed%4 == 3 && step == 1500 {
				// a network that grows large: the calendar takes up
				// its buckets with events queued
				n.q.setDepth(aheadLen)
			}
			if rng.IntN(3) > 0 || len(ref) == 0 {
				// times cluster near now, so pushes land in ahead
				// as well as in the calendar's current bucket, and
				// some share a time; others fall in later buckets of
				// the ring, or beyond it (far)
				at := now + event.Time(rng.IntN(40))
				switch rng.IntN(8) {
				case 0, 1, 2:
					at = now + event.Time(rng.IntN(4<<calShift))
				case 3:
					at = now + event.Time(rng.IntN(3*calBuckets<<calShift))
				}
				n.push(simEvent{at: at, arg: uint32(step)})
				e := simEvent{at: at, seq: n.seq, arg: uint32(step)}
				i, _ := slices.BinarySearchFunc(ref, e, func(a, b simEvent) int {
					if before(&a, &b) {
						return -1
					}
					return 1
				})
				ref = slices.Insert(ref, i, e)
			} else {
				e := n.pop()
				if e.at != ref[0].at || e.seq != ref[0].seq {
					t.Fatalf("seed %d step %d: pop() = (at %d, seq %d), want (at %d, seq %d)", seed, step, e.at, e.seq, ref[0].at, ref[0].seq)
				}
				ref = ref[1:]
				now = e.at
				for i := range n.q.an {
					a := n.q.at(i)
					if a.seq != ref[i].seq {
						t.Fatalf("seed %d step %d: ahead[%d] has seq %d, want the next event's seq %d", seed, step, i, a.seq, ref[i].seq)
					}
				}
				if want := min(len(ref), n.q.depth); n.q.an != want {
					t.Fatalf("seed %d step %d: ahead holds %d events, want %d", seed, step, n.q.an, want)
				}
			}
			if n.q.len() != len(ref) {
				t.Fatalf("seed %d step %d: len() = %d, want %d", seed, step, n.q.len(), len(ref))
			}
		}
	}
}

// A long bucket sorted by keys comes out in (at, seq) order, as sorting
// the events themselves gives: times within one bucket, many shared,
// seqs in push order or not (events moved back from ahead or from the
// far heap).
func TestSortKeyedMatchesSortFunc(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 0))
	var c calendar
	for round := 0; round < 200; round++ {
		n := 49 + rng.IntN(500)
		base := event.Time(rng.Int64N(1<<40)) &^ (1<<calShift - 1)
		a := make([]simEvent, n)
		for i := range a {
			a[i] = simEvent{at: base + event.Time(rng.IntN(1<<calShift)), seq: uint64(1000 + i), arg: uint32(i)}
			if round%2 == 0 {
				a[i].at = base + event.Time(rng.IntN(8)) // many ties
			}
			if rng.IntN(10) == 0 {
				a[i].seq = uint64(rng.IntN(1000)) // out of push order
			}
		}
		want := slices.Clone(a)
		slices.SortFunc(want, cmpEvent)
		c.sortEvents(a)
		for i := range a {
			if a[i].at != want[i].at || a[i].seq != want[i].seq {
				t.Fatalf("round %d: event %d is (at %d, seq %d), want (at %d, seq %d)", round, i, a[i].at, a[i].seq, want[i].at, want[i].seq)
			}
		}
	}
}
