package stack_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
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

type timerLayer struct {
	stack.Base
	fired []uint64
	at    []event.Time
}

func (l *timerLayer) Timer(key uint64) {
	l.fired = append(l.fired, key)
	l.at = append(l.at, l.Ctx.Now())
}

func TestTimersFireInOrderAndCancel(t *testing.T) {
	net := sim.New(sim.Config{Seed: 1})
	nd := net.AddNode(1)
	tl := &timerLayer{}
	st, err := stack.New(stack.Config{Self: 1, Transport: nd, Clock: net, Layers: []stack.Entry{{Name: "t", Layer: tl}}})
	if err != nil {
		t.Fatal(err)
	}
	nd.Attach(st)
	net.At(0, func() {
		tl.Ctx.SetTimer(30*time.Millisecond, 3)
		id := tl.Ctx.SetTimer(20*time.Millisecond, 2)
		tl.Ctx.SetTimer(10*time.Millisecond, 1)
		tl.Ctx.CancelTimer(id)
		tl.Ctx.CancelTimer(id) // twice is harmless
	})
	net.Run(time.Second)
	if len(tl.fired) != 2 || tl.fired[0] != 1 || tl.fired[1] != 3 {
		t.Fatalf("fired %v, want [1 3]", tl.fired)
	}
	if tl.at[0] != event.Time(10*time.Millisecond) || tl.at[1] != event.Time(30*time.Millisecond) {
		t.Fatalf("fired at %v, want [10ms 30ms]", tl.at)
	}
}
