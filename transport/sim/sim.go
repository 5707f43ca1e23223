// Package sim is a deterministic discrete-event network: a virtual clock,
// nodes with unicast links and multicast channels, latency and jitter, loss,
// bounded per-node capacity, faults, sites joined by WAN links, and one
// goroutine that steps every node's stack in virtual-time order. The same
// seed gives the same run, byte for byte.
//
// # What a packet experiences
//
// A stack hands a packet to its Node (Send or Multicast). The packet is
// copied into a pooled buffer and then:
//
//  1. Sender NIC queue. If the node has a send capacity (Capacity.SendPPS,
//     SendBps), the packet waits in a FIFO of at most SendQueue packets and
//     is put on the wire one at a time, each taking max(1/SendPPS,
//     size/SendBps). A full queue drops the packet (SendQueueDrops). A
//     multicast costs the sender one packet here, whatever the group size.
//     While the queue is above its high-water mark the node's Writable
//     (stack.Pacer) is false; when it drains the stack is pumped.
//  2. The wire. For each receiver (every subscriber but the sender, for a
//     multicast) independently: a partition between the two drops it; if
//     the two nodes sit in different sites joined by a WANLink, it first
//     waits for that link's shared queue (size/Bandwidth each); then the
//     loss model (Config.Loss, or the link's) may drop it, with state per
//     receiver; then it travels Latency plus a uniform [0, Jitter) delay.
//  3. Receiver buffer. On arrival it enters the receiver's bounded receive
//     buffer (Capacity.RecvBuffer packets, RecvBufferBytes bytes); an
//     arrival that finds it full is dropped (OverflowDrops, counted apart
//     from loss-model drops: this is the datacenter loss of the Ricochet
//     paper, section 2). The receiver takes packets out at RecvPPS/RecvBps
//     (each takes max(1/RecvPPS, size/RecvBps)); a frozen node takes none.
//  4. Stack. The packet is handed to the stack's Receive and its buffer goes
//     back to the pool.
//
// Capacity defaults to unlimited, in which case steps 1 and 3 take no time
// and the packet reaches the stack exactly Latency+jitter after it was sent.
//
// Usage:
//
//	net := sim.New(sim.Config{Seed: 7, Latency: time.Millisecond})
//	nd := net.AddNode(1)
//	st, _ := stack.New(stack.Config{Self: 1, Transport: nd, Clock: nd, Layers: layers})
//	nd.Attach(st)
//	net.At(0, func() { st.Cast(g, payload) })
//	net.RunUntil(event.Time(10 * time.Second))
//
// # Cost
//
// A step costs what it does, not the size of the network. After a packet,
// a timer or a NIC event, that node's stack is asked for its next wake-up;
// so are the stacks that read their clock since the last step, which every
// stack call does (a function scheduled with At casting, an application
// callback calling another stack, the driver calling one between runs).
// For this give each stack its own Node as Clock, as above. A stack clocked
// by the Network itself (Clock: net) cannot be told apart: while one is
// attached, every stack is asked after every scheduled function, which
// costs N times the work and gives the same run; and such a stack called
// from a callback or between runs gets its new timers only at the next
// scheduled function or packet it receives.
//
// With thousands of nodes, what a step costs is mostly waiting for memory:
// each node's and stack's state is cold when its turn comes. While one
// event is handled, the network therefore asks the CPU to load what the
// next few will read (their nodes, stacks, and the stacks' layers),
// which it knows from its queue; AtNode tells it which node a scheduled
// function will call. For the same reason the event queue of such a
// network is a calendar of short time buckets (queue.go), not one heap:
// when every group's periodic timer fires in the same instant, tens of
// thousands of packets are in flight at once. This changes nothing but
// the speed.
package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
	"unsafe"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/prefetch"
	"github.com/layercast/layercast/stack"
)

