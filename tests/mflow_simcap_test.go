package tests

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/layers/mflow"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

type simCapResult struct {
	sent          int
	delivered     map[event.NodeID]int
	first, last   map[event.NodeID]event.Time
	stats         map[event.NodeID]sim.NodeStats
	senderBlocked int64 // mflow's blocked_by:n4 at the sender, ns
}

// runSimCap: node 1 multicasts 1 KB messages as fast as its NIC (fast
// packets per second) and the stack take them, for d; nodes 2 and 3 take
// in fast packets per second, node 4 a third of that, through the
// simulator's per-node capacity; receive buffers hold 64 KB.
func runSimCap(t *testing.T, names []string, fast float64, d time.Duration) simCapResult {
	t.Helper()
	net := sim.New(sim.Config{Seed: 31, Latency: time.Millisecond})
	r := simCapResult{delivered: map[event.NodeID]int{}, first: map[event.NodeID]event.Time{}, last: map[event.NodeID]event.Time{}, stats: map[event.NodeID]sim.NodeStats{}}
	stacks := map[event.NodeID]*stack.Stack{}
	ok := true
	for id := event.NodeID(1); id <= 4; id++ {
		self := id
		nd := net.AddNode(id)
		c := sim.Capacity{SendPPS: fast, RecvPPS: fast, RecvBufferBytes: 64000}
		if id == 4 {
			c.RecvPPS = fast / 3
		}
		net.SetCapacity(id, c)
		st, err := stack.New(stack.Config{Self: id, Transport: nd, Clock: net, Seed: 2, Layers: buildLayers(t, names, nil),
			App: stack.AppFuncs{
				OnDeliver: func(stack.Delivery) {
					if r.delivered[self] == 0 {
						r.first[self] = net.Now()
					}
					r.delivered[self]++
					r.last[self] = net.Now()
				},
				OnFlow: func(_ event.GroupID, f bool) {
					if self == 1 {
						ok = f
					}
				},
			}})
		if err != nil {
			t.Fatal(err)
		}
		nd.Attach(st)
		stacks[id] = st
	}
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3, 4}}
	for _, st := range stacks {
		st.InstallView(v)
	}
	payload := make([]byte, 1000)
	var tick func()
	tick = func() {
		if net.Now() >= event.Time(d) {
			return
		}
		if ok {
			binary.BigEndian.PutUint64(payload, uint64(r.sent))
			if stacks[1].Cast(1, payload) == nil {
				r.sent++
			}
		}
		net.After(time.Duration(float64(time.Second)/fast), tick)
	}
	net.At(0, tick)
	net.Run(d + 20*time.Second)
	for id := event.NodeID(1); id <= 4; id++ {
		r.stats[id] = net.NodeStats(id)
	}
	for _, lc := range stacks[1].Counters() {
		for i, n := range lc.Names {
			if lc.Layer == "mflow" && n == "blocked_by:n4" {
				r.senderBlocked = lc.Values[i]
			}
		}
	}
	return r
}

// TestMflowSlowReceiverSimCapacity is the slow-receiver check on the
// simulator's own per-node capacity and receive buffers: over the baseline
// fifo : reliable the slow receiver's buffer overflows and drops; with
// mflow on top no receiver's buffer ever holds more than the window,
// nothing is dropped, and the group runs within 10% of the slow receiver's
// capacity; the sender's counters name n4 as the receiver holding it back.
func TestMflowSlowReceiverSimCapacity(t *testing.T) {
	const fast = 6000.0
	const d = 3 * time.Second
	window := int(mflow.DefaultConfig().Window)

	base := runSimCap(t, []string{"fifo", "reliable"}, fast, d)
	t.Logf("fifo : reliable: sent %d; n4 overflow drops %d, receive buffer peak %d bytes; delivered %d",
		base.sent, base.stats[4].OverflowDrops, base.stats[4].PeakRecvBytes, base.delivered[4])
	if base.stats[4].OverflowDrops == 0 {
		t.Errorf("baseline: the slow receiver dropped nothing (buffer peak %d bytes)", base.stats[4].PeakRecvBytes)
	}

	r := runSimCap(t, []string{"mflow", "fifo", "reliable"}, fast, d)
	for id := event.NodeID(2); id <= 4; id++ {
		s := r.stats[id]
		if s.OverflowDrops != 0 || s.PeakRecvBytes > window {
			t.Errorf("with mflow node %v: %d overflow drops, receive buffer peak %d bytes; want none and at most the window %d", id, s.OverflowDrops, s.PeakRecvBytes, window)
		}
		if r.delivered[id] != r.sent {
			t.Errorf("with mflow node %v delivered %d of %d", id, r.delivered[id], r.sent)
		}
	}
	tput := float64(r.delivered[4]-1) / r.last[4].Sub(r.first[4]).Seconds()
	capacity := fast / 3
	t.Logf("mflow : fifo : reliable: sent %d; n4 delivered %d at %.0f msgs/s = %.1f%% of its capacity %.0f; receive buffer peaks n2 %d, n3 %d, n4 %d bytes (window %d); sender waited %v on n4",
		r.sent, r.delivered[4], tput, 100*tput/capacity, capacity, r.stats[2].PeakRecvBytes, r.stats[3].PeakRecvBytes, r.stats[4].PeakRecvBytes, window, time.Duration(r.senderBlocked))
	if tput < 0.9*capacity {
		t.Errorf("with mflow n4 delivered %.0f msgs/s, below 90%% of its capacity %.0f", tput, capacity)
	}
	if r.senderBlocked < int64(d/2) {
		t.Errorf("blocked_by:n4 = %v, want most of the %v run", time.Duration(r.senderBlocked), d)
	}
}
