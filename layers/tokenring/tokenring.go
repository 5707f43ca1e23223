// Package tokenring is QSM's regional multicast with partitioned token-ring
// recovery and rate control (Ostrowski, Birman, Phanishayee, "QuickSilver
// Scalable Multicast", sections 2.2-2.4; "Quicksilver Scalable Multicast",
// NCA 2008, sections 2-4).
//
// A cast to a group becomes one multicast per QSM region the group spans,
// on the region's own channel (event.RegionChannel). The sender numbers its
// packets per region, across all the groups, so the recovery state of a
// region is the same for 1 group or 8,192; receivers hand each packet up
// under its group.
//
// Recovery runs per region. A region of n nodes is split round robin into
// p = floor(n/replicas) partitions; partition (i mod p) caches packet i, and
// the smallest node of each partition leads it; the first partition's
// leader leads the region. Every interval (or, if the last round is still
// out, as it completes: one token per region) the region leader makes a token
// that goes around its partition, then to the next partition's leader and
// around that partition, and so on back to the region leader. The token
// holds one record per active sender: the cutoff (the highest sequence
// number the region saw, one round late), the NAK set of the node that just
// passed the token (a bounded range list), and the intersection of its
// partition's NAK sets. Each node pushes to its predecessor what the
// predecessor lacks and pulls from it what it lacks itself; it pulls packets
// cached in other partitions from its counterpart there (the member at its
// own position, never the packet's sender) once the token says they are
// stable on their caching replicas (best effort, after the token). A
// partition leader sends the sender the intersection (the collective NAK),
// and the region leader sends each sender
// one ACK: the highest sequence number stable on the caching replicas. The
// next token carries it and how far every node has received, to purge
// caches.
//
// The sender keeps each packet until the region ACKs it, retransmits what a
// collective NAK names (and re-sends its last packet if ACKs stop moving, so
// a lost tail is found), and holds the application off (event.HoldOff) when
// hi_wmark regional packets are pending, or queue casts wait for rate
// credit, until they are down to lo_wmark and half the queue.
// Rate control (section 2.4): every receiver smooths the rate at which new
// packets reach it; the token carries the region's minimum, the region
// leader divides it by the number of active senders and puts it on the ACK,
// and the sender sends at max(rate_min, (1+lambda) times that) through a
// credit scheme (equation 4) whose refill it corrects with equation 3.
//
// Membership comes in Regions events (gms, or the static source): a new
// region view rebuilds partitions and ring; a token of an older view dies
// where it arrives; a removed member stops holding back the ACK. The token
// passes over a member that let a point-to-point send be given up until it
// is heard from again (a keep-alive asks), without moving the ACK or the
// purge point past what it held: the others still recover from each other,
// a frozen member finds what it lacks when it is back, and the senders to
// a crashed member a static membership keeps hold off. A member that sees
// no token for a few intervals while it has data not yet purged sends the
// leader (or whoever it takes for acting) a keep-alive; the first member
// on the path that answers acts for those that do not. Point-to-
// point Sends from the layers above are made reliable (per-peer sequence
// numbers, cumulative ACKs, retransmission on a timeout), as fifo's floor
// requests and mflow's credit need; control casts pass through, and so do
// Sends marked best effort (lec's repairs: numbered and retransmitted in
// order with the token's own control, their flood held the tokens back).
package tokenring

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/ring"
	"github.com/layercast/layercast/internal/wirecodec"
	"github.com/layercast/layercast/layers/internal/p2p"
	"github.com/layercast/layercast/stack"
)

// Config is the layer's configuration (register.go documents each field
// as a parameter).
type Config struct {
	Replicas      int
	Interval      time.Duration
	MaxRanges     int
	MaxSenders    int
	MaxPush       int
	HiWmark       int
	Queue         int
	LoWmark       int
	Window        int
	ProbeRounds   int
	MaxRetrans    int
	RateMin       float64
	Lambda        float64
	Rho           float64
	RateSample    time.Duration
	RateSamples   int
	Credits       int
	P2PTimeout    time.Duration
	P2PWindow     int
	P2PMaxTries   int
	RateControlOn bool
	AckAll        bool
}