// Config sets up a network.
type Config struct {
	// Seed makes the run repeatable.
	Seed uint64
	// Latency is the one-way delay of every link.
	Latency time.Duration
	// Jitter adds a uniform random delay in [0, Jitter) to each packet.
	// Packets between one pair of nodes may then be reordered, as on a
	// real network.
	Jitter time.Duration
	// Loss drops packets on arrival at each receiver independently (nil:
	// no loss).
	Loss LossModel
	// Capacity is every node's default capacity (zero: unlimited).
	// SetCapacity overrides it per node.
	Capacity Capacity
	// Trace, if set, is called for every send, delivery, drop and fault.
	Trace func(TraceEvent)
	// ShareReceive hands every packet to its stack as transport/udp does,
	// in a read buffer the stack's messages share (Stack.ReceiveShared),
	// and scribbles over the buffer once the stack lets go of it, before
	// the next packet is read into it: a layer that kept a message in it
	// as it is would deliver garbage. What a run delivers is the same with
	// it as without. SharedKept counts the packets whose buffer a
	// stack kept past the call (a CompactHolder stack keeps none, unless
	// SharePins lets it).
	ShareReceive bool
	// SharePins, with ShareReceive, is how many read buffers the messages
	// stacks hold may keep at once, across the network (event.Pins.Max;
	// transport/udp allows a socket's batches but one): 0 keeps none,
	// every held message is copied. SharedPins reports the budget.
	SharePins int
}

// Network is the simulated network and its virtual clock. It is not safe for
// concurrent use; everything runs on the caller's goroutine.
type Network struct {
	cfg   Config
	now   event.Time
	rng   *rand.Rand
	q     evQueue
	seq   uint64
	nodes map[event.NodeID]*Node
	order []*Node
	// parted: a partition may be in force (Partition; Heal clears it).
	// Without one no packet reads its receiver's Node when it is sent.
	parted bool
	subs   chanSubs // subscribers of each multicast channel, by id
	stats  Stats
	pool   bufPool
	// ShareReceive's read buffers, free ones in shareFree; shareKept
	// counts packets whose buffer was kept past Stack.ReceiveShared
	shareFree []*shareBuf
	shareKept int64
	sharePins event.Pins
	trace     func(TraceEvent)
	drop      DropHook

	fns     []func() // scheduled functions, by simEvent.arg
	freeFns []int
	// castIn is the group a scheduled function will cast in (AtCast),
	// by simEvent.arg; event.NoGroup when not known
	castIn []event.GroupID

	// touched is the nodes whose stacks read their clock (so may have
	// changed their timers) since the last sweep, each once;
	// cur is the node whose own event is being handled, which reschedules
	// it anyway. sweepAll is set once a stack clocked by the Network is
	// attached: its calls cannot be traced to it.
	touched  []*Node
	cur      *Node
	sweepAll bool
	asked    int64 // stacks asked for their next wake-up (tests)

	wan    map[[2]int]*wanLink
	wanDep []wanDep // per multicast: departure time per remote site
}

// Stats counts what the network did.
type Stats struct {
	// Deliveries is packets handed to a receiving stack.
	Deliveries int64
	// Dropped is packets lost by the loss model (per receiver).
	Dropped int64
	// DroppedData and DroppedControl split Dropped by frame flag.
	DroppedData, DroppedControl int64
	// Sent is packets sent (a multicast counts once).
	Sent int64
	// OverflowDrops is arrivals that found a receive buffer full.
	OverflowDrops int64
	// SendQueueDrops is packets refused by a full sender NIC queue.
	SendQueueDrops int64
	// PartitionDrops is packets between nodes on two sides of a partition.
	PartitionDrops int64
	// WANQueueDrops is packets refused by a full WAN link queue.
	WANQueueDrops int64
	// DownDrops is packets arriving at (or queued in) a crashed node.
	DownDrops int64
}

// New makes an empty network.
func New(cfg Config) *Network {
	return &Network{
		cfg:   cfg,
		rng:   rand.New(rand.NewPCG(cfg.Seed, 0x5eed)),
		nodes: map[event.NodeID]*Node{},
		subs:  chanSubs{other: map[event.ChannelID][]sub{}},
		trace: cfg.Trace,
	}
}

// Now is the virtual time. Network implements stack.Clock.
func (n *Network) Now() event.Time { return n.now }

// Stats returns the network's counters.
func (n *Network) Stats() Stats { return n.stats }

// SetTrace sets (or, with nil, removes) the trace hook.
func (n *Network) SetTrace(fn func(TraceEvent)) { n.trace = fn }

