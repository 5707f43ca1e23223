package sim

import (
	"fmt"
	"time"

	"github.com/layercast/layercast/event"
)

// TraceKind is what a TraceEvent records.
type TraceKind uint8

// Trace kinds.
const (
	TraceSend    TraceKind = iota + 1 // a stack handed a packet to its node
	TraceDeliver                      // a packet reached a stack
	TraceDrop                         // a packet was lost; Reason says why
	TraceFault                        // crash, freeze, thaw, partition, heal
)

// Drop reasons in TraceEvent.Reason.
const (
	DropLoss      = "loss"       // the loss model
	DropOverflow  = "overflow"   // receive buffer full
	DropSendQueue = "send-queue" // NIC queue full
	DropPartition = "partition"  // sender and receiver partitioned
	DropWANQueue  = "wan-queue"  // WAN link queue full
	DropDown      = "down"       // receiver crashed
)

// TraceEvent is one thing the network did, for Config.Trace.
type TraceEvent struct {
	At    event.Time
	Kind  TraceKind
	From  event.NodeID // sender (NoNode for faults)
	To    event.NodeID // receiver, NoNode for a multicast send; the node of a crash/freeze
	Group event.GroupID
	// Channel is the multicast channel of a multicast send (zero for a
	// unicast); for a group's channel, Group says the same.
	Channel event.ChannelID
	Size    int
	// Reason is the drop reason or the fault ("crash", "freeze 500ms",
	// "thaw", "partition 1,2|3", "heal").
	Reason string
}

// String prints the event on one stable line.
func (e TraceEvent) String() string {
	at := time.Duration(e.At).String()
	switch e.Kind {
	case TraceSend:
		if e.To == event.NoNode {
			if e.Channel.Kind() != event.GroupChannel {
				return fmt.Sprintf("%s send %d->%v %dB", at, e.From, e.Channel, e.Size)
			}
			return fmt.Sprintf("%s send %d->g%d %dB", at, e.From, e.Group, e.Size)
		}
		return fmt.Sprintf("%s send %d->%d %dB", at, e.From, e.To, e.Size)
	case TraceDeliver:
		return fmt.Sprintf("%s deliver %d->%d %dB", at, e.From, e.To, e.Size)
	case TraceDrop:
		return fmt.Sprintf("%s drop %d->%d %dB %s", at, e.From, e.To, e.Size, e.Reason)
	case TraceFault:
		if e.To != event.NoNode {
			return fmt.Sprintf("%s fault %s %d", at, e.Reason, e.To)
		}
		return fmt.Sprintf("%s fault %s", at, e.Reason)
	}
	return at + " ?"
}

func (n *Network) emit(e TraceEvent) {
	e.At = n.now
	n.trace(e)
}

// DropHook is told of every packet the network drops, with the packet's
// bytes (valid only during the call) and the drop reason (Drop*). to is
// event.NoNode for a multicast refused by a full send queue; g is
// event.NoGroup where the network no longer knows the channel (a crashed
// receiver, a full receive buffer).
type DropHook func(from, to event.NodeID, g event.GroupID, pkt []byte, reason string)

// SetDropHook sets (or, with nil, removes) the drop hook. Unlike Trace it
// is called for drops only, so a runner can tell which message each drop
// cost without paying for a call per packet sent or delivered.
func (n *Network) SetDropHook(fn DropHook) { n.drop = fn }

func (n *Network) traceDrop(from, to event.NodeID, g event.GroupID, pb *pktBuf, reason string) {
	if n.drop != nil {
		n.drop(from, to, g, pb.b, reason)
	}
	if n.trace != nil {
		n.emit(TraceEvent{Kind: TraceDrop, From: from, To: to, Group: g, Size: len(pb.b), Reason: reason})
	}
}
