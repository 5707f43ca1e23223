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

// rxHost models a receiving host under the stack until the simulator has
// per-node capacity: data packets (casts and sends not marked control)
// wait in a bounded receive buffer and are taken in at a fixed rate; one
// that does not fit is dropped. Control packets are taken at once.
type rxHost struct {
	stack.Base
	service  time.Duration
	capacity int

	q           []event.Event
	bytes, peak int
	drops       int
	busy        bool
	taken       int
	first, last event.Time
	svc         *stack.Timer // the next packet taken in
}

func (h *rxHost) Init(ctx *stack.Context) error {
	h.Ctx = ctx
	h.svc = ctx.NewTimer(h.take)
	return nil
}

func (h *rxHost) Up(ev *event.Event) {
	if !ev.Kind.IsData() || ev.Control {
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

// take hands the oldest held packet up.
func (h *rxHost) take() {
	ev := h.q[0]
	h.q = h.q[1:]
	h.bytes -= ev.Msg.Len()
	if h.taken == 0 {
		h.first = h.Ctx.Now()
	}
	h.taken++
	h.last = h.Ctx.Now()
	h.Ctx.Up(&ev)
	if len(h.q) > 0 {
		h.svc.Reset(h.service)
	} else {
		h.busy = false
	}
}

type slowResult struct {
	sent      int
	delivered map[event.NodeID]int
	firstAt   map[event.NodeID]event.Time
	lastAt    map[event.NodeID]event.Time
	hosts     map[event.NodeID]*rxHost
}

// runSlow: node 1 multicasts 1 KB messages as fast as its own capacity
// (fast per second) and the stack let it, for d; nodes 2 and 3 take in
// fast packets per second, node 4 a third of that. Receive buffers hold
// 64 KB.
func runSlow(t *testing.T, names []string, fast int, d time.Duration) slowResult {
	t.Helper()
	net := sim.New(sim.Config{Seed: 21, Latency: time.Millisecond})
	r := slowResult{delivered: map[event.NodeID]int{}, firstAt: map[event.NodeID]event.Time{}, lastAt: map[event.NodeID]event.Time{}, hosts: map[event.NodeID]*rxHost{}}
	stacks := map[event.NodeID]*stack.Stack{}
	ok := true
	for id := event.NodeID(1); id <= 4; id++ {
		self := id
		rate := fast
		if id == 4 {
			rate = fast / 3
		}
		h := &rxHost{service: time.Second / time.Duration(rate), capacity: 64000}
		layers := append(buildLayers(t, names, nil), stack.Entry{Name: "host", Layer: h})
		st, err := stack.New(stack.Config{Self: id, Transport: net.AddNode(id), Clock: net, Seed: 2, Layers: layers,
			App: stack.AppFuncs{
				OnDeliver: func(stack.Delivery) {
					if r.delivered[self] == 0 {
						r.firstAt[self] = net.Now()
					}
					r.delivered[self]++
					r.lastAt[self] = net.Now()
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
		net.Node(id).Attach(st)
		stacks[id], r.hosts[id] = st, h
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
		net.After(time.Second/time.Duration(fast), tick)
	}
	net.At(0, tick)
	net.Run(d + 20*time.Second)
	return r
}

// TestMflowSlowReceiver: one receiver takes in a third of what the others
// do. Over the baseline (fifo : reliable) its receive buffer overflows and
// drops (reliable then repairs); with mflow on top no receiver's buffer
// ever holds more than mflow's window, nothing is dropped, every message
// is delivered, and the group runs within 10% of the slow receiver's
// capacity.
func TestMflowSlowReceiver(t *testing.T) {
	const fast = 6000
	const d = 3 * time.Second
	window := int(mflow.DefaultConfig().Window)

	base := runSlow(t, []string{"fifo", "reliable"}, fast, d)
	t.Logf("fifo : reliable: sent %d; slow receiver dropped %d, buffer peak %d bytes, delivered %d at %.0f msgs/s",
		base.sent, base.hosts[4].drops, base.hosts[4].peak, base.delivered[4],
		float64(base.delivered[4]-1)/base.lastAt[4].Sub(base.firstAt[4]).Seconds())
	if base.hosts[4].drops == 0 {
		t.Errorf("baseline: the slow receiver dropped nothing (buffer peak %d bytes)", base.hosts[4].peak)
	}

	r := runSlow(t, []string{"mflow", "fifo", "reliable"}, fast, d)
	for id := event.NodeID(2); id <= 4; id++ {
		h := r.hosts[id]
		if h.drops != 0 || h.peak > window {
			t.Errorf("mflow : fifo : reliable: node %v dropped %d, buffer peak %d bytes; want none and at most the window %d", id, h.drops, h.peak, window)
		}
		if r.delivered[id] != r.sent {
			t.Errorf("mflow : fifo : reliable: node %v delivered %d of %d", id, r.delivered[id], r.sent)
		}
	}
	tput := float64(r.delivered[4]-1) / r.lastAt[4].Sub(r.firstAt[4]).Seconds()
	capacity := float64(fast / 3)
	t.Logf("mflow : fifo : reliable: sent %d; slow receiver delivered %d at %.0f msgs/s = %.1f%% of its capacity %.0f; buffer peaks n2 %d, n3 %d, n4 %d bytes (window %d)",
		r.sent, r.delivered[4], tput, 100*tput/capacity, capacity, r.hosts[2].peak, r.hosts[3].peak, r.hosts[4].peak, window)
	if tput < 0.9*capacity {
		t.Errorf("with mflow the slow receiver delivered %.0f msgs/s, below 90%% of its capacity %.0f", tput, capacity)
	}
}