// Node is one node's attachment to the network; it implements
// stack.Transport and stack.Pacer for the stack attached to it.
type Node struct {
	// What every packet and wake-up reads comes first, so that a step of a
	// node whose memory is cold (thousands of nodes) touches few cache
	// lines of it (nodeHotLines): an arrival reads both receive buffers'
	// lengths and counts itself in stats, so they come before the rest
	// (the unicast buffer's length on the fourth line was one more load
	// waiting for memory per packet); the capacity and the queues' bytes
	// come after.
	net     *Network
	st      *stack.Stack
	wake    event.Time // the earliest wake-up already queued
	id      event.NodeID
	idx     int32 // position in Network.order
	down    bool
	frozen  bool
	clocked bool // a stack read this node's clock
	touched bool // in Network.touched
	// sendLim and recvLim are cap.sendLimited() and cap.recvLimited()
	// (setCap keeps them).
	sendLim, recvLim bool
	txBusy, rxBusy   bool
	blocked          bool // Writable said no; pump when the queue drains
	// rxu and rxuBytes are the unicast receive buffer when the capacity
	// reads unicast first (Capacity.UnicastFirst); rxHeadU says the packet
	// being taken out came from it.
	rxHeadU  bool
	rx       ring[rxItem]
	rxu      ring[rxItem]
	stats    NodeStats
	rxBytes  int
	rxuBytes int
	part     int // partition set; equal sets talk
	cut      int // cut set (Cut); different non-zero sets do not talk
	site     int

	cap    Capacity
	thawAt event.Time
	tx     ring[txItem]
}

// setCap sets the node's capacity.
func (nd *Node) setCap(c Capacity) {
	nd.cap, nd.sendLim, nd.recvLim = c, c.sendLimited(), c.recvLimited()
}

type txItem struct {
	pb *pktBuf
	to *Node           // nil for a multicast
	ch event.ChannelID // the multicast's channel; 0 for a unicast
}

type rxItem struct {
	pb   *pktBuf
	from event.NodeID
}

// AddNode adds a node. Attach its stack before running.
func (n *Network) AddNode(id event.NodeID) *Node {
	nd := &Node{net: n, id: id, wake: event.Never, idx: int32(len(n.order))}
	nd.setCap(n.cfg.Capacity)
	n.nodes[id] = nd
	n.order = append(n.order, nd)
	return nd
}

// Node returns the node with that id, or nil.
func (n *Network) Node(id event.NodeID) *Node { return n.nodes[id] }

// Attach connects the node's stack. A stack built with this Node as its
// Clock (stack.New reads it) is rescheduled only when something touched it;
// any other stack makes the network ask every stack after every scheduled
// function (see Cost in the package doc).
func (nd *Node) Attach(st *stack.Stack) {
	if !nd.clocked {
		nd.net.sweepAll = true
	}
	nd.st = st
	nd.net.reschedule(nd)
}

// Now is the virtual time, as Network.Now. A Node is the stack.Clock of its
// own stack: every stack entry point (Cast, Receive, Tick, Join...) reads its
// clock, which tells the network the stack may have new timers to schedule.
// Only the node's stack should use it.
func (nd *Node) Now() event.Time {
	n := nd.net
	if !nd.touched && nd != n.cur {
		nd.touch()
	}
	return n.now
}

// touch notes that the node's stack was called from outside its own event.
func (nd *Node) touch() {
	nd.clocked = true // stack.New reads it, always from outside
	nd.touched = true
	nd.net.touched = append(nd.net.touched, nd)
}

// ID is the node's id.
func (nd *Node) ID() event.NodeID { return nd.id }

// Stack is the attached stack.
func (nd *Node) Stack() *stack.Stack { return nd.st }

// Send implements stack.Transport.
func (nd *Node) Send(to event.NodeID, pkt []byte) {
	n := nd.net
	n.stats.Sent++
	dst := n.nodes[to]
	if dst == nil || nd.down {
		return
	}
	nd.enqueueTx(dst, 0, pkt)
}

// Multicast implements stack.Transport: MulticastOn the group's channel.
func (nd *Node) Multicast(g event.GroupID, pkt []byte) {
	nd.MulticastOn(event.ChannelOf(g), pkt)
}

// MulticastOn implements stack.Channels: pkt goes to every node subscribed
// to ch (a channel is its set of subscribers). It costs the sender one
// packet on its NIC.
func (nd *Node) MulticastOn(ch event.ChannelID, pkt []byte) {
	n := nd.net
	n.stats.Sent++
	if nd.down || ch == 0 {
		return
	}
	nd.enqueueTx(nil, ch, pkt)
}

// Subscribe implements stack.Transport.
func (nd *Node) Subscribe(g event.GroupID) error {
	return nd.SubscribeChannel(event.ChannelOf(g))
}

// Unsubscribe implements stack.Transport.
func (nd *Node) Unsubscribe(g event.GroupID) error {
	return nd.UnsubscribeChannel(event.ChannelOf(g))
}