// Check reports a configuration that cannot work.
func (c Config) Check() error {
	switch {
	case c.Replicas < 1:
		return fmt.Errorf("tokenring: replicas must be at least 1, got %d", c.Replicas)
	case c.Interval <= 0 || c.P2PTimeout <= 0 || c.RateSample <= 0:
		return fmt.Errorf("tokenring: interval, p2p_timeout and rate_sample must be positive")
	case c.MaxRanges < 1 || c.MaxSenders < 1 || c.MaxPush < 1 || c.MaxRetrans < 1 || c.ProbeRounds < 1:
		return fmt.Errorf("tokenring: max_ranges, max_senders, max_push, max_retrans and probe_rounds must be at least 1")
	case c.Queue < 2:
		return fmt.Errorf("tokenring: queue must be at least 2, got %d", c.Queue)
	case c.HiWmark < 2 || c.LoWmark < 1 || c.LoWmark >= c.HiWmark:
		return fmt.Errorf("tokenring: need 1 <= lo_wmark < hi_wmark (and hi_wmark >= 2), got lo_wmark %d, hi_wmark %d", c.LoWmark, c.HiWmark)
	case c.Window < 2*c.HiWmark:
		return fmt.Errorf("tokenring: window %d must be at least twice hi_wmark %d: a sender may run hi_wmark ahead of the slowest caching replica", c.Window, c.HiWmark)
	case c.RateControlOn && (c.RateMin <= 0 || c.Lambda < 0 || c.Rho <= 0 || c.RateSamples < 1 || c.Credits < 2):
		return fmt.Errorf("tokenring: with rate control, rate_min and rho must be positive, lambda not negative, rate_samples >= 1, credits >= 2")
	case c.P2PWindow < 1 || c.P2PMaxTries < 1:
		return fmt.Errorf("tokenring: p2p_window and p2p_max_tries must be at least 1")
	}
	return nil
}

// Layer is one node's tokenring.
type Layer struct {
	stack.Base
	cfg  Config
	self event.NodeID
	wc   *wirecodec.Codec

	nb *event.Neighbourhood
	// spans lists, for every group of the node, the regions it sends a
	// cast of that group to; out holds the sender's state per region.
	spans map[event.GroupID][]*outRegion
	out   map[event.RegionID]*outRegion
	// resume holds the next sequence number of regions that left the
	// neighbourhood (outRegion.release).
	resume map[event.RegionID]uint32
	// own is the node's own region (receiver side); nil before the first
	// neighbourhood.
	own *region

	// gnext numbers the node's casts per group, across regions (the
	// next to assign; 0: 1): every region a group spans gets every cast,
	// so a member that changes regions keeps one numbering.
	gnext map[event.GroupID]uint32
	// joinedIn holds, per group and member (this node included), the id
	// of the group view in which the member last joined the group, as far
	// as this node's views tell (views.go); gviews the views it comes from.
	joinedIn map[groupMember]uint64
	gviews   map[event.GroupID]*event.ViewInfo
	sendQ    ring.Ring[queued]
	// frontSent lists the regions the front cast went to so far: a new
	// neighbourhood reorders the group's regions, and the cast goes on to
	// those it has not reached (queued.next counts from the start again).
	frontSent []*outRegion
	feed      *stack.Feed
	fwdQ      ring.Ring[fwd] // cached packets to push or send for a pull
	fwdFeed   *stack.Feed
	pending   int // regional packets queued (in casts not yet sent) or not yet ACKed
	unacked   int // regional packets sent and not yet ACKed
	held      map[event.GroupID]bool
	left      map[event.GroupID]bool // groups the application left (its queued casts are dropped)
	rc        rateCtl

	peers map[event.NodeID]*peer
	p2p   *p2p.Proto // point-to-point Sends and control (p2p.go)
	// sessions numbers the point-to-point sessions this node opens (the
	// last one opened; it starts at random, so a restarted node does not
	// reuse its earlier sessions).
	sessions uint32

	tok tokenMsg // decode target, reused
	// holdCtl: a token visit is running; the control packets it makes wait
	// in ctlLater until the token has gone (holdCtlDuring).
	holdCtl  bool
	ctlLater []ctlOut
	scratch  []uint32
	c        counters
}

type queued struct {
	msg  *event.Message
	g    event.GroupID
	next int    // index in spans[g] of the next region to send to
	gseq uint32 // group sequence number, assigned at the first regional send
	// gview is the node's view of g when gseq was assigned (every region
	// gets the cast under the same view).
	gview uint32
	n     int // regional packets counted as pending when queued
	sent  int // regional packets sent so far
}

