package cluster

import (
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// Gap is a run of one sender's messages in a group that a node's stack
// gave up on: they will never be delivered to that node. A layer says so
// when it skips what it cannot get (fifo past its max_reorder, or after the
// sender left the view; vsync for the messages a readmitted node missed).
// Loss is a packet the network dropped, usually recovered; a Gap is a
// message that was not.
type Gap struct {
	// Node gave up From's messages in Group.
	Node, From int
	Group      string
	// First and End are the sender's sequence numbers skipped, First up
	// to but not including End, when Bounded; otherwise the layer never
	// learnt where the gap begins, and every message of From below End
	// that Node has not delivered is lost.
	First, End uint32
	Bounded    bool
	// Count is the number of messages skipped, 0 when not Bounded.
	Count int
	// At is the node's clock when it gave up (virtual in the simulator).
	At time.Duration
}

// OnGap sets the function called for every Gap. Set it before Start.
func (c *Cluster) OnGap(fn func(Gap)) { c.onGap = fn }

// Gaps returns a channel that receives every Gap, as OnGap does; it is
// bounded and waits for its reader as Deliveries explains.
func (c *Cluster) Gaps() <-chan Gap {
	c.ch.wantG.Store(true)
	return c.ch.gaps
}

// gap is node self's report of what its stack gave up.
func (c *Cluster) gap(self event.NodeID, now func() event.Time, l stack.Loss) {
	if c.onGap == nil && !c.ch.wantG.Load() {
		return
	}
	g := Gap{Node: int(self), From: int(l.From), Group: c.groupName(l.Group), First: l.Range.First,
		End: l.Range.End, Bounded: l.Range.Bounded, Count: int(l.Range.Count()), At: now().Duration()}
	if c.onGap != nil {
		c.serial(func() { c.onGap(g) })
	}
	if c.ch.wantG.Load() {
		put(c.ch, c.ch.gaps, g)
	}
}
