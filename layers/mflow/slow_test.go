package mflow

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// host models a receiving host below the stack: data packets wait in a
// bounded receive buffer and are taken in at a fixed number per second;
// a packet that does not fit is dropped. Control packets (acknowledgements)
// are taken at once. It is test scaffolding for the network's per-node
// capacity, not a protocol layer.
type host struct {
	stack.Base
	service  time.Duration // time to take in one data packet
	capacity int           // receive buffer, bytes

	q          []event.Event
	bytes      int
	peak       int
	drops      int
	busy       bool
	taken      int
	firstTaken event.Time
	lastTaken  event.Time
	svc        *stack.Timer // the next message taken in
}

func (h *host) Init(ctx *stack.Context) error {
	h.Ctx = ctx
	h.svc = ctx.NewTimer(h.take)
	return nil
}

func (h *host) Up(ev *event.Event) {
	if ev.Kind != event.Cast || ev.Control {
		h.Ctx.Up(ev)
		return
	}
	n := ev.Msg.Len()
	if h.bytes+n > h.capacity {
		h.drops++
		ev.Msg.Release()
		return
	}
	h.q = append(h.q, *ev)
	h.bytes += n
	h.peak = max(h.peak, h.bytes)
	if !h.busy {
		h.busy = true
		h.svc.Reset(h.service)
	}
}

// take hands the oldest held message up.
func (h *host) take() {
	ev := h.q[0]
	h.q = h.q[1:]
	h.bytes -= ev.Msg.Len()
	if h.taken == 0 {
		h.firstTaken = h.Ctx.Now()
	}
	h.taken++
	h.lastTaken = h.Ctx.Now()
	h.Ctx.Up(&ev)
	if len(h.q) > 0 {
		h.svc.Reset(h.service)
	} else {
		h.busy = false
	}
}

// slowRun has node 1 multicast 1 KB messages to nodes 2-4 as fast as its
// own capacity allows (fast packets per second); node 4 takes in a third
// of that. With useMflow the stack is mflow over the host, otherwise the
// host alone.
func slowRun(t *testing.T, useMflow bool, cfg Config, fast int, d time.Duration) (hosts map[event.NodeID]*host, sent int, sender *stack.Stack) {
	t.Helper()
	net := sim.New(sim.Config{Seed: 3, Latency: time.Millisecond})
	hosts = map[event.NodeID]*host{}
	stacks := map[event.NodeID]*stack.Stack{}
	ok := true
	for id := event.NodeID(1); id <= 4; id++ {
		rate := fast
		if id == 4 {
			rate = fast / 3
		}
		h := &host{service: time.Second / time.Duration(rate), capacity: 64000}
		var entries []stack.Entry
		if useMflow {
			entries = append(entries, stack.Entry{Name: "mflow", Layer: New(cfg)})
		}
		entries = append(entries, stack.Entry{Name: "host", Layer: h})
		st, err := stack.New(stack.Config{Self: id, Transport: net.AddNode(id), Clock: net, Layers: entries,
			App: stack.AppFuncs{OnFlow: func(_ event.GroupID, f bool) { ok = f }}})
		if err != nil {
			t.Fatal(err)
		}
		net.Node(id).Attach(st)
		hosts[id], stacks[id] = h, st
	}
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3, 4}}
	for _, st := range stacks {
		st.InstallView(v)
	}
	payload := make([]byte, 1000)
	gap := time.Second / time.Duration(fast)
	var tick func()
	tick = func() {
		if net.Now() >= event.Time(d) {
			return
		}
		if ok {
			binary.BigEndian.PutUint64(payload, uint64(sent))
			if stacks[1].Cast(1, payload) == nil {
				sent++
			}
		}
		net.After(gap, tick)
	}
	net.At(0, tick)
	net.Run(d + time.Second)
	return hosts, sent, stacks[1]
}

// TestSlowReceiver: one receiver takes in a third of what the others do.
// Without mflow its receive buffer overflows and drops; with mflow no
// receiver's buffer ever holds more than the window plus its headroom less
// its offset (the stagger's price: see headroom), nothing is dropped,
// and the group runs at the slow receiver's capacity (within 10%).
func TestSlowReceiver(t *testing.T) {
	const fast = 6000 // packets per second: the sender and receivers 2, 3
	const d = 3 * time.Second
	cfg := EnsembleConfig()

	base, baseSent, _ := slowRun(t, false, cfg, fast, d)
	t.Logf("without mflow: sent %d; slow receiver took %d, dropped %d, buffer peak %d bytes; fast receivers dropped %d, %d",
		baseSent, base[4].taken, base[4].drops, base[4].peak, base[2].drops, base[3].drops)
	if base[4].drops == 0 {
		t.Errorf("without mflow the slow receiver dropped nothing (buffer peak %d bytes)", base[4].peak)
	}

	hosts, sent, st := slowRun(t, true, cfg, fast, d)
	for id := event.NodeID(2); id <= 4; id++ {
		h := hosts[id]
		// Node id is receiver id-2 of sender 1 (offset (id-2)*ack_thresh/3).
		off := int64(id-2) * cfg.AckThresh / 3
		bound := cfg.Window + New(cfg).headroom(off) - off
		if h.drops != 0 || int64(h.peak) > bound {
			t.Errorf("with mflow node %v dropped %d, buffer peak %d bytes; want no drops and at most window+headroom-offset %d", id, h.drops, h.peak, bound)
		}
		if h.taken != sent {
			t.Errorf("with mflow node %v took in %d of %d messages", id, h.taken, sent)
		}
	}
	slow := hosts[4]
	tput := float64(slow.taken-1) / slow.lastTaken.Sub(slow.firstTaken).Seconds()
	capacity := float64(fast / 3)
	t.Logf("with mflow: sent %d; slow receiver took %d at %.0f msgs/s (capacity %.0f, %.1f%%), buffer peaks %d/%d/%d bytes (window %d)",
		sent, slow.taken, tput, capacity, 100*tput/capacity, hosts[2].peak, hosts[3].peak, hosts[4].peak, cfg.Window)
	// Item 8: the report can name the receiver that held the sender back.
	var by [5]int64
	for _, lc := range st.Counters() {
		for i, n := range lc.Names {
			for id := 2; id <= 4; id++ {
				if n == "blocked_by:"+event.NodeID(id).String() {
					by[id] = lc.Values[i]
				}
			}
		}
	}
	t.Logf("sender waited on credit: n2 %v, n3 %v, n4 %v", time.Duration(by[2]), time.Duration(by[3]), time.Duration(by[4]))
	if by[4] <= by[2] || by[4] <= by[3] || by[4] < int64(d/2) {
		t.Errorf("blocked_by: n2 %v, n3 %v, n4 %v; want the slow n4 named, for most of the run", time.Duration(by[2]), time.Duration(by[3]), time.Duration(by[4]))
	}
	if tput < 0.9*capacity {
		t.Errorf("with mflow the group ran at %.0f msgs/s, below 90%% of the slow receiver's capacity %.0f", tput, capacity)
	}
}