// New returns a layer with the given (checked) configuration.
func New(cfg Config) *Layer {
	return &Layer{cfg: cfg, spans: map[event.GroupID][]*outRegion{}, out: map[event.RegionID]*outRegion{}, resume: map[event.RegionID]uint32{},
		held: map[event.GroupID]bool{}, left: map[event.GroupID]bool{}, gnext: map[event.GroupID]uint32{}, joinedIn: map[groupMember]uint64{}, gviews: map[event.GroupID]*event.ViewInfo{}, peers: map[event.NodeID]*peer{}, wc: newWireCodec()}
}

var _ stack.Layer = (*Layer)(nil)

// HeaderSize is the largest header the layer prepends to one message.
func (l *Layer) HeaderSize() int { return dataHeaderSize }

// Init implements stack.Layer.
func (l *Layer) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	l.self = ctx.Self()
	ctx.BindCounters(&l.c)
	l.p2p = l.newP2P()
	l.feed = ctx.NewFeed(false, l.pull)
	l.fwdFeed = ctx.NewFeed(false, l.pullForward)
	l.rc.init(l)
	l.sessions = ctx.Rand().Uint32()
	return nil
}

// Down implements stack.Layer.
func (l *Layer) Down(ev *event.Event) {
	switch ev.Kind {
	case event.Cast:
		if ev.Control || ev.Peer != event.NoNode {
			ev.Msg.Prepend(1)[0] = tPass
			l.Ctx.Down(ev)
			return
		}
		l.castDown(ev)
	case event.Send:
		if ev.BestEffort {
			// once, unnumbered: a lost one is not sent again
			ev.Msg.Prepend(1)[0] = tPass
			l.Ctx.Down(ev)
			return
		}
		l.p2pDown(ev)
	case event.Join, event.Leave:
		l.left[ev.Group] = ev.Kind == event.Leave
		l.Ctx.Down(ev)
	default:
		l.Ctx.Down(ev)
	}
}

// Up implements stack.Layer.
func (l *Layer) Up(ev *event.Event) {
	switch ev.Kind {
	case event.Cast, event.Send:
		l.packetUp(ev)
	case event.Regions:
		if ev.Regions != nil {
			l.install(ev.Regions)
		}
		l.Ctx.Up(ev)
	default:
		l.Ctx.Up(ev)
	}
}

// packetUp dispatches a packet by its type byte.
func (l *Layer) packetUp(ev *event.Event) {
	m := ev.Msg
	t, ok := l.Ctx.PacketType(ev, l.c.Malformed)
	if !ok {
		return
	}
	cast := ev.Kind == event.Cast
	switch {
	case t == tData:
		l.dataUp(ev)
	case t == tPass:
		_, _ = m.Consume(1)
		l.Ctx.Up(ev)
	case t == tToken && !cast:
		l.tokenUp(ev)
	case t == tAck && !cast:
		l.ackUp(ev)
	case t == tNak && !cast:
		l.nakUp(ev)
	case t == tPull && !cast:
		l.pullUp(ev)
	case t == tFloor && !cast:
		l.floorUp(ev)
	case (t == tP2P || t == tP2PAck || t == tP2PCtl) && !cast:
		l.p2pUp(ev)
	default:
		l.drop(ev)
	}
}

// controlUp takes tokenring's own control sent reliably (tP2PCtl).
func (l *Layer) controlUp(ev *event.Event) {
	b, err := ev.Msg.Peek(1)
	switch {
	case err != nil:
		l.drop(ev)
	case b[0] == tToken:
		l.tokenUp(ev)
	case b[0] == tNak:
		l.nakUp(ev)
	case b[0] == tPull:
		l.pullUp(ev)
	case b[0] == tFloor:
		l.floorUp(ev)
	default:
		l.drop(ev)
	}
}

// drop discards a malformed packet.
func (l *Layer) drop(ev *event.Event) { l.Ctx.DropMalformed(ev, l.c.Malformed) }

// sendCtl sends a control packet of ours to one node.
func (l *Layer) sendCtl(to event.NodeID, m *event.Message) {
	l.Ctx.Down(&event.Event{Kind: event.Send, Peer: to, Control: true, Msg: m})
}

// sendBody sends typ followed by the msgpack encoding of v to one node,
// reliably (QSM passes control by a TCP-like unicast), and returns its
// size.
func (l *Layer) sendBody(to event.NodeID, typ byte, v any) int {
	return l.sendEncoded(to, typ, v, true)
}

