package stack

import (
	"github.com/layercast/layercast/event"
)

// Layer is one protocol: a state machine stepped by events. The stack calls
// its methods from one goroutine, one at a time, and a layer must not block,
// start goroutines, read the real clock or do I/O: everything goes through the
// Context it is given in Init.
//
// Up receives events from the layer below (or from the network, for the
// bottom layer); Down receives events from the layer above (or from the
// application, for the top layer). The layer owns the event's Message while it
// handles it: it passes it on with Context.Up/Down, or releases it. The
// *event.Event itself is valid only during the call (the stack reuses it);
// Context.Up/Down copy it.
type Layer interface {
	// Init is called once, before any event, with the layer's Context.
	Init(ctx *Context) error
	// Up handles an event coming up from below.
	Up(ev *event.Event)
	// Down handles an event coming down from above.
	Down(ev *event.Event)
}

// HeaderSizer is implemented by layers that prepend headers. The stack sums
// the sizes, adds its frame, and makes every message with that much
// headroom, so no header ever moves a buffer; a layer that prepends without
// declaring it makes the buffer grow (counted by event.Pool.Grows).
type HeaderSizer interface {
	// HeaderSize is the most bytes the layer prepends to one message.
	HeaderSize() int
}

// CompactHolder is implemented by layers that keep a message they receive
// going up past the event that brought it only as event.Message.Compact's
// result (or a copy of its bytes), never as it is (Retain). Stack.
// ReceiveShared lets received messages share a transport's read buffers,
// without copying, only when every layer of the stack is a CompactHolder:
// Compact keeps a shared message in place only within its carrier's
// budget (event.Pins) and copies it otherwise, while a layer that kept a
// shared message as it is could keep every buffer from the transport, and
// the transport then could not read again. The stacks of other layers
// copy every packet, as they always did.
type CompactHolder interface {
	// HoldsCompact marks the layer; it is never called.
	HoldsCompact()
}

// Closer is implemented by layers that hold buffers. Stack.Close calls it
// once per layer, after the Exit event has gone down: the one shutdown path.
// A layer releases what it holds in Close and never on Exit.
type Closer interface {
	Close()
}

// Base is embedded by layers to pass through everything they do not handle.
// It keeps the Context as Ctx.
type Base struct {
	Ctx *Context
}

// Init stores the context.
func (b *Base) Init(ctx *Context) error { b.Ctx = ctx; return nil }

// Up passes the event up unchanged.
func (b *Base) Up(ev *event.Event) { b.Ctx.Up(ev) }

// Down passes the event down unchanged.
func (b *Base) Down(ev *event.Event) { b.Ctx.Down(ev) }

// Entry is one layer of a stack with the name it is registered under.
type Entry struct {
	Name  string
	Layer Layer
}

// Clock gives a stack its time: virtual in the simulator, real in the runner.
type Clock interface {
	Now() event.Time
}

// ClockFunc adapts a function to Clock.
type ClockFunc func() event.Time

// Now calls f.
func (f ClockFunc) Now() event.Time { return f() }

// Logger receives a stack's log lines (already prefixed with time, node and
// layer). Nil discards them.
type Logger func(line string)

// Transport is the network below a stack. The stack calls it from its own
// goroutine only. pkt is valid only during the call: a transport that keeps it
// copies it. Transports never block the stack; a packet they cannot take is
// dropped (the network is lossy) and counted.
type Transport interface {
	// Send transmits pkt to one node.
	Send(to event.NodeID, pkt []byte)
	// Multicast transmits pkt on the group's multicast channel, to every
	// node subscribed to it (including the sender if it is subscribed; the
	// stack drops its own multicasts on the way back in).
	Multicast(g event.GroupID, pkt []byte)
	// Subscribe makes the node receive the group's multicast channel.
	Subscribe(g event.GroupID) error
	// Unsubscribe stops that.
	Unsubscribe(g event.GroupID) error
}

