package sim_test

import (
	"testing"
	"time"

	"github.com/layercast/layercast/transport/sim"
)

// With UnicastFirst, a packet sent to the node alone is taken out of the
// receive side before the multicasts queued ahead of it (QSM's second
// socket and priority queues); without it, it waits its turn behind them.
func TestUnicastFirstOvertakesQueuedMulticast(t *testing.T) {
	for _, first := range []bool{false, true} {
		h := newHarness(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 3, nil)
		h.net.SetCapacity(2, sim.Capacity{RecvPPS: 1000, RecvBuffer: 500, UnicastFirst: first})
		// 200 multicasts at once from node 1 (node 2 takes 1 a ms), then
		// a unicast from node 3 while they wait.
		h.every(0, 0, 200, func(int) { h.cast(1, "m") })
		h.net.At(ms(10), func() {
			if err := h.stacks[3].Send(2, []byte("u")); err != nil {
				t.Fatal(err)
			}
		})
		h.net.Run(time.Second)
		got := h.got[2]
		if len(got) != 201 {
			t.Fatalf("unicast first %v: node 2 delivered %d packets, want 201", first, len(got))
		}
		pos := -1
		for i, r := range got {
			if r.body == "u" {
				pos = i
			}
		}
		switch {
		case first && (pos > 12 || got[pos].at > ms(13)):
			t.Errorf("unicast first: the unicast was delivered %dth at %v, want about 11th at 12 ms (ahead of the queued multicasts)", pos+1, got[pos].at)
		case !first && pos != 200:
			t.Errorf("one buffer: the unicast was delivered %dth, want last (behind the 200 multicasts queued before it)", pos+1)
		}
		if ns := h.net.NodeStats(2); ns.OverflowDrops != 0 {
			t.Errorf("unicast first %v: %d overflow drops, want 0", first, ns.OverflowDrops)
		}
	}
}

// The capacity syntax turns it on and off.
func TestParseCapacityUnicastFirst(t *testing.T) {
	c, err := sim.ParseCapacity("recv_pps=1000, unicast_first=on")
	if err != nil || !c.UnicastFirst || c.RecvPPS != 1000 {
		t.Errorf("ParseCapacity(unicast_first=on) = %+v, %v; want UnicastFirst and 1000 pps", c, err)
	}
	if _, err := sim.ParseCapacity("unicast_first=maybe"); err == nil {
		t.Error("ParseCapacity(unicast_first=maybe): no error, want one")
	}
}
