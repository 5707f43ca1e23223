package sim_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
	"github.com/layercast/layercast/transport/sim"
)

// A network large enough for the calendar's buckets runs exactly as with
// a heap alone: the same deliveries at the same times, the same timer
// firings (some further away than the calendar's ring spans) and the
// same counts, with loss, jitter and some nodes' capacity queueing.
func TestCalendarRunsAsHeap(t *testing.T) {
	const n = 80 // above the size from which the network uses buckets
	cfg := sim.Config{Seed: 5, Latency: time.Millisecond, Jitter: 300 * time.Microsecond, Loss: sim.Uniform{P: 0.05}}
	run := func(heapOnly bool) (*harness, [][]event.Time) {
		var tickers []*testkit.Ticker
		h := newHarness(t, cfg, n, func(id event.NodeID) []stack.Entry {
			tk := &testkit.Ticker{Period: time.Duration(40+int(id)%7) * time.Millisecond}
			tickers = append(tickers, tk)
			return []stack.Entry{{Name: "ticker", Layer: tk}}
		})
		if heapOnly {
			h.net.HeapOnly()
		}
		for id := event.NodeID(1); id <= 4; id++ {
			h.net.SetCapacity(id, sim.Capacity{SendPPS: 20000, SendQueue: 64, RecvPPS: 30000, RecvBuffer: 64})
		}
		h.every(ms(1), 37*time.Microsecond, 3000, func(i int) { h.cast(event.NodeID(1+i%9), "m") })
		h.net.RunUntil(ms(300))
		fired := make([][]event.Time, len(tickers))
		for i, tk := range tickers {
			fired[i] = tk.Fired
		}
		return h, fired
	}
	heap, heapFired := run(true)
	cal, calFired := run(false)
	if heap.net.Stats() != cal.net.Stats() {
		t.Fatalf("stats with buckets %+v, with a heap alone %+v", cal.net.Stats(), heap.net.Stats())
	}
	if !reflect.DeepEqual(heap.got, cal.got) {
		t.Fatal("deliveries with buckets differ from a heap alone's")
	}
	if !reflect.DeepEqual(heapFired, calFired) {
		t.Fatal("timers with buckets fired otherwise than with a heap alone")
	}
	if d := cal.net.Stats().Deliveries; d < 3000*(n-1)/2 {
		t.Fatalf("only %d deliveries: the run is not the one meant", d)
	}
}
