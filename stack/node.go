package stack

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/layercast/layercast/event"
)

// Batch is a set of packets a transport read together (one recvmmsg). The
// transport owns the buffers: Node.Input hands the batch to the node
// goroutine, which feeds it to Stack.ReceiveShared (the messages made of
// it share its buffers when every layer is a CompactHolder; otherwise
// each packet is copied) and calls Release, so the transport can read into
// the same buffers again, once the last message made of it is released:
// within the step, since the layers keep only compacted copies. Nothing
// is allocated per packet.
type Batch struct {
	// Pkts are the packets, each a slice of a transport buffer.
	Pkts [][]byte
	// Done, if set, is called by Release to give the batch back.
	Done func(*Batch)

	// Pins, if set by the transport, bounds how many of its batches
	// messages the layers hold may keep (event.Pins); nil: held messages
	// are copied and none is kept past the call that hands it over.
	Pins *event.Pins

	// carrier stands for the batch's buffers while messages received
	// from it share them (Node with a transport that sets Done).
	carrier *event.Message
}

// share returns the batch's carrier with one reference, which releases
// the batch when its last reference is dropped.
func (b *Batch) share() *event.Message {
	if b.carrier == nil {
		b.carrier = event.NewPinnedCarrier(b.Release, b.Pins)
	}
	b.carrier.Open()
	return b.carrier
}

// Release gives the batch back to its transport.
func (b *Batch) Release() {
	b.Pkts = b.Pkts[:0]
	if b.Done != nil {
		b.Done(b)
	}
}

// Flusher is implemented by transports that batch what the stack sends
// (transport/udp: one sendmmsg per step). Node calls Flush on its
// goroutine after every step, so a step's packets leave together and none
// waits for a later step.
type Flusher interface {
	Flush()
}

// Waker is implemented by transports that can wake the node's goroutine
// on time for short timers (transport/udp: a timerfd; the Go runtime alone
// fires a timer up to a millisecond late). Node calls WakeIn on its
// goroutine with its next deadline, d from now, when that deadline is new
// and the node is about to wait (nothing queued).
type Waker interface {
	WakeIn(d time.Duration)
}

// Poller is implemented by transports that can read their sockets on the
// node goroutine without waiting (transport/udp). A busy node (a sender
// casting in a loop) always leaves a goroutine runnable, and with one P the
// Go scheduler then checks the network only from sysmon, about every 10 ms:
// a reader goroutine's batch would wait that long. Node calls Poll between
// steps, at most every PollEvery, so what arrived is handled within that.
type Poller interface {
	// Poll reads what the sockets hold now, without blocking, and passes
	// each batch to receive, which releases it. A socket whose reader
	// goroutine is handing over a batch is skipped: that batch is on its way.
	Poll(receive func(*Batch))
}

// PollEvery is how often a busy Node polls a Poller transport at most.
const PollEvery = 100 * time.Microsecond

// NodeConfig builds a Node.
type NodeConfig struct {
	// Stack configures the stack; its Clock is ignored and replaced by the
	// node's real clock.
	Stack Config
	// Epoch is time zero of the node's clock (default: when the node is
	// made). Processes that share an epoch have comparable clocks, which
	// latency measurements across processes on one host need. A fixed
	// epoch in the past (time.Unix(0, 0), as stacktool uses) also makes a
	// process restarted under its old id read a later clock than its
	// previous life, which auth's sequence numbers rely on.
	Epoch time.Time
	// BlockOnBackpressure makes Cast and Send wait until the stack takes
	// the payload instead of returning ErrBackpressure.
	BlockOnBackpressure bool
	// Inbox bounds the packet batches waiting for the node goroutine
	// (default 16); Calls bounds waiting application calls (default 64).
	Inbox, Calls int
}

