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

// holdRun sends n messages, each its own read mostly, to a node of
// config cfg whose layer holds them all until "last" arrives; it returns
// what the node delivered and sent, and its reader's budget: the most
// batches held messages kept, the messages copied, the batches pinned
// and the chunks free once done.
type holdResult struct {
	got, want    []string
	peak, pinned int
	copies       int64
	free, chunks int
}

func holdRun(t *testing.T, cfg Config, n int) holdResult {
	t.Helper()
	var (
		mu   sync.Mutex
		res  holdResult
		done = make(chan struct{})
	)
	rx := open(t, cfg, nil)
	nd, err := stack.NewNode(stack.NodeConfig{Stack: stack.Config{Self: cfg.Self, Transport: rx,
		Layers: []stack.Entry{{Name: "hold", Layer: &holdAll{}}},
		App: stack.AppFuncs{OnDeliver: func(d stack.Delivery) {
			mu.Lock()
			defer mu.Unlock()
			if res.got = append(res.got, string(d.Payload)); string(d.Payload) == "last" {
				close(done)
			}
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nd.Close)
	rx.SetSink(nd)
	tx := open(t, Config{Self: cfg.Self + 1}, nil)
	peer, err := stack.NewNode(stack.NodeConfig{Stack: stack.Config{Self: cfg.Self + 1, Transport: tx,
		Layers: []stack.Entry{{Name: "chan", Layer: &chanLayer{}}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(peer.Close)
	tx.SetSink(peer)
	if err := tx.SetAddr(cfg.Self, rx.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		res.want = append(res.want, fmt.Sprint("msg ", i))
		if err := peer.Send(cfg.Self, []byte(res.want[i])); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // each its own read, mostly
	}
	res.want = append(res.want, "last")
	if err := peer.Send(cfg.Self, []byte("last")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second): // not a speed bound: without free memory it never comes
		t.Fatal("the node stalled: the last send never reached it (held messages keep every read chunk)")
	}
	if err := nd.Do(func(*stack.Stack) {
		rx.mu.Lock()
		defer rx.mu.Unlock()
		for _, r := range rx.readers {
			r.cmu.Lock()
			res.peak, res.pinned, res.copies = r.pins.Peak(), r.pins.Pinned(), r.pins.Copies()
			res.free, res.chunks = len(r.free)+r.reading, len(r.mem)/r.mp
			r.cmu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("batches kept by held messages: peak %d, %d held messages copied; chunks free %d of %d", res.peak, res.copies, res.free, res.chunks)
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(res.got) != fmt.Sprint(res.want) {
		t.Errorf("delivered %q, want %q", res.got, res.want)
	}
	if c := rx.Stats().HeldCopies; c != res.copies {
		t.Errorf("Stats().HeldCopies = %d, want the reader's %d", c, res.copies)
	}
	if res.pinned != 0 || res.free != res.chunks {
		t.Errorf("after the release: %d batches pinned, %d of %d chunks free; want none pinned, all free", res.pinned, res.free, res.chunks)
	}
	return res
}

// Messages a layer holds keep the transport's read memory only while a
// read's worth of it (BatchSize chunks) stays free (event.Pins): past
// that they are copied, so the reader always has room to read the packet
// that releases them into. Were every chunk kept, the node would never
// see that packet.
func TestHeldMessagesLeaveABatchToRead(t *testing.T) {
	const batches = 3
	res := holdRun(t, Config{Self: 1, Batches: batches, BatchSize: 1}, 20)
	if res.peak > batches-1 || res.peak == 0 || res.copies == 0 {
		t.Errorf("batches kept: peak %d, %d held messages copied; want a peak of 1 to %d, some copied", res.peak, res.copies, batches-1)
	}
}

// A batch keeps only the chunks its read filled, so held messages that
// came one to a read keep one chunk each: many more batches than
// Batches-1 (the bound when a batch kept all BatchSize chunks it could
// read into) stay in place, up to the chunks that leave a read's worth
// free. At 1% loss fifo holds almost every message for a repair's round
// trip, in tens of such batches: with 3 batches about half of them were
// copied.
func TestHeldBatchesKeepOnlyTheirChunks(t *testing.T) {
	const batches, size, n = 2, 8, 20
	res := holdRun(t, Config{Self: 3, Batches: batches, BatchSize: size}, n)
	if res.peak <= batches-1 || res.peak > batches*size-size {
		t.Errorf("batches kept by held messages: peak %d; want more than %d (a batch per read), at most %d (a read's worth of chunks free)", res.peak, batches-1, batches*size-size)
	}
}