// sendPull sends a pull to another partition best effort: its answer
// acknowledges it (TCP piggybacks the ACK on the reply), and a pull lost,
// or answered by packets lost, is asked again at the next token visit,
// since the token's unions still name what the node lacks (QSM 2005
// section 2.3.3: the same packet requested in different rounds); asked
// two visits running, it goes to the partition's next member (a crashed
// counterpart, pullOthers). Sent reliably, each cost a point-to-point ACK
// too, at up to p-1 such pulls per node per round: with 5 partitions at
// line rate the nodes took more packets than they could and the rounds
// grew. A pull to the predecessor stays reliable: its give-up is how a
// node learns that its neighbour on the ring is gone (sent best effort,
// qsm.stack soak seed 101, with two crashes under static membership, lost
// 293 owed deliveries).
func (l *Layer) sendPull(to event.NodeID, m *rangeMsg) {
	l.sendEncoded(to, tPull, m, false)
}

func (l *Layer) sendEncoded(to event.NodeID, typ byte, v any, reliable bool) int {
	body := l.wc.Encode(v)
	m := l.Ctx.NewMessage()
	b := m.Append(1 + len(body))
	b[0] = typ
	copy(b[1:], body)
	n := len(b)
	switch {
	case l.holdCtl && typ != tToken:
		l.ctlLater = append(l.ctlLater, ctlOut{to: to, msg: m, reliable: reliable})
	case reliable:
		l.sendReliably(to, m)
	default:
		l.sendCtl(to, m)
	}
	return n
}

// ctlOut is a control packet held back while the token is at this node.
type ctlOut struct {
	to       event.NodeID
	msg      *event.Message
	reliable bool
}

// sendReliably sends one of tokenring's own control packets to one node
// through the reliable point-to-point path.
func (l *Layer) sendReliably(to event.NodeID, m *event.Message) {
	if !l.p2pQueue(to, m, tP2PCtl, true, event.NoGroup) {
		l.sendCtl(to, m) // no peer state for it: best effort
	}
}

// holdCtlDuring runs fn (a token visit) with the control packets it
// makes (pulls, collective NAKs, keep-alives) held back, and sends them
// after it: the token goes out first. In front of it they cost the next
// hop up to one packet time on the wire each (a node pulls from its
// predecessor and from every other partition), and the token's round is
// the region's feedback loop (QSM 2008 section 3: tokens are the traffic
// most sensitive to waiting behind other packets).
func (l *Layer) holdCtlDuring(fn func()) {
	if l.holdCtl {
		fn()
		return
	}
	l.holdCtl = true
	fn()
	l.holdCtl = false
	for i, c := range l.ctlLater {
		if c.reliable {
			l.sendReliably(c.to, c.msg)
		} else {
			l.sendCtl(c.to, c.msg)
		}
		l.ctlLater[i] = ctlOut{}
	}
	l.ctlLater = l.ctlLater[:0]
}

// Close releases every buffered message (the stack is closing).
func (l *Layer) Close() {
	for l.sendQ.Len() > 0 {
		q := l.sendQ.Pop()
		q.msg.Release()
	}
	for l.fwdQ.Len() > 0 {
		f := l.fwdQ.Pop()
		f.msg.Release()
	}
	for _, o := range l.out {
		o.release(l)
	}
	if l.own != nil {
		l.own.release(l)
	}
	for _, p := range l.peers {
		p.Close()
	}
}

// setPending adjusts the pending count and applies back-pressure.
func (l *Layer) setPending(delta int) {
	l.pending += delta
	l.c.PendingNow.Set(int64(l.pending))
	l.c.PendingPeak.Max(int64(l.pending))
	if l.pending <= l.cfg.LoWmark && l.sendQ.Len() <= l.cfg.Queue/2 && len(l.held) > 0 {
		gs := slices.Sorted(maps.Keys(l.held)) // in group order: runs repeat
		clear(l.held)
		for _, g := range gs {
			l.Ctx.Up(&event.Event{Kind: event.Resume, Group: g})
		}
	}
}

// setCache adjusts the bytes cached for peers and the buffer counters.
func (l *Layer) setCache(delta int64) {
	v := l.c.CacheBytes.Value() + delta
	l.c.CacheBytes.Set(v)
	l.c.PeakBuffer.Max(v)
}