// Node runs one Stack in its own goroutine for a real network: a real
// monotonic clock, one time.Timer reset to Stack.Next, packet batches from
// the transport's reader goroutines through a bounded channel, and the
// application API made safe for concurrent use through a bounded channel of
// calls.
//
// Deliveries, views and flow changes reach the application through
// Stack.App callbacks, which run on the node goroutine: they must return
// quickly and must not call the Node's blocking methods (Cast, Send, Join,
// Leave, Do, Close) — that would deadlock. A callback that needs the stack
// gets it through the Stack passed to a Do function, or hands work to
// another goroutine.
type Node struct {
	st    *Stack
	block bool
	epoch time.Time
	start time.Time
	off   event.Time

	in    chan *Batch
	calls chan *nodeCall
	free  chan *nodeCall // recycled calls (a per-node list, not a sync.Pool: channels stay in their synctest bubble)
	wake  chan struct{}
	quit  chan struct{}
	done  chan struct{}

	closeOnce sync.Once
	pending   []*nodeCall // blocked casts waiting for the stack to take them
	armed     event.Time
	timer     *time.Timer
	flush     Flusher    // the transport, if it batches
	waker     Waker      // the transport, if it wakes on time
	poller    Poller     // the transport, if the node may read its sockets
	polled    event.Time // when the node last polled
	recvFn    func(*Batch)
	woken     event.Time // the deadline the waker was last told of
}

type callKind uint8

const (
	callCast callKind = iota
	callSend
	callJoin
	callLeave
	callDo
)

type nodeCall struct {
	kind    callKind
	group   event.GroupID
	to      event.NodeID
	payload []byte
	fn      func(*Stack)
	reply   chan error
}

// NewNode builds the stack and starts the node goroutine.
func NewNode(cfg NodeConfig) (*Node, error) {
	n := &Node{block: cfg.BlockOnBackpressure, start: time.Now(), armed: event.Never}
	n.epoch = cfg.Epoch
	if n.epoch.IsZero() {
		n.epoch = n.start
	}
	// Wall-clock offset once, monotonic clock after that.
	n.off = event.Time(n.start.Sub(n.epoch))
	sc := cfg.Stack
	sc.Clock = ClockFunc(n.now)
	st, err := New(sc)
	if err != nil {
		return nil, err
	}
	n.st = st
	n.flush, _ = sc.Transport.(Flusher)
	n.waker, _ = sc.Transport.(Waker)
	n.poller, _ = sc.Transport.(Poller)
	n.recvFn = n.receivePolled
	in, calls := cfg.Inbox, cfg.Calls
	if in <= 0 {
		in = 16
	}
	if calls <= 0 {
		calls = 64
	}
	n.in = make(chan *Batch, in)
	n.calls = make(chan *nodeCall, calls)
	n.free = make(chan *nodeCall, calls)
	n.wake = make(chan struct{}, 1)
	n.quit = make(chan struct{})
	n.done = make(chan struct{})
	n.timer = time.NewTimer(time.Hour)
	n.timer.Stop()
	go n.loop()
	return n, nil
}

func (n *Node) now() event.Time { return n.off + event.Time(time.Since(n.start)) }

// Now is the node's clock: time since the epoch.
func (n *Node) Now() event.Time { return n.now() }

// Input hands a batch of packets to the node. It waits while the inbox is
// full (the transport's reader then stops reading and the kernel buffer
// absorbs, then drops) and returns false, without taking the batch, once the
// node is closed.
func (n *Node) Input(b *Batch) bool {
	select {
	case n.in <- b:
		return true
	case <-n.done:
		return false
	}
}

// Wake asks the node to pull waiting application sends (Stack.Pump): a
// Pacer transport calls it when it has room again. It never blocks.
func (n *Node) Wake() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Cast multicasts payload to group g. The payload is copied before Cast
// returns. Without BlockOnBackpressure it returns ErrBackpressure when the
// stack cannot take it now.
func (n *Node) Cast(g event.GroupID, payload []byte) error {
	return n.call(&nodeCall{kind: callCast, group: g, payload: payload})
}

