package tests

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/layers/mflow"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/testbed/simstack"
	"github.com/layercast/layercast/transport/sim"
)

// castRun describes one run of the mflow end-to-end tests: node 1
// multicasts 1 KB messages to nodes 1..n in group 1 through the named
// layers, one every gap, on the simulator.
type castRun struct {
	names  []string
	params map[string]map[string]string
	n      int
	seed   uint64
	net    sim.Config
	gap    time.Duration
	until  time.Duration // casting stops at this time
	msgs   int           // or after this many casts (0: no limit)
	drain  time.Duration // how long the network runs after until
	// capacity gives a node's NIC and receive rates (nil: unlimited)
	capacity func(event.NodeID) sim.Capacity
	// strict: a refused Cast fails the test; otherwise the sender honours
	// flow control and retries at the next tick
	strict bool
}

type castResult struct {
	net         *sim.Network
	stacks      map[event.NodeID]*stack.Stack
	sent        int
	delivered   map[event.NodeID]int
	distinct    map[event.NodeID]map[uint64]bool
	first, last map[event.NodeID]event.Time
	latencies   []time.Duration // every send-to-delivery latency, sorted
}

// run runs c. A message's payload carries its number (bytes 0-7) and when
// it was cast (bytes 8-15).
func (c castRun) run(t *testing.T) castResult {
	t.Helper()
	net := sim.New(c.net)
	r := castResult{net: net, stacks: map[event.NodeID]*stack.Stack{}, delivered: map[event.NodeID]int{}, distinct: map[event.NodeID]map[uint64]bool{},
		first: map[event.NodeID]event.Time{}, last: map[event.NodeID]event.Time{}}
	ok := true
	var members []event.NodeID
	for id := event.NodeID(1); id <= event.NodeID(c.n); id++ {
		self := id
		r.distinct[id] = map[uint64]bool{}
		r.stacks[id] = simstack.Add(t, net, stack.Config{Self: id, Clock: net, Seed: c.seed, Layers: layertest.Registered(c.params, c.names...)(),
			App: stack.AppFuncs{
				OnDeliver: func(d stack.Delivery) {
					if r.delivered[self] == 0 {
						r.first[self] = net.Now()
					}
					r.delivered[self]++
					r.last[self] = net.Now()
					r.distinct[self][binary.BigEndian.Uint64(d.Payload)] = true
					r.latencies = append(r.latencies, net.Now().Sub(event.Time(binary.BigEndian.Uint64(d.Payload[8:]))))
				},
				OnFlow: func(_ event.GroupID, f bool) {
					if self == 1 {
						ok = f
					}
				},
			}}, nil)
		if c.capacity != nil {
			net.SetCapacity(id, c.capacity(id))
		}
		members = append(members, id)
	}
	v := &event.ViewInfo{Group: 1, ID: 1, Members: members}
	for _, st := range r.stacks {
		st.InstallView(v)
	}
	payload := make([]byte, 1000)
	var tick func()
	tick = func() {
		if net.Now() >= event.Time(c.until) || (c.msgs > 0 && r.sent == c.msgs) {
			return
		}
		if ok || c.strict {
			binary.BigEndian.PutUint64(payload, uint64(r.sent))
			binary.BigEndian.PutUint64(payload[8:], uint64(net.Now()))
			err := r.stacks[1].Cast(1, payload)
			if err != nil && c.strict {
				t.Fatalf("%v: Cast at %v: %v", c.names, net.Now(), err)
			}
			if err == nil {
				r.sent++
			}
		}
		net.After(c.gap, tick)
	}
	net.At(0, tick)
	net.Run(c.until + c.drain)
	slices.Sort(r.latencies)
	return r
}

// counter is the value of a layer's counter at node id (0 if absent).
func (r castResult) counter(id event.NodeID, layer, name string) int64 {
	for _, lc := range r.stacks[id].Counters() {
		for i, n := range lc.Names {
			if lc.Layer == layer && n == name {
				return lc.Values[i]
			}
		}
	}
	return 0
}

// slowReceiver: node 1 multicasts 1 KB messages as fast as its NIC (fast
// packets per second) and the stack take them, for d; nodes 2 and 3 take
// in fast packets per second, node 4 a third of that, through the
// simulator's per-node capacity; receive buffers hold 64 KB.
func slowReceiver(names []string, fast float64, d time.Duration) castRun {
	return castRun{names: names, n: 4, seed: 2, net: sim.Config{Seed: 31, Latency: time.Millisecond},
		gap: time.Duration(float64(time.Second) / fast), until: d, drain: 20 * time.Second,
		capacity: func(id event.NodeID) sim.Capacity {
			c := sim.Capacity{SendPPS: fast, RecvPPS: fast, RecvBufferBytes: 64000}
			if id == 4 {
				c.RecvPPS = fast / 3
			}
			return c
		}}
}

