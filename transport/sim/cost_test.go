package sim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// echo sets a timer whenever the application casts through it; when the
// timer fires it records the time and sends a small packet to node to, so a
// late or lost wake-up shows in the trace.
type echo struct {
	stack.Base
	delay time.Duration
	to    event.NodeID
	fired []event.Time
}

func (l *echo) Down(ev *event.Event) {
	if ev.Kind == event.Cast {
		l.Ctx.SetTimer(l.delay, 2)
	}
	l.Ctx.Down(ev)
}

func (l *echo) Timer(uint64) {
	l.fired = append(l.fired, l.Ctx.Now())
	l.Ctx.Down(&event.Event{Kind: event.Send, Peer: l.to, Msg: l.Ctx.Pool().FromBytes([]byte("echo"))})
}

// A stack clocked by its node is asked for its next wake-up only when it was
// touched, so the full scripted scenario (capacity, faults, WAN, timers set
// by casts in scheduled functions) must be the very same run as with every
// stack asked after every scheduled function, as a Network clock forces.
func TestNodeClockSameRunAsNetworkClock(t *testing.T) {
	for _, seed := range []uint64{42, 43, 44} {
		byNode, byNet := scenario(t, seed, false), scenario(t, seed, true)
		if byNode != byNet {
			a, b := strings.Split(byNode, "\n"), strings.Split(byNet, "\n")
			for i := range min(len(a), len(b)) {
				if a[i] != b[i] {
					t.Fatalf("seed %d: node clocks and network clock differ at trace line %d:\n node: %s\n net:  %s", seed, i+1, a[i], b[i])
				}
			}
			t.Fatalf("seed %d: node clocks gave %d trace lines, network clock %d", seed, len(a), len(b))
		}
		for _, caster := range []string{"\nnode 1: ", "\nnode 4: "} {
			i := strings.Index(byNode, caster)
			if i < 0 || strings.HasPrefix(byNode[i+strings.Index(byNode[i:], "echoes"):], "echoes []") {
				t.Errorf("seed %d:%s echo timer never fired: the scenario does not test timers set by casts", seed, strings.TrimSuffix(caster, ": "))
			}
		}
	}
}

// The cost of a scheduled function follows what it touched, not the size of
// the network: in a network of 1,000 nodes, 100 functions that each send one
// packet ask about two stacks each (the sender after the function, the
// receiver after the delivery), not 1,000.
func TestScheduledFunctionAsksOnlyTouchedStacks(t *testing.T) {
	const nodes, fns = 1000, 100
	for _, netClock := range []bool{false, true} {
		h := newHarnessClock(t, sim.Config{Seed: 1, Latency: time.Millisecond}, nodes, nil, netClock)
		h.every(ms(1), time.Millisecond, fns, func(i int) { _ = h.stacks[event.NodeID(i%7+1)].Send(event.NodeID(i%5+100), []byte("x")) })
		h.net.Run(0) // the views the harness installed
		before := h.net.Asked()
		h.net.Run(time.Second)
		asked := h.net.Asked() - before
		if n := len(h.got[100]) + len(h.got[101]) + len(h.got[102]) + len(h.got[103]) + len(h.got[104]); n != fns {
			t.Fatalf("netClock %v: %d packets delivered, want %d", netClock, n, fns)
		}
		if !netClock && asked > 2*fns {
			t.Errorf("node clocks: %d functions and %d deliveries asked %d stacks for their wake-up, want at most %d", fns, fns, asked, 2*fns)
		}
		if netClock && asked < fns*nodes {
			t.Errorf("network clock: asked %d stacks, want every one of %d after each of %d functions", asked, nodes, fns)
		}
	}
}

// A stack touched by a scheduled function, by another stack's delivery
// callback or by the driver between runs gets its new timer on time, even
// when nothing else happens in the network.
func TestTimerSetByAnyCallerFires(t *testing.T) {
	echoes := map[event.NodeID]*echo{}
	h := newHarness(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 4, func(id event.NodeID) []stack.Entry {
		echoes[id] = &echo{delay: 3 * time.Millisecond, to: 1}
		return []stack.Entry{{Name: "echo", Layer: echoes[id]}}
	})
	h.onDeliver = func(self event.NodeID, d stack.Delivery) {
		if self == 2 && string(d.Payload) == "poke" {
			h.cast(4, "poked") // node 4's stack, from node 2's callback
		}
	}
	h.net.At(ms(1), func() {
		if err := h.stacks[1].Send(2, []byte("poke")); err != nil {
			t.Error(err)
		}
	})
	h.net.Run(10 * time.Millisecond)
	h.cast(3, "driver") // between runs
	h.net.Run(10 * time.Millisecond)
	h.net.At(ms(30), func() {
		h.net.Partition([]event.NodeID{2}) // its cast makes no event
		h.cast(2, "alone")
	})
	h.net.Run(30 * time.Millisecond)
	// poke leaves node 1 at 1ms and reaches node 2 at 2ms; node 4 casts then
	if got := echoes[4].fired; len(got) != 1 || got[0] != ms(5) {
		t.Errorf("node 4 (cast from node 2's callback at 2ms) fired its timer at %v, want [5ms]", got)
	}
	if got := echoes[3].fired; len(got) != 1 || got[0] != ms(13) {
		t.Errorf("node 3 (cast by the driver at 10ms) fired its timer at %v, want [13ms]", got)
	}
	if got := echoes[2].fired; len(got) != 1 || got[0] != ms(33) {
		t.Errorf("node 2 (cast alone by a function at 30ms) fired its timer at %v, want [33ms]", got)
	}
}