// Send sends payload to one node; the payload is copied before Send returns.
func (n *Node) Send(to event.NodeID, payload []byte) error {
	return n.call(&nodeCall{kind: callSend, to: to, payload: payload})
}

// Join joins group g.
func (n *Node) Join(g event.GroupID) error { return n.call(&nodeCall{kind: callJoin, group: g}) }

// Leave leaves group g.
func (n *Node) Leave(g event.GroupID) error { return n.call(&nodeCall{kind: callLeave, group: g}) }

// Do runs fn on the node goroutine with the stack (to install views, read
// counters) and waits for it.
func (n *Node) Do(fn func(*Stack)) error { return n.call(&nodeCall{kind: callDo, fn: fn}) }

func (n *Node) call(tmpl *nodeCall) error {
	var c *nodeCall
	select {
	case c = <-n.free:
	default:
		c = &nodeCall{reply: make(chan error, 1)}
	}
	reply := c.reply
	*c = *tmpl
	c.reply = reply
	select {
	case n.calls <- c:
	case <-n.done:
		return ErrClosed
	}
	var err error
	select {
	case err = <-c.reply:
	case <-n.done:
		// The loop answers every call it took before it closes; a call
		// it never took is answered here.
		select {
		case err = <-c.reply:
		default:
			return ErrClosed // c may still sit in the channel: do not reuse it
		}
	}
	c.payload, c.fn = nil, nil
	select {
	case n.free <- c:
	default:
	}
	return err
}

// Snapshot is a copy of a running stack's counters, taken on the node's
// goroutine between steps: safe to read from any goroutine afterwards.
type Snapshot struct {
	// At is the node's clock when it was taken.
	At event.Time
	// Layers are every layer's counters, top first.
	Layers []LayerCounters
	// Net are the stack's counters at its bottom edge.
	Net NetStats
	// Backlog is the application sends waiting in the stack.
	Backlog int
}

// Snapshot copies the stack's counters on the node goroutine (through
// Do), then also runs each of also there, so a caller can copy state it
// keeps in callbacks (views, say) at the same moment. It returns
// ErrClosed once the node is closed.
func (n *Node) Snapshot(also ...func(*Stack)) (Snapshot, error) {
	var s Snapshot
	err := n.Do(func(st *Stack) {
		s = Snapshot{At: st.Now(), Layers: st.Counters(), Net: st.Net(), Backlog: st.Backlog()}
		for _, f := range also {
			f(st)
		}
	})
	return s, err
}

// Close closes the stack (layers release what they hold) and stops the
// node goroutine. Blocked calls return ErrClosed. It is safe to call more
// than once and from any goroutine except a callback.
func (n *Node) Close() {
	n.closeOnce.Do(func() { close(n.quit) })
	<-n.done
}

// Done is closed when the node has stopped.
func (n *Node) Done() <-chan struct{} { return n.done }

func (n *Node) loop() {
	defer close(n.done)
	for {
		select {
		case b := <-n.in:
			n.receive(b)
			n.drainIn() // what else is waiting, before re-arming the timer
		case c := <-n.calls:
			n.handle(c)
		case <-n.timer.C:
			n.armed = event.Never
			n.st.Tick()
		case <-n.wake:
			n.st.Pump()
		case <-n.quit:
			n.st.Close()
			n.flushStep() // the layers' last words (gms's goodbye)
			for _, c := range n.pending {
				c.reply <- ErrClosed
			}
			n.pending = nil
			n.timer.Stop()
			// Answer calls already queued; later ones see done.
			for {
				select {
				case c := <-n.calls:
					c.reply <- ErrClosed
				default:
					return
				}
			}
		}
		n.poll()
		n.retry()
		n.arm()
		n.flushStep()
	}
}

// poll reads the transport's sockets on the node goroutine when the last
// poll is PollEvery old (see Poller).
func (n *Node) poll() {
	if n.poller == nil {
		return
	}
	now := n.now()
	if now-n.polled < event.Time(PollEvery) {
		return
	}
	n.polled = now
	n.poller.Poll(n.recvFn)
}

