package stack_test

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// memNet is an in-memory transport between Nodes: every packet is copied
// into a one-packet Batch handed to the receiving nodes' Input.
type memNet struct {
	mu    sync.Mutex
	nodes map[event.NodeID]*stack.Node
	subs  map[event.GroupID]map[event.NodeID]bool
}

type memPort struct {
	net  *memNet
	self event.NodeID
}

func (p *memPort) deliver(to event.NodeID, pkt []byte) {
	p.net.mu.Lock()
	nd := p.net.nodes[to]
	p.net.mu.Unlock()
	if nd == nil {
		return
	}
	b := &stack.Batch{Pkts: [][]byte{append([]byte(nil), pkt...)}}
	go nd.Input(b) // never block the sending stack
}

func (p *memPort) Send(to event.NodeID, pkt []byte) { p.deliver(to, pkt) }
func (p *memPort) Multicast(g event.GroupID, pkt []byte) {
	p.net.mu.Lock()
	var to []event.NodeID
	for id := range p.net.subs[g] {
		to = append(to, id)
	}
	p.net.mu.Unlock()
	for _, id := range to {
		p.deliver(id, pkt)
	}
}
func (p *memPort) Subscribe(g event.GroupID) error {
	p.net.mu.Lock()
	defer p.net.mu.Unlock()
	if p.net.subs[g] == nil {
		p.net.subs[g] = map[event.NodeID]bool{}
	}
	p.net.subs[g][p.self] = true
	return nil
}
func (p *memPort) Unsubscribe(g event.GroupID) error {
	p.net.mu.Lock()
	defer p.net.mu.Unlock()
	delete(p.net.subs[g], p.self)
	return nil
}

func TestNodeDeliversAndTicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mn := &memNet{nodes: map[event.NodeID]*stack.Node{}, subs: map[event.GroupID]map[event.NodeID]bool{}}
		g := event.GroupID(1)
		view := &event.ViewInfo{Group: g, ID: 1, Members: []event.NodeID{1, 2}}
		var mu sync.Mutex
		var got []string
		ticks := map[event.NodeID]*testkit.Ticker{}
		for id := event.NodeID(1); id <= 2; id++ {
			tl := &testkit.Ticker{Period: 10 * time.Millisecond}
			ticks[id] = tl
			nd, err := stack.NewNode(stack.NodeConfig{Stack: stack.Config{
				Self: id, Transport: &memPort{net: mn, self: id},
				Layers: []stack.Entry{{Name: "tick", Layer: tl}},
				App: stack.AppFuncs{OnDeliver: func(d stack.Delivery) {
					mu.Lock()
					got = append(got, string(d.Payload))
					mu.Unlock()
				}},
			}})
			if err != nil {
				t.Fatal(err)
			}
			mn.nodes[id] = nd
			if err := nd.Do(func(st *stack.Stack) { st.InstallView(view) }); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 100 {
			if err := mn.nodes[1].Cast(g, []byte{byte(i)}); err != nil {
				t.Fatalf("cast %d: %v", i, err)
			}
		}
		time.Sleep(95 * time.Millisecond)
		synctest.Wait()
		for _, nd := range mn.nodes {
			nd.Close()
		}
		if len(got) != 100 {
			t.Fatalf("node 2 delivered %d messages, want 100", len(got))
		}
		for id, tl := range ticks {
			if len(tl.Fired) != 9 {
				t.Errorf("node %v: timer fired %d times in 95ms at a 10ms period, want 9", id, len(tl.Fired))
			}
			for i, at := range tl.Fired {
				if want := event.Time((i + 1) * 10 * int(time.Millisecond)); at != want {
					t.Errorf("node %v: firing %d at %v, want %v", id, i, at, want)
				}
			}
		}
		if err := mn.nodes[1].Cast(g, []byte("late")); !errors.Is(err, stack.ErrClosed) {
			t.Errorf("cast after Close: %v, want ErrClosed", err)
		}
	})
}

// pauseLayer holds the group off after every cast it passes down, until its
// timer fires: a stand-in for flow control.
type pauseLayer struct {
	stack.Base
	resume *stack.Timer
	group  event.GroupID
}

func (l *pauseLayer) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	l.resume = ctx.NewTimer(func() {
		ev := event.Event{Kind: event.Resume, Group: l.group}
		l.Ctx.Up(&ev)
	})
	return nil
}

func (l *pauseLayer) Down(ev *event.Event) {
	if ev.Kind == event.Cast {
		hold := event.Event{Kind: event.HoldOff, Group: ev.Group}
		l.Ctx.Up(&hold)
		l.group = ev.Group
		l.resume.Reset(time.Millisecond)
	}
	l.Ctx.Down(ev)
}

func TestNodeBackpressure(t *testing.T) {
	for _, block := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			mn := &memNet{nodes: map[event.NodeID]*stack.Node{}, subs: map[event.GroupID]map[event.NodeID]bool{}}
			nd, err := stack.NewNode(stack.NodeConfig{BlockOnBackpressure: block, Stack: stack.Config{
				Self: 1, Transport: &memPort{net: mn, self: 1},
				Layers: []stack.Entry{{Name: "hold", Layer: &pauseLayer{}}},
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer nd.Close()
			start := time.Now()
			refused := 0
			for sent := 0; sent < 10; {
				switch err := nd.Cast(1, []byte("x")); {
				case err == nil:
					sent++
				case errors.Is(err, stack.ErrBackpressure) && !block:
					refused++
					time.Sleep(100 * time.Microsecond)
				default:
					t.Fatalf("block=%v: cast: %v", block, err)
				}
			}
			// Each cast after the first waits for a 1ms resume.
			if el := time.Since(start); el < 9*time.Millisecond {
				t.Errorf("block=%v: 10 held-off casts took %v, want at least 9ms", block, el)
			}
			if block && refused != 0 || !block && refused == 0 {
				t.Errorf("block=%v: %d casts refused", block, refused)
			}
		})
	}
}

// BenchmarkNodeCast is one Cast from another goroutine through the node's
// call channel into a one-layer stack and out to a null transport: the
// cost the runner adds to Stack.Cast.
func BenchmarkNodeCast(b *testing.B) {
	nd, err := stack.NewNode(stack.NodeConfig{Stack: stack.Config{
		Self: 1, Transport: &testkit.Transport{}, Layers: []stack.Entry{{Name: "base", Layer: &stack.Base{}}},
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer nd.Close()
	payload := make([]byte, 100)
	b.ReportAllocs()
	for b.Loop() {
		if err := nd.Cast(1, payload); err != nil {
			b.Fatal(err)
		}
	}
}
