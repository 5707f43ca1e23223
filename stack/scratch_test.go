package stack_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// fanLayer passes a view up behind as many deliveries as the view's id
// says, all queued in one step.
type fanLayer struct{ stack.Base }

func (l *fanLayer) Up(ev *event.Event) {
	if ev.Kind == event.View {
		for i := range int(ev.View.ID) {
			m := l.Ctx.NewMessage()
			m.SetPayload(fmt.Appendf(nil, "%02d", i))
			l.Ctx.Up(&event.Event{Kind: event.Cast, Group: ev.Group, Peer: 2, Msg: m})
		}
	}
	l.Ctx.Up(ev)
}

// scratchRun steps two stacks, a and b, as one goroutine steps
// simulated stacks: a's two views come up behind 5 deliveries, which its
// queue's first buffer holds, then 40, which it does not; at each
// delivery a's application casts on a itself (the step re-entered) and on
// b, and gives b a view that comes up behind 3 deliveries (steps of
// another stack inside a's). It returns what both delivered and sent, in
// order.
func scratchRun(t *testing.T, sc *stack.Scratch) []string {
	var log []string
	clock := stack.ClockFunc(func() event.Time { return 0 })
	tr := func(name string) *testkit.Transport {
		return &testkit.Transport{Deliver: func(p testkit.Packet) {
			log = append(log, name+" sent "+string(p.Data[len(p.Data)-3:]))
		}}
	}
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}}
	b, err := stack.New(stack.Config{Self: 2, Transport: tr("b"), Clock: clock, Scratch: sc,
		Layers: []stack.Entry{{Name: "fan", Layer: &fanLayer{}}},
		App:    stack.AppFuncs{OnDeliver: func(d stack.Delivery) { log = append(log, "b delivered "+string(d.Payload)) }}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.InstallView(v) // a step of b first: the scratch holds a buffer
	var a *stack.Stack
	a, err = stack.New(stack.Config{Self: 1, Transport: tr("a"), Clock: clock, Scratch: sc,
		Layers: []stack.Entry{{Name: "fan", Layer: &fanLayer{}}},
		App: stack.AppFuncs{OnDeliver: func(d stack.Delivery) {
			log = append(log, "a delivered "+string(d.Payload))
			for _, st := range []*stack.Stack{a, b} {
				if err := st.Cast(1, append([]byte("x"), d.Payload...)); err != nil {
					t.Fatal(err)
				}
			}
			b.InstallView(&event.ViewInfo{Group: 1, ID: 3, Members: v.Members})
		}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, id := range []uint64{5, 40} {
		a.InstallView(&event.ViewInfo{Group: 1, ID: id, Members: v.Members})
	}
	return log
}

// Stacks that borrow their queues' buffers from one Scratch (Config.Scratch)
// step exactly as stacks that keep their own, with a step re-entered by
// its application and another stack's steps nested inside it while its
// queue holds events, within its first buffer and beyond: every delivery
// and every packet, in the same order.
func TestScratchStepsAsOwnBuffers(t *testing.T) {
	own := scratchRun(t, nil)
	lent := scratchRun(t, &stack.Scratch{})
	for name, want := range map[string]int{"a delivered": 45, "a sent": 45, "b sent": 45, "b delivered": 1 + 3*45} {
		n := 0
		for _, l := range own {
			if strings.HasPrefix(l, name) {
				n++
			}
		}
		if n != want {
			t.Fatalf("own buffers: %d lines %q, want %d: %q", n, name, want, own)
		}
	}
	if !slices.Equal(own, lent) {
		t.Errorf("with a Scratch:\n%q\nwant (own buffers):\n%q", lent, own)
	}
}