// SubscribeChannel implements stack.Channels: the node joins ch's
// multicast set.
func (nd *Node) SubscribeChannel(ch event.ChannelID) error {
	if ch == 0 || !ch.Valid() {
		return fmt.Errorf("sim: subscribe: %v is not a channel", ch)
	}
	s := nd.net.subs.of(ch)
	i, found := slices.BinarySearchFunc(s, nd.id, cmpSub)
	if !found {
		nd.net.subs.set(ch, slices.Insert(s, i, sub{nd: nd, id: nd.id}))
	}
	return nil
}

// UnsubscribeChannel implements stack.Channels.
func (nd *Node) UnsubscribeChannel(ch event.ChannelID) error {
	s := nd.net.subs.of(ch)
	i, found := slices.BinarySearchFunc(s, nd.id, cmpSub)
	if found {
		nd.net.subs.set(ch, slices.Delete(s, i, i+1))
	}
	return nil
}

var _ stack.Channels = (*Node)(nil)

// sub is a channel's subscriber with its id beside it: sending a
// multicast reads the ids of its receivers (the loss model's state is per
// receiver) and no more of them, where each Node is a cold load at
// thousands of simulated nodes (seven per cast in groups of eight).
type sub struct {
	nd *Node
	id event.NodeID
}

// chanSubs is every channel's subscribers. A group's channel, which
// every cast goes to, is found by indexing (groups are numbered from 1 up);
// any other in a map. With thousands of nodes, the map's lookup was two or
// three loads waiting for memory per multicast, where the index's array of
// slices stays in the caches.
type chanSubs struct {
	grp   [][]sub // by group id, for ids below maxIndexedGroup
	other map[event.ChannelID][]sub
}

// maxIndexedGroup bounds the group ids chanSubs finds by index.
const maxIndexedGroup = 1 << 16

// of is ch's subscribers.
func (c *chanSubs) of(ch event.ChannelID) []sub {
	if uint64(ch) < maxIndexedGroup { // a group's channel (kind 0)
		if id := int(ch); id < len(c.grp) {
			return c.grp[id]
		}
		return nil
	}
	return c.other[ch]
}

// set makes s ch's subscribers.
func (c *chanSubs) set(ch event.ChannelID, s []sub) {
	if uint64(ch) < maxIndexedGroup {
		id := int(ch)
		if id >= len(c.grp) {
			c.grp = append(c.grp, make([][]sub, id+1-len(c.grp))...)
		}
		c.grp[id] = s
		return
	}
	c.other[ch] = s
}

func cmpSub(a sub, id event.NodeID) int {
	switch {
	case a.id < id:
		return -1
	case a.id > id:
		return 1
	}
	return 0
}

// enqueueTx copies pkt and puts it on the sender's NIC.
func (nd *Node) enqueueTx(dst *Node, g event.ChannelID, pkt []byte) {
	n := nd.net
	nd.stats.PacketsSent++
	nd.stats.BytesSent += int64(len(pkt))
	pb := n.pool.get(pkt)
	if n.trace != nil {
		n.emit(TraceEvent{Kind: TraceSend, From: nd.id, To: idOf(dst), Group: g.Group(), Channel: g, Size: len(pkt)})
	}
	if !nd.sendLim {
		n.wire(nd, dst, g, pb)
		n.pool.put(pb)
		return
	}
	if nd.cap.SendQueue > 0 && nd.tx.len() >= nd.cap.SendQueue {
		n.stats.SendQueueDrops++
		nd.stats.SendQueueDrops++
		n.traceDrop(nd.id, idOf(dst), g.Group(), pb, DropSendQueue)
		n.pool.put(pb)
		return
	}
	nd.tx.push(txItem{pb: pb, to: dst, ch: g})
	if l := nd.tx.len(); l > nd.stats.PeakSendQueue {
		nd.stats.PeakSendQueue = l
	}
	if !nd.txBusy {
		nd.txBusy = true
		n.push(simEvent{at: n.now.Add(nd.cap.sendTime(len(pb.b))), kind: evSendDone, node: nd})
	}
}

func idOf(nd *Node) event.NodeID {
	if nd == nil {
		return event.NoNode
	}
	return nd.id
}

