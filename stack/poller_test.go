package stack_test

import (
	"encoding/binary"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// pollPort is a transport whose "socket" is a list of packets: Poll hands
// what it holds to the node as one batch, as transport/udp's MSG_DONTWAIT
// recvmmsg does, and counts the calls.
type pollPort struct {
	testkit.Transport
	mu     sync.Mutex
	socket [][]byte
	polls  int
}

func (p *pollPort) Poll(receive func(*stack.Batch)) {
	p.mu.Lock()
	p.polls++
	pkts := p.socket
	p.socket = nil
	p.mu.Unlock()
	if len(pkts) > 0 {
		receive(&stack.Batch{Pkts: pkts})
	}
}

func (p *pollPort) put(pkts ...[]byte) {
	p.mu.Lock()
	p.socket = append(p.socket, pkts...)
	p.mu.Unlock()
}

func (p *pollPort) pollCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.polls
}

// numbered is a data packet from node 2 carrying n.
func numbered(n uint32) []byte {
	p := make([]byte, stack.FrameSize+4)
	stack.PutFrame(p, stack.Frame{Kind: event.Cast, Group: 1, Src: 2})
	binary.BigEndian.PutUint32(p[stack.FrameSize:], n)
	return p
}

func numberedRange(from, to uint32) [][]byte {
	var b [][]byte
	for i := from; i < to; i++ {
		b = append(b, numbered(i))
	}
	return b
}

// seenLayer records the number each data packet reaching it carries.
type seenLayer struct {
	stack.Base
	mu   sync.Mutex
	seen []uint32
}

func (l *seenLayer) Up(ev *event.Event) {
	if ev.Kind.IsData() {
		l.mu.Lock()
		l.seen = append(l.seen, binary.BigEndian.Uint32(ev.Msg.Bytes()))
		l.mu.Unlock()
		ev.Msg.Release()
		return
	}
	l.Ctx.Up(ev)
}

func (l *seenLayer) numbers() []uint32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]uint32(nil), l.seen...)
}

func newPollNode(t *testing.T) (*stack.Node, *pollPort, *seenLayer) {
	t.Helper()
	p := &pollPort{}
	l := &seenLayer{}
	nd, err := stack.NewNode(stack.NodeConfig{Stack: stack.Config{
		Self: 1, Transport: p, Layers: []stack.Entry{{Name: "seen", Layer: l}}}})
	if err != nil {
		t.Fatal(err)
	}
	return nd, p, l
}

// TestNodePollKeepsInputOrder: packets a reader goroutine queued through
// Input before a poll read later packets from the same socket reach the
// layers first. The reader's batch (0-9) is queued during a step, while
// the socket already holds 10-19; the poll after that step reads 10-19
// and must hand over 0-9 before them, or one socket's packets would
// arrive out of order (a reliable layer would see a gap and NAK).
func TestNodePollKeepsInputOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nd, p, l := newPollNode(t)
		defer nd.Close()
		time.Sleep(stack.PollEvery) // the next step may poll
		err := nd.Do(func(*stack.Stack) {
			// On the node goroutine: the inbox is buffered, so this
			// queues without a receive, as a reader's hand-over that
			// lands while the node is busy.
			if !nd.Input(&stack.Batch{Pkts: numberedRange(0, 10)}) {
				t.Error("Input refused the batch")
			}
			p.put(numberedRange(10, 20)...)
		})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if p.pollCount() == 0 {
			t.Fatal("the node never polled its Poller transport")
		}
		got := l.numbers()
		if len(got) != 20 {
			t.Fatalf("%d packets reached the layer, want 20: %v", len(got), got)
		}
		for i, v := range got {
			if v != uint32(i) {
				t.Fatalf("packets reached the layer as %v, want 0-19 in order", got)
			}
		}
	})
}

// TestNodePollsBusyAtMostEveryPollEvery: a node kept busy by application
// calls every 20 us reads its socket itself, at most once per PollEvery
// and at least once per PollEvery plus one step, and hands what the
// socket held to the layers in the order it was read.
func TestNodePollsBusyAtMostEveryPollEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nd, p, l := newPollNode(t)
		defer nd.Close()
		const step = 20 * time.Microsecond
		const span = 2 * time.Millisecond
		next := uint32(0)
		start := time.Now()
		for time.Since(start) < span {
			p.put(numbered(next))
			next++
			if err := nd.Do(func(*stack.Stack) {}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(step)
		}
		if err := nd.Do(func(*stack.Stack) {}); err != nil {
			t.Fatal(err)
		}
		polls := p.pollCount()
		most := int(span/stack.PollEvery) + 1
		least := int(span / (stack.PollEvery + step))
		if polls > most || polls < least {
			t.Fatalf("%d polls in %v of steps every %v, want %d-%d", polls, span, step, least, most)
		}
		got := l.numbers()
		// Only what arrived after the last poll may still sit in the socket.
		if len(got) < int(next)-int((stack.PollEvery+step)/step) {
			t.Fatalf("%d of %d packets read by polls", len(got), next)
		}
		for i, v := range got {
			if v != uint32(i) {
				t.Fatalf("packets reached the layer as %v, want in order", got)
			}
		}
	})
}
