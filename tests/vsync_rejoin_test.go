package tests

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	_ "github.com/layercast/layercast/layers/all"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/simstack"
	"github.com/layercast/layercast/transport/sim"
)

// vsyncNet is a simulated group of members running specs/vsync.stack with
// its membership service, recording what each application delivered, was
// told it lost, and which views it saw.
type vsyncNet struct {
	t      *testing.T
	net    *sim.Network
	stacks map[event.NodeID]*stack.Stack
	got    map[event.NodeID]map[event.NodeID][]uint32 // rx -> tx -> sequence numbers delivered
	lost   map[event.NodeID]map[event.NodeID][]event.LostRange
	views  map[event.NodeID][]*event.ViewInfo
	viewAt map[event.NodeID]map[*event.ViewInfo]event.Time
	sent   map[event.NodeID]uint32
	// order lists, per node, the views ("view N") and blocks ("block",
	// "unblock") its application saw, in order.
	order map[event.NodeID][]string
}

const vsyncGroup event.GroupID = 1

func newVsyncNet(t *testing.T, spec string, seed uint64, n int) *vsyncNet {
	t.Helper()
	sp, err := compose.Load(spec)
	if err != nil {
		t.Fatal(err)
	}
	h := &vsyncNet{t: t, net: sim.New(sim.Config{Seed: seed, Latency: time.Millisecond}), stacks: map[event.NodeID]*stack.Stack{},
		got: map[event.NodeID]map[event.NodeID][]uint32{}, lost: map[event.NodeID]map[event.NodeID][]event.LostRange{},
		views: map[event.NodeID][]*event.ViewInfo{}, viewAt: map[event.NodeID]map[*event.ViewInfo]event.Time{}, sent: map[event.NodeID]uint32{},
		order: map[event.NodeID][]string{}}
	var nodes []event.NodeID
	for i := 1; i <= n; i++ {
		id := event.NodeID(i)
		nodes = append(nodes, id)
		entries, err := compose.Build(sp)
		if err != nil {
			t.Fatal(err)
		}
		h.got[id], h.lost[id] = map[event.NodeID][]uint32{}, map[event.NodeID][]event.LostRange{}
		h.viewAt[id] = map[*event.ViewInfo]event.Time{}
		self := id
		h.stacks[id] = simstack.Add(t, h.net, stack.Config{Self: id, Layers: entries, Seed: seed, App: stack.AppFuncs{
			OnDeliver: func(d stack.Delivery) {
				h.got[self][d.From] = append(h.got[self][d.From], binary.BigEndian.Uint32(d.Payload))
			},
			OnView: func(v *event.ViewInfo) {
				h.views[self] = append(h.views[self], v)
				h.viewAt[self][v] = h.net.Now()
				h.order[self] = append(h.order[self], fmt.Sprint("view ", v.ID))
			},
			OnBlock: func(g event.GroupID, blocked bool) {
				h.order[self] = append(h.order[self], map[bool]string{true: "block", false: "unblock"}[blocked])
			},
			OnLost: func(l stack.Loss) { h.lost[self][l.From] = append(h.lost[self][l.From], l.Range) },
		}}, nil)
	}
	simstack.Service(t, h.net, sp, nodes, seed, nil)
	for _, id := range nodes {
		if err := h.stacks[id].Join(vsyncGroup); err != nil {
			t.Fatal(err)
		}
	}
	for h.net.Now() < event.Time(5*time.Second) {
		h.net.Run(10 * time.Millisecond)
		if h.settled(n) {
			return h
		}
	}
	t.Fatalf("views of %d members not installed after 5 s", n)
	return nil
}

func (h *vsyncNet) settled(n int) bool {
	for id := range h.stacks {
		vs := h.views[id]
		if len(vs) == 0 || vs[len(vs)-1].Size() != n {
			return false
		}
	}
	return true
}