// sendDone puts the NIC's head packet on the wire and starts the next.
func (n *Network) sendDone(nd *Node) {
	it, ok := nd.tx.pop()
	if !ok {
		nd.txBusy = false
		return
	}
	if !nd.down {
		n.wire(nd, it.to, it.ch, it.pb)
	}
	n.pool.put(it.pb)
	if h, ok := nd.tx.peek(); ok {
		n.push(simEvent{at: n.now.Add(nd.cap.sendTime(len(h.pb.b))), kind: evSendDone, node: nd})
	} else {
		nd.txBusy = false
	}
	if nd.blocked && nd.tx.len() <= nd.cap.lowWater() {
		nd.blocked = false
		if !nd.down && !nd.frozen && nd.st != nil {
			nd.st.Pump()
			n.reschedule(nd)
		}
	}
}

// wire sends pb from src to dst, or to every subscriber of channel g but
// src when dst is nil. The caller keeps its reference to pb.
func (n *Network) wire(src, dst *Node, g event.ChannelID, pb *pktBuf) {
	if dst != nil {
		n.link(src, dst, dst.id, g, pb)
		return
	}
	n.wanDep = n.wanDep[:0]
	for _, d := range n.subs.of(g) {
		if d.nd != src {
			n.link(src, d.nd, d.id, g, pb)
		}
	}
}

// link carries pb from src to one receiver, dst (whose id is to):
// partition, WAN queue, loss, latency and jitter. It reads dst itself only
// under a partition or across WAN links.
func (n *Network) link(src, dst *Node, to event.NodeID, g event.ChannelID, pb *pktBuf) {
	if n.parted && (src.part != dst.part || src.cut != dst.cut && src.cut != 0 && dst.cut != 0) {
		n.stats.PartitionDrops++
		n.traceDrop(src.id, to, g.Group(), pb, DropPartition)
		return
	}
	lat, jit, loss := n.cfg.Latency, n.cfg.Jitter, n.cfg.Loss
	at := n.now
	if n.wan != nil && src.site != dst.site {
		if w := n.wan[[2]int{src.site, dst.site}]; w != nil {
			lat, jit, loss = w.Latency, w.Jitter, w.Loss
			dep, ok := n.wanDepart(w, dst.site, g, len(pb.b))
			if !ok {
				n.stats.WANQueueDrops++
				n.traceDrop(src.id, to, g.Group(), pb, DropWANQueue)
				return
			}
			at = dep
		}
	}
	if loss != nil && loss.Drop(to, n.rng) {
		n.stats.Dropped++
		dst.stats.LossDrops++
		if len(pb.b) > 0 && pb.b[0]&1 != 0 {
			n.stats.DroppedControl++
		} else {
			n.stats.DroppedData++
		}
		n.traceDrop(src.id, to, g.Group(), pb, DropLoss)
		return
	}
	d := lat
	if jit > 0 {
		d += time.Duration(n.rng.Int64N(int64(jit)))
	}
	pb.refs++
	n.push(simEvent{at: at.Add(d), kind: evArrive, node: dst, pb: pb, arg: uint32(src.id), uni: g == 0})
}

// arrive puts a packet into the receiver's buffer, or drops it. uni: the
// packet was sent to this node alone (with Capacity.UnicastFirst it waits
// in the unicast buffer).
func (n *Network) arrive(nd *Node, pb *pktBuf, from event.NodeID, uni bool) {
	if nd.down || nd.st == nil {
		n.stats.DownDrops++
		n.traceDrop(from, nd.id, event.NoGroup, pb, DropDown)
		n.pool.put(pb)
		return
	}
	if !nd.frozen && !nd.recvLim && nd.rx.len() == 0 && nd.rxu.len() == 0 {
		n.deliver(nd, pb, from)
		return
	}
	c := &nd.cap
	q, qb := &nd.rx, &nd.rxBytes
	if uni && c.UnicastFirst {
		q, qb = &nd.rxu, &nd.rxuBytes
	}
	if c.RecvBuffer > 0 && q.len() >= c.RecvBuffer || c.RecvBufferBytes > 0 && *qb+len(pb.b) > c.RecvBufferBytes {
		n.stats.OverflowDrops++
		nd.stats.OverflowDrops++
		n.traceDrop(from, nd.id, event.NoGroup, pb, DropOverflow)
		n.pool.put(pb)
		return
	}
	q.push(rxItem{pb: pb, from: from})
	*qb += len(pb.b)
	if l := nd.rx.len() + nd.rxu.len(); l > nd.stats.PeakRecvPackets {
		nd.stats.PeakRecvPackets = l
	}
	if b := nd.rxBytes + nd.rxuBytes; b > nd.stats.PeakRecvBytes {
		nd.stats.PeakRecvBytes = b
	}
	n.startRecv(nd)
}

