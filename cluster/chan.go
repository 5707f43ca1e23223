package cluster

import "sync/atomic"

// defaultChanBuffer is Config.ChanBuffer's default.
const defaultChanBuffer = 256

// WithChanBuffer sets Config.ChanBuffer, the capacity of each channel that
// Deliveries, Views, Losses and Gaps return.
func WithChanBuffer(n int) Option { return func(c *Config) { c.ChanBuffer = n } }

// chans are the bounded channels behind Deliveries, Views, Losses and
// Gaps. Each
// is made in New and filled only once the application has asked for it, so
// a program that only uses callbacks never waits on a channel nobody reads.
type chans struct {
	deliveries chan Delivery
	views      chan View
	losses     chan Loss
	gaps       chan Gap
	// wantD, wantV, wantL and wantG say which channels the application
	// asked for.
	wantD, wantV, wantL, wantG atomic.Bool

	gate // no channel is closed while a send is in flight
}

func newChans(size int) *chans {
	return &chans{deliveries: make(chan Delivery, size), views: make(chan View, size),
		losses: make(chan Loss, size), gaps: make(chan Gap, size), gate: newGate()}
}

// put sends v on ch, waiting while ch is full, unless the cluster is (or
// gets) closed.
func put[T any](c *chans, ch chan T, v T) { gatedPut(&c.gate, ch, v) }

// shut ends every waiting send and closes the channels; what they hold can
// still be read.
func (c *chans) shut() {
	c.gate.shut(func() {
		close(c.deliveries)
		close(c.views)
		close(c.losses)
		close(c.gaps)
	})
}

// Deliveries returns a channel that receives every delivery, as OnDeliver
// does (both may be used; the callback runs first). Each Delivery's Payload
// is a copy the reader owns. Ask for it before Start, so that nothing is
// missed; Close closes it (what it holds can still be read).
//
// The channel is bounded (Config.ChanBuffer, default 256), and while the
// cluster runs nothing is dropped from it or queued beside it: when it is
// full, the node with a delivery to hand over waits for the reader. That is back-pressure, and
// it reaches the network: in the simulator, Run (or Start, CastWait,
// RunUntilQuiet) stops the simulated clock until the channel is read, so
// results do not depend on how fast the reader is; over UDP the node's
// goroutine waits, takes no more packets (its socket buffer fills, then
// the kernel drops and counts them, and the senders' recovery repairs them
// once the reader is back), and its Cast, Join and Metrics wait with it.
//
// So read the channels on a goroutine of their own, started before Start.
// A program that reads them on the goroutine that runs the simulated
// cluster waits for itself forever once more than ChanBuffer items arrive
// in one Run. Over UDP, Close may be called from any goroutine: it ends
// every wait (what a node had not yet handed over, and what comes out of
// the stacks as they stop, is not sent) and closes the channels.
func (c *Cluster) Deliveries() <-chan Delivery {
	c.ch.wantD.Store(true)
	return c.ch.deliveries
}

// Views returns a channel that receives every view a node installs, as
// OnView does; it is bounded and waits for its reader as Deliveries
// explains. With static membership Start installs every node's first
// views, so start reading before Start.
func (c *Cluster) Views() <-chan View {
	c.ch.wantV.Store(true)
	return c.ch.views
}

// Losses returns a channel that receives every packet the simulated
// network drops, as OnLoss does (over UDP it receives nothing: drops are
// only counted); it is bounded and waits for its reader as Deliveries
// explains. Under heavy loss it fills fastest: read it, or do not ask for
// it.
func (c *Cluster) Losses() <-chan Loss {
	c.ch.wantL.Store(true)
	return c.ch.losses
}

// chanDeliver hands a delivery to the Deliveries channel, if asked for,
// copying the payload (the stack reuses its buffer after the call).
func (c *Cluster) chanDeliver(d Delivery) {
	if !c.ch.wantD.Load() {
		return
	}
	d.Payload = append([]byte(nil), d.Payload...)
	put(c.ch, c.ch.deliveries, d)
}

// chanView hands a view to the Views channel, if asked for.
func (c *Cluster) chanView(v View) {
	if c.ch.wantV.Load() {
		put(c.ch, c.ch.views, v)
	}
}

// chanLoss hands a drop to the Losses channel, if asked for.
func (c *Cluster) chanLoss(l Loss) {
	if c.ch.wantL.Load() {
		put(c.ch, c.ch.losses, l)
	}
}
