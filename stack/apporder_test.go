package stack_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// flushingLayer, on a view from below, passes up what a view-synchronous
// layer does: Block, the old view's last two deliveries, the view, Unblock,
// all in one step.
type flushingLayer struct{ stack.Base }

func (l *flushingLayer) Up(ev *event.Event) {
	if ev.Kind != event.View {
		l.Ctx.Up(ev)
		return
	}
	g := ev.Group
	l.Ctx.Up(&event.Event{Kind: event.Block, Group: g})
	for _, p := range []string{"a", "b"} {
		m := l.Ctx.NewMessage()
		m.SetPayload([]byte(p))
		l.Ctx.Up(&event.Event{Kind: event.Cast, Group: g, Peer: 2, Msg: m})
	}
	l.Ctx.Up(ev)
	l.Ctx.Up(&event.Event{Kind: event.Unblock, Group: g})
}

// Control goes before data inside the stack, but the application sees the
// top layer's events in the order it passed them up: deliveries queued
// before a view reach the application before it, and Block and Unblock
// reach it through BlockReporter.
func TestAppSeesTopLayerOrder(t *testing.T) {
	var got []string
	st, err := stack.New(stack.Config{Self: 1, Transport: &testkit.Transport{}, Clock: stack.ClockFunc(func() event.Time { return 0 }),
		Layers: []stack.Entry{{Name: "flush", Layer: &flushingLayer{}}},
		App: stack.AppFuncs{
			OnDeliver: func(d stack.Delivery) { got = append(got, "deliver "+string(d.Payload)) },
			OnView:    func(v *event.ViewInfo) { got = append(got, fmt.Sprint("view ", v.ID)) },
			OnBlock:   func(g event.GroupID, blocked bool) { got = append(got, fmt.Sprint("blocked ", blocked)) },
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.InstallView(&event.ViewInfo{Group: 1, ID: 7, Members: []event.NodeID{1, 2}})
	want := []string{"blocked true", "deliver a", "deliver b", "view 7", "blocked false"}
	if !slices.Equal(got, want) {
		t.Errorf("application saw %q, want %q", got, want)
	}
}
