package stack_test

import (
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// A Cast with a Peer goes to that one member only when OneMember says so;
// otherwise, and for OneMember with no Peer, the stack refuses it.
func TestCastWithPeerNeedsOneMember(t *testing.T) {
	tr := &testkit.Transport{Record: true}
	st, err := stack.New(stack.Config{Self: 1, Transport: tr, Clock: stack.ClockFunc(func() event.Time { return 0 }),
		Layers: []stack.Entry{{Name: "pass", Layer: &passLayer{}}}})
	if err != nil {
		t.Fatal(err)
	}
	cast := func(peer event.NodeID, one bool) {
		m := event.NewMessage()
		m.SetPayload([]byte("x"))
		st.Inject(0, false, event.Event{Kind: event.Cast, Group: 5, Peer: peer, OneMember: one, Msg: m})
	}
	cast(3, false)
	cast(event.NoNode, true)
	if n := st.Net().BadCast; n != 2 || len(tr.Packets()) != 0 {
		t.Fatalf("ambiguous casts: BadCast %d, sent %+v; want 2 refused, nothing sent", n, tr.Packets())
	}
	cast(3, true)
	cast(event.NoNode, false)
	p := tr.Packets()
	if len(p) != 2 || p[0].To != 3 || p[0].Group != event.NoGroup || p[1].To != event.NoNode || p[1].Group != 5 || st.Net().BadCast != 2 {
		t.Fatalf("sent %+v, BadCast %d; want one send to n3, then one multicast to g5", p, st.Net().BadCast)
	}
}

// A Lost event reaching the top is reported to the application with the
// range the layer gave.
func TestLostReachesApplication(t *testing.T) {
	var got []stack.Loss
	st := newStopped(t, stack.Config{Layers: []stack.Entry{{Name: "pass", Layer: &passLayer{}}},
		App: stack.AppFuncs{OnLost: func(l stack.Loss) { got = append(got, l) }}})
	st.Inject(0, true, event.Event{Kind: event.Lost, Group: 4, Peer: 2, Lost: &event.LostRange{First: 10, End: 13, Bounded: true}})
	st.Inject(0, true, event.Event{Kind: event.Lost, Group: 4, Peer: 3})
	want := []stack.Loss{
		{Group: 4, From: 2, Range: event.LostRange{First: 10, End: 13, Bounded: true}},
		{Group: 4, From: 3},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("losses %+v, want %+v", got, want)
	}
	if got[0].Range.Count() != 3 || got[1].Range.Count() != 0 {
		t.Fatalf("counts %d %d, want 3 and 0 (unbounded)", got[0].Range.Count(), got[1].Range.Count())
	}
}

// holder keeps a message and releases it in Close; it records the order in
// which it saw Exit and Close.
type holder struct {
	stack.Base
	held *event.Message
	log  *[]string
	name string
}

func (h *holder) Down(ev *event.Event) {
	if ev.Kind == event.Exit {
		*h.log = append(*h.log, h.name+" exit")
	}
	h.Ctx.Down(ev)
}

func (h *holder) Close() {
	*h.log = append(*h.log, h.name+" close")
	h.held.Release() // a second call would panic: released more than retained
}

// Close sends Exit down through every layer first, then closes every
// Closer exactly once, top first; closing again does nothing.
func TestCloseOnePath(t *testing.T) {
	var log []string
	a := &holder{held: event.NewMessage(), log: &log, name: "a"}
	b := &holder{held: event.NewMessage(), log: &log, name: "b"}
	st := newStopped(t, stack.Config{Layers: []stack.Entry{{Name: "a", Layer: a}, {Name: "pass", Layer: &passLayer{}}, {Name: "b", Layer: b}}})
	st.Close()
	st.Close()
	want := []string{"a exit", "b exit", "a close", "b close"}
	if len(log) != len(want) {
		t.Fatalf("log %v, want %v", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("log %v, want %v", log, want)
		}
	}
}
