package sim_test

import (
	"fmt"
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
		l.Ctx.NewTimer(l.fire).Reset(l.delay) // one timer per cast: several may be pending
	}
	l.Ctx.Down(ev)
}

func (l *echo) fire() {
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

// A stack touched by a scheduled function (At, or AtNode naming that very
// stack), by another stack's delivery callback or by the driver between
// runs gets its new timer on time, even when nothing else happens in the
// network.
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
	// a function scheduled for node 3's stack (AtNode: a hint only)
	h.net.AtNode(ms(70), h.net.Node(3), func() { h.cast(3, "hinted") })
	h.net.Run(30 * time.Millisecond)
	// poke leaves node 1 at 1ms and reaches node 2 at 2ms; node 4 casts then
	if got := echoes[4].fired; len(got) != 1 || got[0] != ms(5) {
		t.Errorf("node 4 (cast from node 2's callback at 2ms) fired its timer at %v, want [5ms]", got)
	}
	if got := echoes[3].fired; len(got) != 2 || got[0] != ms(13) || got[1] != ms(73) {
		t.Errorf("node 3 (cast by the driver at 10ms, by a function scheduled with AtNode at 70ms) fired its timer at %v, want [13ms 73ms]", got)
	}
	if got := echoes[2].fired; len(got) != 1 || got[0] != ms(33) {
		t.Errorf("node 2 (cast alone by a function at 30ms) fired its timer at %v, want [33ms]", got)
	}
}

// ackFeed sends control packets through a feed, built when pulled.
type ackFeed struct {
	stack.Base
	nd       *sim.Node
	feed     *stack.Feed
	left     int
	badPulls int
}

func (l *ackFeed) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	l.feed = ctx.NewFeed(true, func() bool {
		if !l.nd.Writable() {
			l.badPulls++
		}
		l.left--
		l.Ctx.Down(&event.Event{Kind: event.Cast, Group: 1, Control: true, Msg: l.Ctx.MessageFrom([]byte("ctl"))})
		return l.left > 0
	})
	return nil
}

// On a node whose NIC takes one packet a millisecond (the simulator's
// capacity model), control packets readied while application data waits go
// out before that data, and the feed is asked only while the NIC has room.
func TestFeedsOnSimCapacity(t *testing.T) {
	net := sim.New(sim.Config{Seed: 1, Latency: time.Millisecond})
	nd := net.AddNode(1)
	net.SetCapacity(1, sim.Capacity{SendPPS: 1000, HighWater: 2})
	l := &ackFeed{nd: nd}
	st, err := stack.New(stack.Config{Self: 1, Transport: nd, Clock: nd, Layers: []stack.Entry{{Name: "ack", Layer: l}}})
	if err != nil {
		t.Fatal(err)
	}
	nd.Attach(st)
	var sends []string
	net.SetTrace(func(e sim.TraceEvent) {
		if e.Kind == sim.TraceSend {
			if e.Size == stack.FrameSize+3 {
				sends = append(sends, "C")
			} else {
				sends = append(sends, "d")
			}
		}
	})
	net.At(0, func() {
		for range 10 {
			if err := st.Cast(1, []byte("data")); err != nil {
				t.Fatal(err)
			}
		}
	})
	net.At(event.Time(3500*time.Microsecond), func() {
		l.left = 3
		l.feed.Ready()
	})
	net.Run(time.Second)
	// By 3.5ms the NIC has sent 3 and holds 2 (its high-water mark); data
	// waits in the stack. The next packets handed to the NIC are control.
	if got := strings.Join(sends, ""); got != "dddddCCCddddd" {
		t.Fatalf("packets handed to the NIC: %s, want dddddCCCddddd", got)
	}
	if l.badPulls != 0 {
		t.Fatalf("the feed was asked %d times while the NIC was full", l.badPulls)
	}
}

// regionLayer is a multi-group layer in miniature: it subscribes to a
// region's channel through its Context and casts on it.
type regionLayer struct{ stack.Base }

func (l *regionLayer) castOn(ch event.ChannelID, g event.GroupID, body string) {
	l.Ctx.Down(&event.Event{Kind: event.Cast, Group: g, Channel: ch, Msg: l.Ctx.MessageFrom([]byte(body))})
}

