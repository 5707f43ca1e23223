package udp

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// holdAll holds every send it receives (as Compact's result) until one
// whose payload is "last" arrives, then delivers them all in order: a
// stream behind a gap that the last packet fills.
type holdAll struct {
	stack.Base
	held []*event.Message
}

func (l *holdAll) Up(ev *event.Event) {
	if ev.Kind != event.Send || ev.Msg == nil {
		l.Ctx.Up(ev)
		return
	}
	if string(ev.Msg.Bytes()) != "last" {
		l.held = append(l.held, ev.Msg.Compact())
		return
	}
	for _, m := range l.held {
		l.Ctx.Up(&event.Event{Kind: event.Send, Peer: ev.Peer, Msg: m})
	}
	l.held = nil
	l.Ctx.Up(ev)
}

func (l *holdAll) HoldsCompact() {}

func (l *holdAll) Close() {
	for _, m := range l.held {
		m.Release()
	}
}

// Messages a layer holds stay in the transport's read batches only up to
// Batches-1 of them (event.Pins): past that they are copied, so the
// reader always has a batch to read the packet that releases them into.
// Were every batch kept, the node would never see that packet.
func TestHeldMessagesLeaveABatchToRead(t *testing.T) {
	const n, batches = 20, 3
	var (
		mu   sync.Mutex
		got  []string
		done = make(chan struct{})
	)
	rx := open(t, Config{Self: 1, Batches: batches, BatchSize: 1}, nil)
	nd, err := stack.NewNode(stack.NodeConfig{Stack: stack.Config{Self: 1, Transport: rx,
		Layers: []stack.Entry{{Name: "hold", Layer: &holdAll{}}},
		App: stack.AppFuncs{OnDeliver: func(d stack.Delivery) {
			mu.Lock()
			defer mu.Unlock()
			if got = append(got, string(d.Payload)); string(d.Payload) == "last" {
				close(done)
			}
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nd.Close)
	rx.SetSink(nd)
	tx := open(t, Config{Self: 2}, nil)
	peer, err := stack.NewNode(stack.NodeConfig{Stack: stack.Config{Self: 2, Transport: tx,
		Layers: []stack.Entry{{Name: "chan", Layer: &chanLayer{}}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(peer.Close)
	tx.SetSink(peer)
	if err := tx.SetAddr(1, rx.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range n {
		want = append(want, fmt.Sprint("msg ", i))
		if err := peer.Send(1, []byte(want[i])); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // each its own read, mostly
	}
	want = append(want, "last")
	if err := peer.Send(1, []byte("last")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second): // not a speed bound: without a free batch it never comes
		t.Fatal("the node stalled: the last send never reached it (held messages keep every read batch)")
	}
	var peak, pinned, lim int
	var copies int64
	if err := nd.Do(func(*stack.Stack) {
		rx.mu.Lock()
		defer rx.mu.Unlock()
		for _, r := range rx.readers {
			peak, pinned, copies, lim = r.pins.Peak(), r.pins.Pinned(), r.pins.Copies(), r.pins.Max
		}
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("batches kept by held messages: peak %d (at most %d), %d held messages copied", peak, lim, copies)
	if peak > batches-1 || peak == 0 || copies == 0 || pinned != 0 {
		t.Errorf("batches kept: peak %d, %d now, %d held messages copied; want a peak of 1 to %d, none now, some copied", peak, pinned, copies, batches-1)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("delivered %q, want %q", got, want)
	}
}
