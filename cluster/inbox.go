package cluster

import (
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// Inbox hands what comes out of the top of one stack to bounded channels:
// the channel form of stack.AppFuncs, for a program that runs a single
// node itself (stack.NewNode on a UDP transport, or stack.New on one it
// wires) rather than a whole Cluster. Give it as the stack's App; it is a
// stack.Application and a stack.LossReporter.
//
// Each channel is bounded (the size given to NewInbox) and waits for its
// reader when full, as Cluster.Deliveries explains: the node's goroutine
// (or, in the simulator, the network's Run) stops there, takes no more
// packets and lets its Cast calls wait; nothing is dropped or queued
// beside the channel. So read it on a goroutine of its own, and call the
// Inbox's Close before the node's: Close ends every wait (what was not yet
// handed over is dropped) and closes the channels once what they hold is
// read.
type Inbox struct {
	// Deliveries receives every message the stack delivers; each Payload
	// is a copy the reader owns.
	Deliveries <-chan stack.Delivery
	// Views receives every view of a group the node is in.
	Views <-chan *event.ViewInfo
	// Losses receives every range of messages a layer gave up on
	// (event.Lost reaching the top): they will never be delivered.
	Losses <-chan stack.Loss

	deliveries chan stack.Delivery
	views      chan *event.ViewInfo
	losses     chan stack.Loss

	gate // no channel is closed while a send is in flight
}

var (
	_ stack.Application  = (*Inbox)(nil)
	_ stack.LossReporter = (*Inbox)(nil)
)

// NewInbox makes an Inbox whose channels hold size items each (256 if size
// is not positive).
func NewInbox(size int) *Inbox {
	if size <= 0 {
		size = defaultChanBuffer
	}
	in := &Inbox{deliveries: make(chan stack.Delivery, size), views: make(chan *event.ViewInfo, size),
		losses: make(chan stack.Loss, size), gate: newGate()}
	in.Deliveries, in.Views, in.Losses = in.deliveries, in.views, in.losses
	return in
}

// Deliver hands a delivery, with its payload copied, to Deliveries. The
// stack calls it.
func (in *Inbox) Deliver(d stack.Delivery) {
	d.Payload = append([]byte(nil), d.Payload...)
	gatedPut(&in.gate, in.deliveries, d)
}

// View hands a copy of a view to Views. The stack calls it.
func (in *Inbox) View(v *event.ViewInfo) {
	c := *v
	c.Members = append([]event.NodeID(nil), v.Members...)
	c.Joined = append([]event.NodeID(nil), v.Joined...)
	c.Left = append([]event.NodeID(nil), v.Left...)
	gatedPut(&in.gate, in.views, &c)
}

// Lost hands a loss to Losses. The stack calls it.
func (in *Inbox) Lost(l stack.Loss) { gatedPut(&in.gate, in.losses, l) }

// Flow does nothing: while flow control holds a group off, Cast says so
// with stack.ErrBackpressure, and a node made with
// stack.NodeConfig.BlockOnBackpressure waits in Cast instead, until the
// stack takes the payload. (A channel of flow changes would stop the node
// whenever the program did not read it.)
func (in *Inbox) Flow(event.GroupID, bool) {}

// Close ends every wait and closes the channels; what they hold can still
// be read. Call it before closing the node, from any goroutine; it is safe
// to call more than once.
func (in *Inbox) Close() {
	in.gate.shut(func() {
		close(in.deliveries)
		close(in.views)
		close(in.losses)
	})
}
