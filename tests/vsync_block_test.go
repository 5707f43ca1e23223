package tests

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
)

// Issue 15 item 1: the application is told of a flush through a callback.
// On specs/vsync.stack with its membership service, a member crashes while
// everyone casts: every survivor's application hears Block, then the view
// without the crashed member, then Unblock (stack.BlockReporter), and
// casting goes on after it.
func TestVsyncBlockBeforeViewUnblockAfter(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			h := newVsyncNet(t, "../specs/vsync.stack", seed, 4)
			start, end := h.castAll(10*time.Millisecond, 3*time.Second)
			for id := event.NodeID(1); id <= 3; id++ {
				h.order[id] = nil
			}
			h.net.At(start.Add(time.Second), func() { h.net.Crash(4) })
			h.net.RunUntil(end.Add(2 * time.Second))
			for id := event.NodeID(1); id <= 3; id++ {
				vs := h.views[id]
				last := vs[len(vs)-1]
				if last.Has(4) {
					t.Fatalf("n%d's last view %v still has the crashed n4", id, last.Members)
				}
				want := []string{"block", fmt.Sprint("view ", last.ID), "unblock"}
				if got := h.order[id]; !slices.Equal(got, want) {
					t.Errorf("n%d's application saw %q, want %q", id, got, want)
				}
				if n, err := h.accounted(id, id%3+1); err != nil || n != 0 {
					t.Errorf("accounted(n%d, n%d) = %d, %v: casting did not go on after Unblock", id, id%3+1, n, err)
				}
			}
		})
	}
}