// castEvery has node id cast a numbered payload every period until end
// (a cast refused by back-pressure is retried at the next tick).
// castAll has nodes 1 to n (every node the net was made with) each cast
// every period, from now for d, through castEvery; it returns now and the
// end of sending.
func (h *vsyncNet) castAll(period, d time.Duration) (start, end event.Time) {
	start = h.net.Now()
	end = start.Add(d)
	for id := event.NodeID(1); int(id) <= len(h.stacks); id++ {
		h.castEvery(id, period, end)
	}
	return start, end
}

func (h *vsyncNet) castEvery(id event.NodeID, period time.Duration, end event.Time) {
	buf := make([]byte, 64)
	var fire func()
	fire = func() {
		if h.net.Now() >= end {
			return
		}
		binary.BigEndian.PutUint32(buf, h.sent[id]+1)
		if err := h.stacks[id].Cast(vsyncGroup, buf); err == nil {
			h.sent[id]++
		}
		h.net.After(period, fire)
	}
	h.net.After(period, fire)
}

// accounted checks that rx delivered every message tx sent or was told it
// lost it, never both, each once: sequence numbers 1..sent, split exactly
// between deliveries and Lost ranges. It returns how many were told lost.
func (h *vsyncNet) accounted(rx, tx event.NodeID) (int, error) {
	sent := h.sent[tx]
	seen := make([]int, sent+1)
	for _, s := range h.got[rx][tx] {
		if s == 0 || s > sent {
			return 0, fmt.Errorf("%v delivered %v's message %d, of %d sent", rx, tx, s, sent)
		}
		seen[s]++
	}
	told := 0
	for _, r := range h.lost[rx][tx] {
		if !r.Bounded || r.First == 0 || r.End > sent+1 || r.First >= r.End {
			return 0, fmt.Errorf("%v was told it lost %v's messages %+v, of %d sent", rx, tx, r, sent)
		}
		for s := r.First; s < r.End; s++ {
			seen[s]++
			told++
		}
	}
	for s := uint32(1); s <= sent; s++ {
		if seen[s] != 1 {
			return 0, fmt.Errorf("%v's message %d at %v: delivered or told lost %d times, want once (delivered %d, told %+v)",
				tx, s, rx, seen[s], len(h.got[rx][tx]), h.lost[rx][tx])
		}
	}
	return told, nil
}

// Issue 15, "what must hold": a frozen node that rejoins gets everything
// cast while it was out or is told exactly what it missed. n4 freezes for
// longer than the failure detector's timeout, is removed, comes back and
// is readmitted; for every sender, what it delivered and the ranges vsync
// told it lost (event.Lost) split the sender's casts exactly, and the
// members that stayed delivered everything.
func TestVsyncRejoinToldWhatItMissed(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			h := newVsyncNet(t, "../specs/vsync.stack", seed, 4)
			start, end := h.castAll(10*time.Millisecond, 4*time.Second)
			h.net.At(start.Add(time.Second), func() { h.net.Freeze(4, 1500*time.Millisecond) })
			h.net.RunUntil(end.Add(4 * time.Second))

			removed := slices.ContainsFunc(h.views[4], func(v *event.ViewInfo) bool { return slices.Contains(v.Joined, 4) && v.ID > 1 })
			if !removed {
				t.Fatalf("n4 was never readmitted (views %v): the freeze did not outlast the failure detector", h.views[4])
			}
			told := 0
			for tx := event.NodeID(1); tx <= 3; tx++ {
				n, err := h.accounted(4, tx)
				if err != nil {
					t.Fatal(err)
				}
				told += n
				for rx := event.NodeID(1); rx <= 3; rx++ {
					if rx == tx {
						continue
					}
					if n, err := h.accounted(rx, tx); err != nil || n != 0 {
						t.Errorf("accounted(%v, %v) = %d, %v; want every message delivered", rx, tx, n, err)
					}
				}
			}
			if told == 0 {
				t.Errorf("n4 was told it missed nothing, though it was out of the group for a while")
			}
		})
	}
}