// recvNext returns the buffer the node takes its next packet from: the
// unicast one while it holds a packet, else the (multicast, or only) one.
func (nd *Node) recvNext() (*ring[rxItem], *int, bool) {
	if nd.rxu.len() > 0 {
		return &nd.rxu, &nd.rxuBytes, true
	}
	return &nd.rx, &nd.rxBytes, false
}

// startRecv begins taking the head packet out of the receive buffer.
func (n *Network) startRecv(nd *Node) {
	if nd.rxBusy || nd.frozen || nd.down {
		return
	}
	q, _, uni := nd.recvNext()
	h, ok := q.peek()
	if !ok {
		return
	}
	if !nd.recvLim {
		// unlimited: catch up at once (unicast first, then in arrival
		// order)
		for !nd.frozen && !nd.down {
			q, qb, _ := nd.recvNext()
			it, ok := q.pop()
			if !ok {
				break
			}
			*qb -= len(it.pb.b)
			n.deliver(nd, it.pb, it.from)
		}
		return
	}
	nd.rxBusy, nd.rxHeadU = true, uni
	n.push(simEvent{at: n.now.Add(nd.cap.recvTime(len(h.pb.b))), kind: evRecvDone, node: nd})
}

// recvDone hands the packet being taken out to the stack.
func (n *Network) recvDone(nd *Node) {
	nd.rxBusy = false
	if nd.frozen || nd.down {
		return // the packet stays; thaw starts it again
	}
	q, qb := &nd.rx, &nd.rxBytes
	if nd.rxHeadU {
		q, qb = &nd.rxu, &nd.rxuBytes
	}
	it, ok := q.pop()
	if !ok {
		return
	}
	*qb -= len(it.pb.b)
	n.deliver(nd, it.pb, it.from)
	n.startRecv(nd)
}

// deliver hands pb to the node's stack and releases it.
func (n *Network) deliver(nd *Node, pb *pktBuf, from event.NodeID) {
	n.stats.Deliveries++
	nd.stats.PacketsReceived++
	nd.stats.BytesReceived += int64(len(pb.b))
	if n.trace != nil {
		n.emit(TraceEvent{Kind: TraceDeliver, From: from, To: nd.id, Size: len(pb.b)})
	}
	if n.cfg.ShareReceive {
		n.receiveShared(nd, pb.b)
	} else {
		_ = nd.st.Receive(pb.b) // Receive copies what it keeps
	}
	n.pool.put(pb)
	n.reschedule(nd)
}

// shareBuf is a read buffer of Config.ShareReceive.
type shareBuf struct {
	b    []byte
	pkts [][]byte
	c    *event.Message // the carrier its messages borrow from
	out  bool           // with the stack
}

// receiveShared reads pkt into a read buffer and hands it to nd's stack
// to share (Config.ShareReceive).
func (n *Network) receiveShared(nd *Node, pkt []byte) {
	var sb *shareBuf
	if k := len(n.shareFree); k > 0 {
		sb = n.shareFree[k-1]
		n.shareFree = n.shareFree[:k-1]
	} else {
		sb = &shareBuf{pkts: make([][]byte, 1)}
		var pins *event.Pins
		if n.cfg.SharePins > 0 {
			pins = &n.sharePins
			pins.Max = n.cfg.SharePins
		}
		sb.c = event.NewPinnedCarrier(func() {
			for i := range sb.b {
				sb.b[i] = 0xEE // as a read into it again would
			}
			sb.out = false
			n.shareFree = append(n.shareFree, sb)
		}, pins)
	}
	sb.b = append(sb.b[:0], pkt...)
	sb.pkts[0] = sb.b
	sb.out = true
	sb.c.Open()
	_ = nd.st.ReceiveShared(sb.pkts, sb.c)
	sb.c.Release()
	if sb.out {
		n.shareKept++
	}
}

// SharedKept is how many packets' read buffers a stack kept past the
// call that handed them over (Config.ShareReceive): zero unless a layer
// that is not a stack.CompactHolder kept one, or a CompactHolder broke
// its word.
func (n *Network) SharedKept() int64 { return n.shareKept }

// SharedPins is the budget of read buffers held messages may keep
// (Config.SharePins): how many they keep, the most they kept at once, and
// how many held messages were copied because it was full.
func (n *Network) SharedPins() *event.Pins { return &n.sharePins }

