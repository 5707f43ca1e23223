package stack

import (
	"math/rand/v2"
	"testing"

	"github.com/layercast/layercast/event"
)

// TestAppQueueGrowsInOrder drives the application queue, whose ring starts
// small and grows up to its bound, against a slice: requests come out in
// the order they went in across growth and wrap-around, the queue is full
// exactly at its bound, and the ring never exceeds the bound.
func TestAppQueueGrowsInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, bound := range []int{1, 7, 16, 100, 256} {
		q := appQueue{max: bound}
		var model []event.GroupID
		next := event.GroupID(1)
		for step := 0; step < 5000; step++ {
			if q.full() != (len(model) == bound) {
				t.Fatalf("bound %d: full() = %v with %d queued", bound, q.full(), len(model))
			}
			if rng.IntN(3) > 0 && !q.full() { // push more than pop: the queue fills
				q.push(appSend{group: next})
				model = append(model, next)
				next++
			} else {
				a, ok := q.pop()
				if ok != (len(model) > 0) {
					t.Fatalf("bound %d: pop ok %v with %d queued", bound, ok, len(model))
				}
				if ok {
					if a.group != model[0] {
						t.Fatalf("bound %d: popped %d, want %d", bound, a.group, model[0])
					}
					model = model[1:]
				}
			}
			if len(q.buf) > bound {
				t.Fatalf("bound %d: ring of %d", bound, len(q.buf))
			}
		}
		if len(q.buf) != bound {
			t.Fatalf("bound %d: the ring grew to %d only, though the queue filled", bound, len(q.buf))
		}
	}
}
