package stack_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
	"github.com/layercast/layercast/transport/sim"
)

// tagLayer prepends a 4-byte tag going down and checks it going up.
type tagLayer struct {
	stack.Base
	tag  uint32
	bad  int
	seen int
}

func (l *tagLayer) Down(ev *event.Event) {
	if ev.Kind == event.Cast {
		binary.BigEndian.PutUint32(ev.Msg.Prepend(4), l.tag)
	}
	l.Ctx.Down(ev)
}

func (l *tagLayer) Up(ev *event.Event) {
	if ev.Kind == event.Cast {
		h, err := ev.Msg.Consume(4)
		if err != nil || binary.BigEndian.Uint32(h) != l.tag {
			l.bad++
			ev.Msg.Release()
			return
		}
		l.seen++
	}
	l.Ctx.Up(ev)
}

func TestCastThroughLayersOnSim(t *testing.T) {
	net := sim.New(sim.Config{Seed: 1, Latency: time.Millisecond})
	g := event.GroupID(1)
	view := &event.ViewInfo{Group: g, ID: 1, Members: []event.NodeID{1, 2, 3}}
	got := map[event.NodeID][]string{}
	var stacks []*stack.Stack
	for id := event.NodeID(1); id <= 3; id++ {
		nd := net.AddNode(id)
		top, bot := &tagLayer{tag: 0xAAAA}, &tagLayer{tag: 0xBBBB}
		self := id
		st, err := stack.New(stack.Config{
			Self: id, Transport: nd, Clock: net,
			Layers: []stack.Entry{{Name: "top", Layer: top}, {Name: "bottom", Layer: bot}},
			App: stack.AppFuncs{OnDeliver: func(d stack.Delivery) {
				got[self] = append(got[self], string(d.Payload))
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		nd.Attach(st)
		st.InstallView(view)
		stacks = append(stacks, st)
	}
	net.At(0, func() {
		if err := stacks[0].Cast(g, []byte("hello")); err != nil {
			t.Errorf("Cast: %v", err)
		}
	})
	net.Run(10 * time.Millisecond)
	for _, id := range []event.NodeID{2, 3} {
		if len(got[id]) != 1 || got[id][0] != "hello" {
			t.Errorf("node %v delivered %q, want [hello]", id, got[id])
		}
	}
	if len(got[1]) != 0 {
		t.Errorf("sender delivered its own multicast: %q", got[1])
	}
}

// timerLayer owns three timer handles; each records its number when it
// fires.
type timerLayer struct {
	stack.Base
	t     [3]*stack.Timer
	fired []int
	at    []event.Time
}

func (l *timerLayer) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	for i := range l.t {
		l.t[i] = ctx.NewTimer(func() {
			l.fired = append(l.fired, i+1)
			l.at = append(l.at, l.Ctx.Now())
		})
	}
	return nil
}

// timerStack is node 1 of a simulated network with a timerLayer alone.
func timerStack(t *testing.T) (*sim.Network, *stack.Stack, *timerLayer) {
	t.Helper()
	net := sim.New(sim.Config{Seed: 1})
	nd := net.AddNode(1)
	tl := &timerLayer{}
	st, err := stack.New(stack.Config{Self: 1, Transport: nd, Clock: net, Layers: []stack.Entry{{Name: "t", Layer: tl}}})
	if err != nil {
		t.Fatal(err)
	}
	nd.Attach(st)
	return net, st, tl
}

// Timers fire in deadline order, equal deadlines in the order they were
// set, each once. Stop cancels a pending timer (a second Stop is a no-op);
// Reset and ResetAt move one, earlier or later; Follow arms, leaves alone a
// timer already pending at the deadline (its place among ties kept), or
// stops it at event.Never.
func TestTimerSchedule(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, c := range []struct {
		name      string
		set       func(t *testing.T, tm [3]*stack.Timer)
		fired, at string
	}{
		{"stop", func(t *testing.T, tm [3]*stack.Timer) {
			tm[2].Reset(ms(30))
			tm[1].Reset(ms(20))
			tm[0].Reset(ms(10))
			if !tm[1].Stop() {
				t.Error("Stop of a pending timer = false")
			}
			if tm[1].Stop() {
				t.Error("second Stop = true, want false (harmless no-op)")
			}
		}, "[1 3]", "[10ms 30ms]"},
		{"reset moves", func(t *testing.T, tm [3]*stack.Timer) {
			tm[0].Reset(ms(50))
			tm[1].Reset(ms(10))
			tm[2].Reset(ms(20))
			tm[0].Reset(ms(5))                // earlier
			tm[1].Reset(ms(40))               // later
			tm[2].ResetAt(event.Time(ms(40))) // same time as tm[1], set after it
			if !tm[0].Pending() || tm[0].When() != event.Time(ms(5)) {
				t.Errorf("t[0] pending=%v when=%v, want true 5ms", tm[0].Pending(), tm[0].When())
			}
		}, "[1 2 3]", "[5ms 40ms 40ms]"},
		{"follow", func(t *testing.T, tm [3]*stack.Timer) {
			tm[0].Follow(event.Time(ms(10)))
			tm[1].Follow(event.Time(ms(20)))
			tm[2].Follow(event.Time(ms(20)))
			tm[1].Follow(event.Time(ms(20))) // unchanged: still before tm[2]
			tm[0].Follow(event.Never)
			if tm[0].Pending() {
				t.Error("Follow(Never) left the timer pending")
			}
		}, "[2 3]", "[20ms 20ms]"},
	} {
		net, _, tl := timerStack(t)
		net.At(0, func() { c.set(t, tl.t) })
		net.Run(time.Second)
		if fmt.Sprint(tl.fired) != c.fired || fmt.Sprint(tl.at) != c.at {
			t.Errorf("%s: fired %v at %v, want %s at %s", c.name, tl.fired, tl.at, c.fired, c.at)
		}
		for i, tm := range tl.t {
			if tm.Pending() {
				t.Errorf("%s: t[%d] still pending after the run", c.name, i)
			}
		}
	}
}

// Re-arming an existing handle allocates nothing.
func TestTimerResetAllocatesNothing(t *testing.T) {
	tl := &timerLayer{}
	now := event.Time(0)
	st, err := stack.New(stack.Config{Self: 1, Transport: &testkit.Transport{}, Clock: stack.ClockFunc(func() event.Time { return now }), Layers: []stack.Entry{{Name: "t", Layer: tl}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tm := range tl.t {
		tm.Reset(time.Millisecond) // the heap reaches its size once
	}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		i++
		tl.t[i%3].Reset(time.Duration(i%7) * time.Millisecond)
		if i%5 == 0 {
			tl.t[i%3].Stop()
		}
		now += event.Time(time.Millisecond)
		st.Tick()
		tl.fired, tl.at = tl.fired[:0], tl.at[:0]
	})
	if allocs != 0 {
		t.Fatalf("Reset/Stop/Tick allocate %v per run, want 0", allocs)
	}
}

func TestClosedStackFiresNoTimers(t *testing.T) {
	net, st, tl := timerStack(t)
	net.At(0, func() { tl.t[0].Reset(10 * time.Millisecond) })
	net.At(event.Time(5*time.Millisecond), func() { st.Close() })
	net.Run(time.Second) // must end: a closed stack asks for no wake-ups
	if len(tl.fired) != 0 || st.Next() != event.Never {
		t.Fatalf("after Close: fired %v, Next %v", tl.fired, st.Next())
	}
}

// Two nodes on the simulator, one pass-through layer each: node 1 casts to
// group 1 and node 2 delivers it a millisecond of virtual time later.
func ExampleStack() {
	net := sim.New(sim.Config{Seed: 1, Latency: time.Millisecond})
	view := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}}
	var stacks []*stack.Stack
	for id := event.NodeID(1); id <= 2; id++ {
		nd := net.AddNode(id)
		self := id
		st, _ := stack.New(stack.Config{
			Self: id, Transport: nd, Clock: net,
			Layers: []stack.Entry{{Name: "pass", Layer: &passLayer{}}},
			App: stack.AppFuncs{OnDeliver: func(d stack.Delivery) {
				fmt.Printf("%v at %v: %q from %v in %v\n", self, net.Now(), d.Payload, d.From, d.Group)
			}},
		})
		nd.Attach(st)
		st.InstallView(view)
		stacks = append(stacks, st)
	}
	net.At(0, func() { _ = stacks[0].Cast(1, []byte("hello")) })
	net.Run(time.Second)
	// Output: n2 at 1ms: "hello" from n1 in g1
}

// hdrLayer prepends a size-byte header to every cast going down and
// declares it.
type hdrLayer struct {
	stack.Base
	size int
	top  bool
	last *byte // top layer: the payload's last byte, where the app put it
}

func (l *hdrLayer) HeaderSize() int { return l.size }

func (l *hdrLayer) Down(ev *event.Event) {
	if ev.Kind == event.Cast {
		if l.top {
			b := ev.Msg.Bytes()
			l.last = &b[len(b)-1]
		}
		h := ev.Msg.Prepend(l.size)
		for i := range h {
			h[i] = byte(l.size)
		}
	}
	l.Ctx.Down(ev)
}

// lastByteTransport notes where each packet's last byte lives.
type lastByteTransport struct {
	testkit.Transport
	last *byte
	n    int
}

func (t *lastByteTransport) Multicast(_ event.GroupID, pkt []byte) {
	t.last = &pkt[len(pkt)-1]
	t.n = len(pkt)
}

// A stack whose headers pass event.Headroom reserves their sum: from Cast
// to the transport the payload never moves and no buffer grows.
func TestHeadroomCoversEveryHeader(t *testing.T) {
	pool := &event.Pool{}
	top := &hdrLayer{size: 60, top: true}
	tr := &lastByteTransport{}
	st, err := stack.New(stack.Config{Self: 1, Transport: tr, Clock: stack.ClockFunc(func() event.Time { return 0 }), Pool: pool,
		Layers: []stack.Entry{{Name: "a", Layer: top}, {Name: "b", Layer: &hdrLayer{size: 70}}, {Name: "c", Layer: &hdrLayer{size: 50}}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := 60 + 70 + 50 + stack.FrameSize; st.Headroom() != want {
		t.Fatalf("Headroom() = %d, want %d", st.Headroom(), want)
	}
	payload := make([]byte, 1000)
	for i := 0; i < 100; i++ {
		if err := st.Cast(1, payload); err != nil {
			t.Fatal(err)
		}
		if tr.n != len(payload)+60+70+50+stack.FrameSize {
			t.Fatalf("packet of %d bytes", tr.n)
		}
		if tr.last != top.last {
			t.Fatalf("cast %d: the payload moved between the top layer and the transport", i)
		}
	}
	if g := pool.Grows(); g != 0 {
		t.Fatalf("%d buffers grew, want 0", g)
	}
	// Messages a layer makes get the same room.
	m := st.Layer(0).(*hdrLayer).Ctx.NewMessage()
	m.SetPayload([]byte("x"))
	m.Prepend(st.Headroom())
	m.Release()
	if g := pool.Grows(); g != 0 {
		t.Fatalf("a layer's NewMessage grew when filled with every header")
	}
}

// A transport without Channels: a region channel cannot be subscribed to
// and a cast on it is counted and dropped, not sent on the group's channel.
func TestChannelsNeedTransportSupport(t *testing.T) {
	tr := &lastByteTransport{}
	l := &passLayer{}
	st, err := stack.New(stack.Config{Self: 1, Transport: tr, Clock: stack.ClockFunc(func() event.Time { return 0 }), Layers: []stack.Entry{{Name: "p", Layer: l}}})
	if err != nil {
		t.Fatal(err)
	}
	region := l.Ctx.Channel(event.RegionChannel, 3)
	if err := l.Ctx.Subscribe(region); !errors.Is(err, stack.ErrNoChannels) {
		t.Fatalf("Subscribe(%v) = %v, want ErrNoChannels", region, err)
	}
	if err := l.Ctx.Subscribe(event.ChannelOf(4)); err != nil {
		t.Fatalf("Subscribe(group 4's channel) = %v", err)
	}
	st.Inject(0, false, event.Event{Kind: event.Cast, Group: 4, Channel: region, Msg: l.Ctx.MessageFrom([]byte("x"))})
	if tr.n != 0 || st.Net().NoChannel != 1 || st.Net().PacketsSent != 0 {
		t.Fatalf("cast on %v: transport got %d bytes, NoChannel %d, sent %d; want dropped and counted", region, tr.n, st.Net().NoChannel, st.Net().PacketsSent)
	}
	st.Inject(0, false, event.Event{Kind: event.Cast, Group: 4, Channel: event.ChannelOf(4), Msg: l.Ctx.MessageFrom([]byte("x"))})
	if tr.n != 1+stack.FrameSize {
		t.Fatalf("cast on group 4's channel not multicast")
	}
}

// joinLayer is a one-node membership layer: a Join going down comes back
// up as a view of the group with this node alone, as gms produces views.
type joinLayer struct{ stack.Base }

func (l *joinLayer) Down(ev *event.Event) {
	if ev.Kind == event.Join {
		v := &event.ViewInfo{Group: ev.Group, ID: 1, Members: []event.NodeID{l.Ctx.Self()}}
		l.Ctx.Up(&event.Event{Kind: event.View, Group: ev.Group, View: v})
		return
	}
	l.Ctx.Down(ev)
}

// Issue 9 item 5: static membership is one source among others. A view
// subscribes the node to its group's channel whoever produced it (a layer
// at the bottom, or the static source InstallView, which enters where the
// network's packets do and passes through every layer); a view without
// the node subscribes nothing.
func TestEveryViewSourceSubscribes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		install func(st *stack.Stack, g event.GroupID)
	}{
		{"layer", func(st *stack.Stack, g event.GroupID) { _ = st.Join(g) }},
		{"static", func(st *stack.Stack, g event.GroupID) {
			st.InstallView(&event.ViewInfo{Group: g, ID: 1, Members: []event.NodeID{1}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &testkit.Transport{}
			var views []event.GroupID
			st, err := stack.New(stack.Config{Self: 1, Transport: tr, Clock: stack.ClockFunc(func() event.Time { return 0 }),
				Layers: []stack.Entry{{Name: "top", Layer: &tagLayer{tag: 1}}, {Name: "membership", Layer: &joinLayer{}}},
				App:    stack.AppFuncs{OnView: func(v *event.ViewInfo) { views = append(views, v.Group) }}})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			tc.install(st, 4)
			st.InstallView(&event.ViewInfo{Group: 5, ID: 1, Members: []event.NodeID{2, 3}})
			if !tr.Subscribed(4) || tr.Subscribed(5) {
				t.Errorf("subscribed to g4 %v, g5 %v; want g4 only (the node is in g4's view, not g5's)", tr.Subscribed(4), tr.Subscribed(5))
			}
			if len(views) != 2 {
				t.Errorf("application saw views of %v, want g4 and g5", views)
			}
		})
	}
}
