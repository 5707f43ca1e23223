package fifo_test

import (
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/testbed/testkit"
)

// fifoStack is node 1 alone with a fifo layer, in group 1 with node 2.
func fifoStack(t *testing.T, params map[string]string, app stack.Application) *stack.Stack {
	return oneStack(t, fifoAlone(params)(), &testkit.Transport{}, app)
}

// oneStack is node 1 alone with the given layers over tr, in group 1 with
// node 2.
func oneStack(t *testing.T, layers []stack.Entry, tr stack.Transport, app stack.Application) *stack.Stack {
	t.Helper()
	st, err := stack.New(stack.Config{Self: 1, Transport: tr, Clock: stack.ClockFunc(func() event.Time { return 0 }), Layers: layers, App: app})
	if err != nil {
		t.Fatal(err)
	}
	st.InstallView(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}})
	return st
}

func fifoCounter(st *stack.Stack, name string) int64 {
	for _, lc := range st.Counters() {
		for i, n := range lc.Names {
			if lc.Layer == "fifo" && n == name {
				return lc.Values[i]
			}
		}
	}
	return -1
}

// Issue 9 item 7: the application hears which messages fifo gave up.
func TestLostSaysWhichMessages(t *testing.T) {
	var lost []stack.Loss
	st := fifoStack(t, map[string]string{"max_reorder": "4"}, stack.AppFuncs{OnLost: func(l stack.Loss) { lost = append(lost, l) }})
	for seq := uint32(3); seq <= 8; seq++ { // 1 and 2 never come
		st.Inject(0, true, layertest.SeqCast(1, 2, seq, 1, 10))
	}
	var n uint32
	for _, l := range lost {
		if l.Group != 1 || l.From != 2 || !l.Range.Bounded || l.Range.First >= l.Range.End {
			t.Fatalf("loss %+v: want a bounded range of n2's messages in g1", l)
		}
		n += l.Range.Count()
	}
	if len(lost) == 0 || lost[0].Range.First != 1 || lost[len(lost)-1].Range.End != 3 || n != 2 {
		t.Fatalf("losses %+v: want messages 1 and 2 of n2 reported", lost)
	}
	if s := fifoCounter(st, "skipped"); s != int64(n) {
		t.Fatalf("skipped counter %d, losses reported %d", s, n)
	}
	st.Close()
}

// Issue 9 item 6: one shutdown path. Exit going down releases nothing; the
// stack's Close releases fifo's held messages, once.
func TestExitLeavesReleaseToClose(t *testing.T) {
	st := fifoStack(t, nil, nil)
	for seq := uint32(2); seq <= 6; seq++ { // 1 missing: 2..6 held
		st.Inject(0, true, layertest.SeqCast(1, 2, seq, 1, 10))
	}
	held := fifoCounter(st, "buffer_bytes")
	if held <= 0 {
		t.Fatalf("fifo holds %d bytes, want the early messages held", held)
	}
	st.Inject(0, false, event.Event{Kind: event.Exit})
	if b, d := fifoCounter(st, "buffer_bytes"), fifoCounter(st, "released"); b != held || d != 0 {
		t.Fatalf("after Exit: %d bytes held (was %d), %d released; Exit must release nothing", b, held, d)
	}
	st.Close()
	if b, d := fifoCounter(st, "buffer_bytes"), fifoCounter(st, "released"); b != 0 || d != 5 {
		t.Fatalf("after Close: %d bytes held, %d released; want 0 and the 5 held", b, d)
	}
}

// Issue 9 item 6: the join floor travels once, in reliable's header: a
// cast through fifo over reliable is exactly as long on the wire as one
// through reliable alone (fifo used to restate the floor in 17 bytes of
// its own).
func TestFifoAddsNothingOnTheWire(t *testing.T) {
	size := func(names ...string) int {
		tr := &testkit.Transport{Record: true}
		st := oneStack(t, layertest.Registered(nil, names...)(), tr, nil)
		defer st.Close()
		if err := st.Cast(1, layertest.Payload(1, 100)); err != nil {
			t.Fatal(err)
		}
		for _, p := range tr.Packets() {
			if p.Group == 1 && p.To == event.NoNode {
				return len(p.Data)
			}
		}
		t.Fatalf("%v: no multicast sent", names)
		return 0
	}
	if with, without := size("fifo", "reliable"), size("reliable"); with != without {
		t.Errorf("a 100-byte cast is %d bytes on the wire through fifo : reliable, %d through reliable: fifo adds %d", with, without, with-without)
	}
}