// TestMflowSlowReceiverSimCapacity is the slow-receiver check on the
// simulator's own per-node capacity and receive buffers: over the baseline
// fifo : reliable the slow receiver's buffer overflows and drops; with
// mflow on top no receiver's buffer ever holds more than the window
// (window + ack_thresh for a staggered receiver: its headroom, see mflow's
// package doc), nothing is dropped, every message is delivered, and the group runs within
// 10% of the slow receiver's capacity; the sender's counters name n4 as the
// receiver holding it back.
func TestMflowSlowReceiverSimCapacity(t *testing.T) {
	const fast = 6000.0
	const d = 3 * time.Second
	cfg := mflow.EnsembleConfig()
	window := int(cfg.Window)

	base := slowReceiver([]string{"fifo", "reliable"}, fast, d).run(t)
	s4 := base.net.NodeStats(4)
	t.Logf("fifo : reliable: sent %d; n4 overflow drops %d, receive buffer peak %d bytes; delivered %d",
		base.sent, s4.OverflowDrops, s4.PeakRecvBytes, base.delivered[4])
	if s4.OverflowDrops == 0 {
		t.Errorf("baseline: the slow receiver dropped nothing (buffer peak %d bytes)", s4.PeakRecvBytes)
	}

	sr := slowReceiver([]string{"mflow", "fifo", "reliable"}, fast, d)
	// Ensemble's parameters, which the bounds below are figured from.
	sr.params = map[string]map[string]string{"mflow": {"window": fmt.Sprint(cfg.Window), "ack_thresh": fmt.Sprint(cfg.AckThresh)}}
	r := sr.run(t)
	for id := event.NodeID(2); id <= 4; id++ {
		s := r.net.NodeStats(id)
		bound := window // n2 is sender n1's receiver at offset 0
		if id > 2 {
			bound += int(cfg.AckThresh) // staggered: headroom
		}
		if s.OverflowDrops != 0 || s.PeakRecvBytes > bound {
			t.Errorf("with mflow node %v: %d overflow drops, receive buffer peak %d bytes; want none and at most %d", id, s.OverflowDrops, s.PeakRecvBytes, bound)
		}
		if r.delivered[id] != r.sent {
			t.Errorf("with mflow node %v delivered %d of %d", id, r.delivered[id], r.sent)
		}
	}
	tput := float64(r.delivered[4]-1) / r.last[4].Sub(r.first[4]).Seconds()
	capacity := fast / 3
	blocked := r.counter(1, "mflow", "blocked_by:n4")
	t.Logf("mflow : fifo : reliable: sent %d; n4 delivered %d at %.0f msgs/s = %.1f%% of its capacity %.0f; receive buffer peaks n2 %d, n3 %d, n4 %d bytes (window %d); sender waited %v on n4",
		r.sent, r.delivered[4], tput, 100*tput/capacity, capacity, r.net.NodeStats(2).PeakRecvBytes, r.net.NodeStats(3).PeakRecvBytes, r.net.NodeStats(4).PeakRecvBytes, window, time.Duration(blocked))
	if tput < 0.9*capacity {
		t.Errorf("with mflow n4 delivered %.0f msgs/s, below 90%% of its capacity %.0f", tput, capacity)
	}
	if blocked < int64(d/2) {
		t.Errorf("blocked_by:n4 = %v, want most of the %v run", time.Duration(blocked), d)
	}
}

func q(l []time.Duration, p float64) time.Duration { return l[int(p*float64(len(l)-1))] }

// TestMflowAddsNoLatency: with the ack_thresh stacktool mflow-params gives
// for the workload, mflow : fifo : reliable delivers with the same latency
// distribution as fifo : reliable at a rate below the receivers' capacity
// (the simulator's per-node capacity model). layers/mflow's
// TestNoAddedLatency makes the same check for mflow alone.
func TestMflowAddsNoLatency(t *testing.T) {
	const n, rate, capacity = 10, 1000, 5000
	const latency, d = 2 * time.Millisecond, 3 * time.Second
	cfg := mflow.EnsembleConfig()
	w := mflow.Workload{N: n, Size: 1000 + float64(cfg.Overhead), Rate: rate, Delay: latency + time.Second/capacity, Window: float64(cfg.Window)}
	thresh := int64(mflow.SafeAckThresh(w))
	runLat := func(names []string, params map[string]map[string]string) []time.Duration {
		r := castRun{names: names, params: params, n: n, seed: 2, net: sim.Config{Seed: 8, Latency: latency},
			gap: time.Second / rate, until: d, drain: 2 * time.Second, strict: true,
			capacity: func(event.NodeID) sim.Capacity { return sim.Capacity{RecvPPS: capacity, RecvBufferBytes: 1 << 20} }}.run(t)
		if want := (n - 1) * rate * int(d/time.Second); len(r.latencies) != want {
			t.Fatalf("%v: %d deliveries, want %d", names, len(r.latencies), want)
		}
		return r.latencies
	}

	base := runLat([]string{"fifo", "reliable"}, nil)
	with := runLat([]string{"mflow", "fifo", "reliable"}, map[string]map[string]string{"mflow": {"window": "50000", "ack_thresh": fmt.Sprint(thresh)}})
	for _, r := range []struct {
		name string
		l    []time.Duration
	}{{"fifo : reliable", base}, {fmt.Sprintf("mflow(window=50000, ack_thresh=%d) : fifo : reliable", thresh), with}} {
		t.Logf("%-42s p50 %v  p90 %v  p99 %v  max %v", r.name, q(r.l, .5), q(r.l, .9), q(r.l, .99), r.l[len(r.l)-1])
	}
	for _, p := range []float64{.5, .9, .99, 1} {
		if q(with, p) != q(base, p) {
			t.Errorf("p%.0f latency: %v with mflow, %v without", 100*p, q(with, p), q(base, p))
		}
	}
}