// receivePolled takes a batch Poll read: the batches readers queued first
// go first, so one socket's packets keep their order.
func (n *Node) receivePolled(b *Batch) {
	n.drainIn()
	n.receive(b)
}

// drainIn hands the layers every batch the readers have queued so far.
func (n *Node) drainIn() {
	for {
		select {
		case b := <-n.in:
			n.receive(b)
		default:
			return
		}
	}
}

// flushStep sends what the step left in the transport's batch.
func (n *Node) flushStep() {
	if n.flush != nil {
		n.flush.Flush()
	}
}

// receive feeds a batch to the stack. A transport's batch (one with Done)
// is shared: the messages made of it borrow its buffers, and it goes back
// to the transport when the last of them is released.
func (n *Node) receive(b *Batch) {
	if b.Done == nil {
		_ = n.st.ReceiveBatch(b.Pkts) // malformed packets are counted in Net
		b.Release()
		return
	}
	c := b.share()
	_ = n.st.ReceiveShared(b.Pkts, c)
	c.Release()
}

func (n *Node) handle(c *nodeCall) {
	if n.block && len(n.pending) > 0 && (c.kind == callCast || c.kind == callSend) {
		n.pending = append(n.pending, c) // keep the application's order
		return
	}
	var err error
	switch c.kind {
	case callCast:
		err = n.st.Cast(c.group, c.payload)
	case callSend:
		err = n.st.Send(c.to, c.payload)
	case callJoin:
		err = n.st.Join(c.group)
	case callLeave:
		err = n.st.Leave(c.group)
	case callDo:
		c.fn(n.st)
	}
	if n.block && errors.Is(err, ErrBackpressure) {
		n.pending = append(n.pending, c)
		return
	}
	c.reply <- err
}

// retry offers blocked casts to the stack again, oldest first, after every
// step (a step may have freed the queue or resumed the group).
func (n *Node) retry() {
	for len(n.pending) > 0 {
		c := n.pending[0]
		var err error
		if c.kind == callCast {
			err = n.st.Cast(c.group, c.payload)
		} else {
			err = n.st.Send(c.to, c.payload)
		}
		if errors.Is(err, ErrBackpressure) {
			return
		}
		n.pending[0] = nil
		n.pending = n.pending[1:]
		c.reply <- err
	}
}

// arm resets the one timer to the stack's next deadline, and tells a
// Waker transport of it when the node is about to sleep (nothing queued):
// a busy node moves its deadline every step and needs no wake-up.
func (n *Node) arm() {
	next := n.st.Next()
	if next != n.armed {
		n.armed = next
		if next == event.Never {
			n.timer.Stop()
			return
		}
		n.timer.Reset(time.Duration(next - n.now()))
	}
	if n.waker != nil && next != event.Never && next != n.woken && len(n.in) == 0 && len(n.calls) == 0 {
		n.woken = next
		n.waker.WakeIn(time.Duration(next - n.now()))
	}
}

// SlogLogger routes a stack's log lines (Context.Logf) to l at level, as
// records with the layer and the stack's clock as attributes. It returns
// nil when l discards that level, so layers that check Context.Logging
// do not even build their lines: a real node's protocol chatter costs
// nothing unless asked for (stacktool --log-level debug).
func SlogLogger(l *slog.Logger, level slog.Level) Logger {
	if l == nil || !l.Enabled(context.Background(), level) {
		return nil
	}
	return func(line string) {
		// Context.Logf writes "TIME NODE LAYER: TEXT"; the node is the
		// logger's own, so only the layer and the time are kept.
		if at, rest, ok := strings.Cut(line, " "); ok {
			if _, rest, ok := strings.Cut(rest, " "); ok {
				if layer, text, ok := strings.Cut(rest, ": "); ok && !strings.Contains(layer, " ") {
					l.Log(context.Background(), level, text, "layer", layer, "t", at)
					return
				}
			}
		}
		l.Log(context.Background(), level, line)
	}
}