// At schedules fn at virtual time t (or now, if t is past).
func (n *Network) At(t event.Time, fn func()) { n.AtNode(t, nil, fn) }

// AtNode is At for a function that will call nd's stack (an application's
// send): the network uses nd only to get its memory ready beforehand (see
// Cost in the package doc). The run is the same as with At.
func (n *Network) AtNode(t event.Time, nd *Node, fn func()) {
	n.AtCast(t, nd, event.NoGroup, fn)
}

// AtCast is AtNode for a function that will cast in group g on nd's
// stack: the network also warms what the cast will read in the stack's
// layers (stack.Stack.WarmCast). The run is the same as with At.
func (n *Network) AtCast(t event.Time, nd *Node, g event.GroupID, fn func()) {
	if t < n.now {
		t = n.now
	}
	var idx int
	if k := len(n.freeFns); k > 0 {
		idx = n.freeFns[k-1]
		n.freeFns = n.freeFns[:k-1]
		n.fns[idx], n.castIn[idx] = fn, g
	} else {
		idx = len(n.fns)
		n.fns = append(n.fns, fn)
		n.castIn = append(n.castIn, g)
	}
	n.push(simEvent{at: t, kind: evFunc, node: nd, arg: uint32(idx)})
}

// After schedules fn after d.
func (n *Network) After(d time.Duration, fn func()) { n.At(n.now.Add(d), fn) }

// RunUntil processes events in time order until the next one is after t,
// then sets the clock to t.
func (n *Network) RunUntil(t event.Time) {
	if len(n.touched) > 0 {
		n.sweep(false) // stacks the driver called since the last run
	}
	if len(n.order) >= prefetchNodes {
		n.q.setDepth(aheadLen)
	}
	q := &n.q
	for {
		var e simEvent
		if q.depth == 0 {
			// a small network: no lookahead, the calendar's heap alone
			c := &q.cal
			if c.n == 0 || c.far[0].at > t {
				break
			}
			c.n--
			e = c.farPop()
		} else {
			if next := q.peek(); next == nil || next.at > t {
				break
			}
			e = n.pop()
			n.prefetchNext()
		}
		n.now = e.at
		n.handle(&e)
	}
	n.cur = nil // calls between runs come from the driver
	if n.now < t {
		n.now = t
	}
}

// Run runs for d of virtual time.
func (n *Network) Run(d time.Duration) { n.RunUntil(n.now.Add(d)) }

// Pending is the number of queued events (packets in flight, timers,
// scheduled functions).
func (n *Network) Pending() int { return n.q.len() }

// prefetchNext starts loading, while this event is handled, what the next
// few will read: with thousands of nodes every node's memory is cold, and
// a step that waited for each load in turn (the node, then its stack, then
// the stack's queues and layers, then the layers' state for the packet)
// would spend most of its time waiting. The loads of each event are spread
// over the steps before it, each reading only what the previous step asked
// for: the node of the event aheadLen steps away, the stack of the one
// after it, then that stack's own pointers (stack.Stack.Prefetch) and
// the packet, then stack.WarmStages stages of its layers' state for the
// packet (stack.Stack.Warm), the last one step before it is handled; for a
// function scheduled with AtCast, stages of what its cast will read
// (stack.Stack.WarmCast). It only
// reads the queue and changes nothing: an event pushed meanwhile that
// comes first wastes some hints.
func (n *Network) prefetchNext() {
	// One event a stage, written out: the event i places ahead is at
	// stage aheadLen-1-i.
	q := &n.q
	k := q.an
	if k == aheadLen {
		e := q.at(aheadLen - 1)
		if nd := e.node; nd != nil {
			prefetch.Lines(unsafe.Pointer(nd), nodeHotLines)
		}
		if e.pb != nil {
			// the packet's buffer header, read two steps on for where
			// its bytes are
			prefetch.Lines(unsafe.Pointer(e.pb), 1)
		} else if e.kind == evFunc {
			// a scheduled function's closure (its captured variables),
			// the first thing calling it reads
			fn := n.fns[e.arg]
			prefetch.Lines(*(*unsafe.Pointer)(unsafe.Pointer(&fn)), 1)
		}
	}
	if k >= aheadLen-1 {
		if nd := q.at(aheadLen - 2).node; nd != nil && nd.st != nil {
			prefetch.Lines(unsafe.Pointer(nd.st), stack.HotLines)
		}
	}
	if k >= aheadLen-2 {
		if e := q.at(aheadLen - 3); e.node != nil {
			if st := e.node.st; st != nil {
				st.Prefetch()
			}
			if e.pb != nil {
				// the packet was written a while ago: its frame and headers
				prefetch.Lines(unsafe.Pointer(unsafe.SliceData(e.pb.b)), pktHotLines)
			}
		}
	}
	for i := min(k, stack.WarmStages) - 1; i >= 0; i-- {
		e := q.at(i)
		if e.node == nil {
			continue
		}
		st := e.node.st
		switch {
		case st == nil:
		case e.kind == evArrive:
			st.Warm(e.pb.b, stack.WarmStages-1-i)
		case e.kind == evFunc:
			if g := n.castIn[e.arg]; g != event.NoGroup {
				st.WarmCast(g, stack.WarmStages-1-i)
			}
		}
	}
}