// Nodes 1 and 2 subscribe to region 5's channel; node 4 only to group 5's
// (same id, another kind). Node 3 casts on the region: 1 and 2 receive it,
// with the group the frame names; after node 2 unsubscribes only node 1
// does. The trace names the channel.
func TestRegionChannel(t *testing.T) {
	net := sim.New(sim.Config{Seed: 3, Latency: time.Millisecond})
	var trace []string
	net.SetTrace(func(e sim.TraceEvent) {
		if e.Kind == sim.TraceSend {
			trace = append(trace, e.String())
		}
	})
	got := map[event.NodeID][]string{}
	layers := map[event.NodeID]*regionLayer{}
	stacks := map[event.NodeID]*stack.Stack{}
	for id := event.NodeID(1); id <= 4; id++ {
		nd := net.AddNode(id)
		l := &regionLayer{}
		st, err := stack.New(stack.Config{Self: id, Transport: nd, Clock: net, Layers: []stack.Entry{{Name: "region", Layer: l}},
			App: stack.AppFuncs{OnDeliver: func(d stack.Delivery) {
				got[id] = append(got[id], fmt.Sprintf("%s@%v", d.Payload, d.Group))
			}}})
		if err != nil {
			t.Fatal(err)
		}
		nd.Attach(st)
		layers[id], stacks[id] = l, st
	}
	region := layers[1].Ctx.Channel(event.RegionChannel, 5)
	net.At(0, func() {
		for _, id := range []event.NodeID{1, 2} {
			if err := layers[id].Ctx.Subscribe(region); err != nil {
				t.Errorf("node %v: Subscribe(%v) = %v", id, region, err)
			}
		}
		if err := layers[4].Ctx.Subscribe(event.ChannelOf(5)); err != nil {
			t.Error(err)
		}
		stacks[3].Inject(0, false, event.Event{Kind: event.Cast, Group: 9, Channel: region, Msg: layers[3].Ctx.MessageFrom([]byte("one"))})
	})
	net.At(event.Time(10*time.Millisecond), func() {
		if err := layers[2].Ctx.Unsubscribe(region); err != nil {
			t.Error(err)
		}
		stacks[3].Inject(0, false, event.Event{Kind: event.Cast, Group: 9, Channel: region, Msg: layers[3].Ctx.MessageFrom([]byte("two"))})
	})
	net.Run(time.Second)
	want := "1:[one@g9 two@g9] 2:[one@g9] 3:[] 4:[]"
	if s := fmt.Sprintf("1:%v 2:%v 3:%v 4:%v", got[1], got[2], got[3], got[4]); s != want {
		t.Fatalf("delivered %s, want %s", s, want)
	}
	if s := strings.Join(trace, "; "); s != "0s send 3->region5 13B; 10ms send 3->region5 13B" {
		t.Fatalf("trace %s", s)
	}
	if err := layers[1].Ctx.Subscribe(event.ChannelID(1 << 40)); err == nil {
		t.Fatal("a malformed channel id subscribed")
	}
}

// Channels are found by kind and id wherever they are kept: group 7's
// channel (indexed by id), a group with an id too large to index (kept
// apart) and region 7's channel each reach their own subscribers only,
// before and after a node unsubscribes.
func TestChannelsKeptApart(t *testing.T) {
	net := sim.New(sim.Config{Seed: 5, Latency: time.Millisecond})
	got := map[event.NodeID][]string{}
	layers := map[event.NodeID]*regionLayer{}
	var caster *stack.Stack
	for id := event.NodeID(1); id <= 4; id++ {
		nd := net.AddNode(id)
		l := &regionLayer{}
		st, err := stack.New(stack.Config{Self: id, Transport: nd, Clock: nd, Layers: []stack.Entry{{Name: "region", Layer: l}},
			App: stack.AppFuncs{OnDeliver: func(d stack.Delivery) {
				got[id] = append(got[id], string(d.Payload))
			}}})
		if err != nil {
			t.Fatal(err)
		}
		nd.Attach(st)
		layers[id], caster = l, st
	}
	cast := func(ch event.ChannelID, body string) {
		caster.Inject(0, false, event.Event{Kind: event.Cast, Group: 7, Channel: ch, Msg: layers[4].Ctx.MessageFrom([]byte(body))})
	}
	small, large := event.ChannelOf(7), event.ChannelOf(1<<20)
	region := layers[1].Ctx.Channel(event.RegionChannel, 7)
	net.At(0, func() {
		for _, s := range []struct {
			id event.NodeID
			ch event.ChannelID
		}{{1, small}, {2, small}, {2, large}, {3, large}, {1, region}, {3, region}} {
			if err := layers[s.id].Ctx.Subscribe(s.ch); err != nil {
				t.Errorf("node %v: Subscribe(%v) = %v", s.id, s.ch, err)
			}
		}
		for _, ch := range []event.ChannelID{small, large, region} {
			cast(ch, "a"+ch.String())
		}
	})
	net.At(event.Time(10*time.Millisecond), func() {
		for _, s := range []struct {
			id event.NodeID
			ch event.ChannelID
		}{{2, small}, {3, large}, {1, region}} {
			if err := layers[s.id].Ctx.Unsubscribe(s.ch); err != nil {
				t.Error(err)
			}
		}
		for _, ch := range []event.ChannelID{small, large, region} {
			cast(ch, "b"+ch.String())
		}
	})
	net.Run(time.Second)
	want := "1:[ag7 aregion7 bg7] 2:[ag7 ag1048576 bg1048576] 3:[ag1048576 aregion7 bregion7] 4:[]"
	if s := fmt.Sprintf("1:%v 2:%v 3:%v 4:%v", got[1], got[2], got[3], got[4]); s != want {
		t.Fatalf("delivered %s, want %s", s, want)
	}
}