// Channels is implemented by transports that carry multicast channels
// besides groups' (both transport/sim and transport/udp do): the channels a
// multi-group layer asks for with Context.Channel, one per QSM region or
// Spread site. Transport's group methods are the same contract for the
// channel event.ChannelOf(g). How a channel maps to the network is the
// transport's business.
type Channels interface {
	// MulticastOn transmits pkt on channel ch, to every node subscribed to
	// it (as Multicast does for a group's channel).
	MulticastOn(ch event.ChannelID, pkt []byte)
	// SubscribeChannel makes the node receive ch.
	SubscribeChannel(ch event.ChannelID) error
	// UnsubscribeChannel stops that.
	UnsubscribeChannel(ch event.ChannelID) error
}

// Pacer is implemented by transports that can say when they are full. While
// Writable is false the stack asks no feed for packets (QSM's pull-based
// feeds: Feed, the application's queue among them); the transport calls
// Stack.Pump when it has room again.
type Pacer interface {
	Writable() bool
}

// Delivery is a message handed to the application.
type Delivery struct {
	Group event.GroupID // NoGroup for point-to-point
	From  event.NodeID
	// Payload is valid only during the callback; copy it to keep it.
	Payload  []byte
	Recovery event.Recovery
}

// Application receives what comes out of the top of a stack. Methods are
// called on the stack's goroutine and must not block.
type Application interface {
	// Deliver hands over a message.
	Deliver(d Delivery)
	// View reports a new view of a group the node is in.
	View(v *event.ViewInfo)
	// Flow reports back-pressure: ok=false means stop casting to g (Cast
	// returns ErrBackpressure), ok=true means go on.
	Flow(g event.GroupID, ok bool)
}

// Loss reports messages a layer gave up on (event.Lost reaching the top):
// From's messages in Group, the sequence numbers Range says.
type Loss struct {
	Group event.GroupID
	From  event.NodeID
	Range event.LostRange
}

// LossReporter is implemented by applications that want to hear of losses;
// the stack checks for it once, in New. AppFuncs implements it.
type LossReporter interface {
	// Lost reports messages that will never be delivered.
	Lost(l Loss)
}

// BlockReporter is implemented by applications that want to hear of
// view-synchronous flushes (event.Block and event.Unblock reaching the top,
// from layers/vsync); the stack checks for it once, in New. AppFuncs
// implements it. Called on the stack's goroutine; must not block.
type BlockReporter interface {
	// Blocked reports, with blocked=true, that a view change of g is being
	// flushed: the application should stop casting to g (casts made
	// meanwhile are held back, never dropped) and can settle its state for
	// the view it is in, whose last deliveries may still come. With
	// blocked=false the flush is over: the new view has been reported
	// (Application.View, just before) and casting to g may resume.
	Blocked(g event.GroupID, blocked bool)
}

// AppFuncs adapts functions to Application, LossReporter and
// BlockReporter; nil fields ignore their events.
type AppFuncs struct {
	OnDeliver func(d Delivery)
	OnView    func(v *event.ViewInfo)
	OnFlow    func(g event.GroupID, ok bool)
	OnLost    func(l Loss)
	OnBlock   func(g event.GroupID, blocked bool)
}

// Blocked calls OnBlock.
func (a AppFuncs) Blocked(g event.GroupID, blocked bool) {
	if a.OnBlock != nil {
		a.OnBlock(g, blocked)
	}
}

// Lost calls OnLost.
func (a AppFuncs) Lost(l Loss) {
	if a.OnLost != nil {
		a.OnLost(l)
	}
}

// Deliver calls OnDeliver.
func (a AppFuncs) Deliver(d Delivery) {
	if a.OnDeliver != nil {
		a.OnDeliver(d)
	}
}

// View calls OnView.
func (a AppFuncs) View(v *event.ViewInfo) {
	if a.OnView != nil {
		a.OnView(v)
	}
}

// Flow calls OnFlow.
func (a AppFuncs) Flow(g event.GroupID, ok bool) {
	if a.OnFlow != nil {
		a.OnFlow(g, ok)
	}
}