// nodeHotLines is how many cache lines from the start of a Node every
// packet reads; pktHotLines, how many of a packet are prefetched (the
// rest the CPU streams in by itself as the stack copies it).
const nodeHotLines, pktHotLines = 3, 2

// prefetchNodes is the network size from which prefetchNext pays: a
// smaller network's nodes and stacks stay in the CPU's caches.
const prefetchNodes = 64

func (n *Network) handle(e *simEvent) {
	// Every event but a scheduled function concerns one node and
	// reschedules it after stepping its stack. A function's node (AtNode)
	// is only a hint: its calls to stacks are traced like any other.
	n.cur = e.node
	if e.kind == evFunc {
		n.cur = nil
	}
	switch e.kind {
	case evArrive:
		n.arrive(e.node, e.pb, event.NodeID(e.arg), e.uni)
	case evRecvDone:
		n.recvDone(e.node)
	case evSendDone:
		n.sendDone(e.node)
	case evWake:
		nd := e.node
		if e.at != nd.wake {
			return // superseded by an earlier wake-up
		}
		nd.wake = event.Never
		if nd.down || nd.frozen || nd.st == nil {
			return
		}
		nd.st.Tick()
		n.reschedule(nd)
	case evThaw:
		n.thaw(e.node)
	case evFunc:
		fn := n.fns[e.arg]
		n.fns[e.arg] = nil
		n.freeFns = append(n.freeFns, int(e.arg))
		fn()
		n.sweep(true)
		return
	}
	if len(n.touched) > 0 {
		// a callback of this node's stack (an application's Deliver, say)
		// called another stack
		n.sweep(false)
	}
}

// sweep reschedules the stacks touched since the last sweep, in the order
// the nodes were added. A stack that no one touched has not changed its
// timers, so asking it would queue nothing; visiting the touched ones in
// node order therefore queues exactly the wake-ups, in the same order, that
// asking every node would. After a scheduled function (fn) with a stack
// clocked by the Network attached, every node is asked: that stack's calls
// leave no trace.
func (n *Network) sweep(fn bool) {
	if fn && n.sweepAll {
		for _, nd := range n.order {
			nd.touched = false
			n.reschedule(nd)
		}
		n.touched = n.touched[:0]
		return
	}
	t := n.touched
	if len(t) > 1 {
		slices.SortFunc(t, func(a, b *Node) int { return int(a.idx) - int(b.idx) })
	}
	for i, nd := range t {
		nd.touched = false
		t[i] = nil
		n.reschedule(nd)
	}
	n.touched = t[:0]
}

// reschedule queues a wake-up for the node's next timer if it is earlier
// than the one already queued.
func (n *Network) reschedule(nd *Node) {
	if nd.st == nil || nd.down || nd.frozen {
		return
	}
	n.asked++
	t := nd.st.Next()
	if t == event.Never || t >= nd.wake {
		return
	}
	if t < n.now {
		t = n.now
	}
	nd.wake = t
	n.push(simEvent{at: t, kind: evWake, node: nd})
}

type evKind uint8

const (
	evArrive evKind = iota
	evRecvDone
	evSendDone
	evWake
	evThaw
	evFunc
)

// simEvent is one queued event, kept small (40 bytes) since the heap moves
// them around: a scheduled function lives in Network.fns, found by arg.
type simEvent struct {
	at   event.Time
	seq  uint64
	node *Node
	pb   *pktBuf
	arg  uint32 // evArrive: the sender; evFunc: index into fns
	kind evKind
	uni  bool // evArrive: sent to this node alone (not a multicast)
}
