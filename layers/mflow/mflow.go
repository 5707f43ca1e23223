// Package mflow is MFLOW, the credit-based multicast flow control layer of
// Ensemble (Xiao, Birman, van Renesse), with bulk and staggered
// acknowledgements. It needs reliable FIFO delivery below it:
//
//	mflow(window=50KB, ack_thresh=25KB) : fifo : reliable
//
// Every sender in a group runs its own "one sender, n-1 receivers"
// instance. A multicast costs its payload size plus a fixed overhead and
// leaves only when the sender has that much credit for every receiver;
// otherwise it waits in a queue, and past hi_wmark queued messages the
// application is told to hold off (event.HoldOff going up; event.Resume when
// the queue has drained to half). Receivers count the bytes they receive from
// each sender and acknowledge, point to point, when the count passes
// ack_thresh; one acknowledgement returns what was counted (bulk). The
// receivers' counts are staggered so their acknowledgements reach the sender
// evenly spread over the traffic instead of in a storm: for sender s the
// other members are numbered r' = 0..n-2 in view order, receiver r' starts
// its count at -offset, offset = r' * ack_thresh / (n-1), so it
// acknowledges at offset + k*ack_thresh in the sender's stream. The sender
// gives each staggered receiver (offset > 0) ack_thresh of headroom: its
// credit starts at window + ack_thresh, so that its acknowledgement at
// offset + k*ack_thresh allows what the unstaggered protocol allows only at
// (k+1)*ack_thresh. Without it (Ensemble's mcredit) the n-1 receivers each
// stop the sender at their own point of the cycle once ack_thresh passes
// equation 6's bound, and staggering multiplies the waits; with it,
// staggering never makes the sender wait longer than without (see
// headroom). Everything happens on sends and receipts: no timers, and
// nothing is sent while no application sends.
//
// What a receiver can have to hold: at most window weighted bytes that it
// has not yet taken in at offset 0 (or without stagger), window + ack_thresh
// for a staggered receiver (window + ack_thresh - offset once it has
// acknowledged). A message larger than window - ack_thresh is let through
// once the least-credited receiver has less than ack_thresh outstanding
// (otherwise it could never fit), so for such messages the bound is
// ack_thresh plus the message.
//
// The sender also keeps what shows the acknowledgements spreading (or not):
// acks_recv, and ack_burst_max, the most it received within any 1 ms of its
// clock.
//
// Flow-controlled multicasts carry a 5-byte header (a tag and the sender's
// view epoch) so that, across a view change, each receiver closes its count
// of the old view at exactly the sender's switch point and returns what it
// counted there (a "switch" acknowledgement): no credit is lost or
// duplicated, departed receivers' credit is dropped, and new receivers start
// with a full window.
package mflow

import (
	"encoding/binary"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// Config holds mflow's parameters; sizes are weighted bytes (payload plus
// Overhead per message).
type Config struct {
	// Window is how many unacknowledged bytes a sender may have towards
	// each receiver (default 2000000; Ensemble's 50000).
	Window int64
	// AckThresh is how many bytes a receiver counts before it
	// acknowledges (default 500000; Ensemble's 25000).
	AckThresh int64
	// Overhead is added to each message's payload size (the cost of the
	// headers of the layers below; default 100).
	Overhead int64
	// HiWmark is how many messages may queue for credit before the
	// application is told to hold off (default 100).
	HiWmark int
	// Stagger staggers the receivers' acknowledgements (default on).
	Stagger bool
}

// DefaultConfig is mflow's default configuration: a 2,000,000-byte window
// and a 500,000-byte ack_thresh, the rest as Ensemble's.
//
// Equation 6 (ack_thresh <= window - 2ε·size·rate) asks the window to cover
// what the sender sends in a credit round trip. Ensemble's 50000/25000
// covers 2ε·size·rate = 25 KB: 22 messages of 1,100 weighted bytes, 220 µs
// at 100k msgs/s. Over UDP between processes on one host a credit round
// trip (the receiver's scheduling, its step, the sender's) takes longer than
// that, and after a loss the receiver returns no credit until the NAK has
// recovered the gap (mflow counts what reliable FIFO delivers): there
// nearly every cast waited for credit (199,658 of 200,000 with 1 sender and
// 3 receivers). 2,000,000/500,000 covers 1.5 MB, 3.4 ms at 400k msgs/s
// of 1,100 bytes, room for a round trip and a NAK recovery, at efficiency
// 0.993 with 4 members (equation 3). Each receiver may then hold up to
// 2.5 MB per sender (window + ack_thresh, staggered).
func DefaultConfig() Config {
	return Config{Window: 2000000, AckThresh: 500000, Overhead: 100, HiWmark: 100, Stagger: true}
}

// EnsembleConfig is Ensemble's MFLOW configuration (window 50000,
// ack_thresh 25000), mflow's default before it covered a UDP host's
// bandwidth-delay product: the simulator's paper reproductions and tests
// state it explicitly.
func EnsembleConfig() Config {
	return Config{Window: 50000, AckThresh: 25000, Overhead: 100, HiWmark: 100, Stagger: true}
}

// Layer is one node's mflow layer. It keeps a sender instance per group it
// casts to and a receiver count per (group, sender) it hears from.
type Layer struct {
	stack.Base
	cfg Config

	send  map[event.GroupID]*sender
	recv  map[rkey]*receiver
	views map[event.GroupID]*views

	queued int64 // bytes waiting for credit, all groups

	c counters
	// early is how many receiver counts exist for senders that are not
	// members of this node's current view of their group (a view this
	// node has not installed yet); at most maxEarly, and only in groups
	// this node is in or has asked to join.
	early int
	// joining holds the groups the application asked to join (and has
	// not left).
	joining           map[event.GroupID]bool
	blockedNs, blocks map[event.NodeID]*stack.Counter

	// ackWin holds the arrival times of the acknowledgements of the last
	// millisecond (a ring: a larger burst saturates at its size).
	ackWin          [ackWinSize]event.Time
	ackHead, ackLen int
}

// ackBurstWindow is the span over which ack_burst_max counts arrivals.
const ackBurstWindow = event.Time(time.Millisecond)

// ackWinSize bounds ack_burst_max (a burst of more reads as this many).
const ackWinSize = 64

var _ stack.Layer = (*Layer)(nil)

// New makes an mflow layer. The configuration must be valid (see Check).
func New(cfg Config) *Layer {
	return &Layer{
		cfg:       cfg,
		send:      map[event.GroupID]*sender{},
		recv:      map[rkey]*receiver{},
		views:     map[event.GroupID]*views{},
		joining:   map[event.GroupID]bool{},
		blockedNs: map[event.NodeID]*stack.Counter{},
		blocks:    map[event.NodeID]*stack.Counter{},
	}
}

// Init implements stack.Layer.
func (l *Layer) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	ctx.BindCounters(&l.c)
	return nil
}

// HeaderSize implements stack.HeaderSizer.
func (l *Layer) HeaderSize() int { return dataHeaderSize }

// maxEarly bounds the receiver counts kept for senders outside this node's
// current view of their group. Such a count is needed when a sender moves
// to a view (with this node in it) before this node does: the bytes it
// counts are owed to that sender once the view arrives. A non-member can
// only ever occupy these few entries, whatever ids it forges.
const maxEarly = 16

// rkey names a receiver count: the group and its sender.
type rkey struct {
	g event.GroupID
	s event.NodeID
}

// receiver is this node's count of what it received from one sender.
type receiver struct {
	epoch uint32
	off   int64 // bytes of this epoch never returned (the stagger offset)
	c     int64 // counted and not yet returned, less off (starts at -off)
	due   int64 // acknowledge when c reaches due (ack_thresh when off > 0)
	// early: the sender was not a member of this node's view of the group
	// when the count began (counted in Layer.early).
	early bool
}

// views keeps a group's current and previous view, so a receiver can place
// itself in the view a message was sent in.
type views struct {
	cur, prev *event.ViewInfo
}

// offset is receiver self's stagger offset for sender s in view v: self's
// position among the members other than s, times ack_thresh/(n-1).
func (l *Layer) offset(v *event.ViewInfo, s, self event.NodeID) int64 {
	if !l.cfg.Stagger || v == nil {
		return 0
	}
	rs, rr := v.Rank(s), v.Rank(self)
	m := int64(v.Size() - 1)
	if rs < 0 || rr < 0 || m <= 0 {
		return 0
	}
	r := int64(rr)
	if rr > rs {
		r--
	}
	return r * l.cfg.AckThresh / m
}

// member reports whether s and self are both members of the group's
// current view.
func (vs *views) member(s, self event.NodeID) bool {
	return vs != nil && vs.cur != nil && vs.cur.Has(s) && vs.cur.Has(self)
}

// ahead reports whether epoch names a view later than the current one (or
// there is none yet): one this node may still have to install.
func (vs *views) ahead(epoch uint32) bool {
	if vs == nil || vs.cur == nil {
		return true
	}
	return int32(epoch-uint32(vs.cur.ID)) > 0
}

// wanted reports whether this node is in group g or has asked to join
// it: the only groups where a sender this node does not know yet may be
// owed a count.
func (l *Layer) wanted(g event.GroupID, vs *views) bool {
	return l.joining[g] || (vs != nil && vs.cur != nil && vs.cur.Has(l.Ctx.Self()))
}

// viewFor returns the view with that epoch if known, else the current one.
func (vs *views) viewFor(epoch uint32) *event.ViewInfo {
	if vs == nil {
		return nil
	}
	if vs.cur != nil && uint32(vs.cur.ID) == epoch {
		return vs.cur
	}
	if vs.prev != nil && uint32(vs.prev.ID) == epoch {
		return vs.prev
	}
	return vs.cur
}

// Down implements stack.Layer.
func (l *Layer) Down(ev *event.Event) {
	switch ev.Kind {
	case event.Cast:
		if !ev.Control && ev.Peer == event.NoNode {
			if s := l.send[ev.Group]; s != nil && (s.cr.size() > 0 || s.detached) {
				l.cast(s, ev.Msg)
				return
			}
		}
		ev.Msg.Prepend(1)[0] = tagPass
	case event.Send:
		ev.Msg.Prepend(1)[0] = tagPass
	case event.Join:
		l.joining[ev.Group] = true
	case event.Leave:
		delete(l.joining, ev.Group)
		if s := l.send[ev.Group]; s != nil && s.detached {
			// Left while removed: nothing kept is owed any more.
			l.close(s)
			delete(l.send, ev.Group)
		}
	}
	l.Ctx.Down(ev)
}

// Up implements stack.Layer.
func (l *Layer) Up(ev *event.Event) {
	switch ev.Kind {
	case event.Cast, event.Send:
		t, ok := l.Ctx.TakePacketType(ev, l.c.Malformed)
		if !ok {
			return
		}
		switch {
		case t == tagPass:
			l.Ctx.Up(ev)
		case t == tagData && ev.Kind == event.Cast:
			l.received(ev)
		case t == tagAck && ev.Kind == event.Send:
			a, err := parseAck(ev.Msg.Bytes())
			ev.Msg.Release()
			if err != nil {
				l.c.Malformed.Inc()
				return
			}
			l.ackArrived()
			l.acked(ev.Peer, a)
		default:
			l.drop(ev)
		}
	case event.View:
		l.view(ev.View)
		l.Ctx.Up(ev)
	case event.HoldOff, event.Resume:
		l.flowBelow(ev)
	default:
		l.Ctx.Up(ev)
	}
}

// ackArrived keeps acks_recv, ack_burst_max and acks_crowded: the
// acknowledgements received within the last millisecond stay in ackWin.
func (l *Layer) ackArrived() {
	now := l.Ctx.Now()
	l.c.AcksRecv.Inc()
	for l.ackLen > 0 && now-l.ackWin[l.ackHead] >= ackBurstWindow {
		l.ackHead = (l.ackHead + 1) % ackWinSize
		l.ackLen--
	}
	if l.ackLen > 0 {
		l.c.AcksCrowded.Inc()
	}
	if l.ackLen == ackWinSize {
		l.ackHead = (l.ackHead + 1) % ackWinSize
		l.ackLen--
	}
	l.ackWin[(l.ackHead+l.ackLen)%ackWinSize] = now
	l.ackLen++
	l.c.AckBurstMax.Max(int64(l.ackLen))
}

// flowBelow merges a layer below's back-pressure with mflow's own: the
// application is held off while either holds it, and mflow sends nothing
// down while the layer below holds it off (it queues instead).
func (l *Layer) flowBelow(ev *event.Event) {
	s := l.send[ev.Group]
	if s == nil {
		l.Ctx.Up(ev)
		return
	}
	hold := ev.Kind == event.HoldOff
	if s.below == hold {
		return
	}
	s.below = hold
	if !s.held {
		l.Ctx.Up(ev)
	}
	if !hold {
		l.pump(s)
	}
}

// setHeld changes mflow's own hold on the application, telling it only
// when the merged state changes.
func (l *Layer) setHeld(s *sender, hold bool) {
	s.held = hold
	if !s.below {
		k := event.Resume
		if hold {
			k = event.HoldOff
		}
		l.Ctx.Up(&event.Event{Kind: k, Group: s.g})
	}
}

// drop discards a packet whose mflow header did not decode.
func (l *Layer) drop(ev *event.Event) { l.Ctx.DropMalformed(ev, l.c.Malformed) }

// received counts a flow-controlled multicast and acknowledges when the
// count passes ack_thresh.
func (l *Layer) received(ev *event.Event) {
	h, err := ev.Msg.Consume(dataHeaderSize - 1)
	if err != nil {
		l.drop(ev)
		return
	}
	epoch := binary.BigEndian.Uint32(h)
	k := rkey{ev.Group, ev.Peer}
	r := l.recv[k]
	// A message of an older view than the count's (possible only if the
	// layer below does not keep FIFO order) is counted where it is: every
	// byte is still returned exactly once.
	if r == nil || (r.epoch != epoch && int32(epoch-r.epoch) > 0) {
		vs := l.views[ev.Group]
		off := l.offset(vs.viewFor(epoch), ev.Peer, l.Ctx.Self())
		if r == nil {
			early := !vs.member(ev.Peer, l.Ctx.Self())
			if early && (l.early >= maxEarly || !vs.ahead(epoch) || !l.wanted(ev.Group, vs)) {
				// Not a member, and not a sender of a view this node
				// has yet to install in a group it is in or joining
				// (or no room for one): pass it up uncounted, keep
				// no state for it.
				l.c.Foreign.Inc()
				l.Ctx.Up(ev)
				return
			}
			r = &receiver{early: early}
			if early {
				l.early++
			}
			l.recv[k] = r
		} else {
			// The sender switched views here: return the rest of the old
			// count and the offset kept back in it, and say how this node
			// counts from now on (it keeps back the new offset).
			l.sendAck(ev.Peer, ack{group: ev.Group, epoch: epoch, off: off, amount: r.c + r.off, sw: true})
		}
		*r = receiver{epoch: epoch, off: off, c: -off, due: l.cfg.AckThresh, early: r.early}
	}
	if amount, ok := r.count(int64(ev.Msg.Len())+l.cfg.Overhead, l.cfg.AckThresh); ok {
		l.sendAck(ev.Peer, ack{group: ev.Group, epoch: r.epoch, off: r.off, amount: amount})
	}
	l.Ctx.Up(ev)
}

// count adds one message's cost and says whether to acknowledge, and how
// much. Acknowledgements fall on this receiver's lattice: the first message
// at or past offset + k*ack_thresh in the sender's stream, so they stay
// ack_thresh apart on average and the receivers' stay staggered. The
// receiver at offset 0 returns everything it counted (bulk); a staggered
// receiver returns whole thresholds and carries the rest, as Ensemble's
// mflow does: its headroom (ack_thresh) already covers the rest, and exact
// multiples keep the sender's limits in rotation order (see credits), which
// the rest, varying from receiver to receiver, would not.
func (r *receiver) count(cost, thresh int64) (int64, bool) {
	r.c += cost
	if r.c < r.due {
		return 0, false
	}
	if r.off > 0 {
		amount := r.c - r.c%thresh
		r.c -= amount
		return amount, true
	}
	amount, over := r.c, r.c-r.due
	r.c = 0
	r.due = thresh - over
	for r.due <= 0 {
		r.due += thresh
	}
	return amount, true
}

func (l *Layer) sendAck(to event.NodeID, a ack) {
	m := l.Ctx.NewMessage()
	putAck(m.Append(ackSize), a)
	l.c.AcksSent.Inc()
	l.Ctx.Down(&event.Event{Kind: event.Send, Peer: to, Control: true, Msg: m})
}

// view installs a new view of a group: the sender instance is rebuilt and
// counts for senders that left are dropped.
func (l *Layer) view(v *event.ViewInfo) {
	if v == nil {
		return
	}
	vs := l.views[v.Group]
	if vs == nil {
		vs = &views{}
		l.views[v.Group] = vs
	}
	vs.prev, vs.cur = vs.cur, v
	self := l.Ctx.Self()
	// Rejoin contract (R3): a member listed in Joined is new, even if this
	// node never saw it leave (its removal and readmission in one batch,
	// or a removal view that never reached us); if self is in Joined,
	// everything held for the group starts afresh.
	fresh := joined(v, self)
	for k, r := range l.recv {
		if k.g != v.Group {
			continue
		}
		if r.early {
			// Its sender is a member now (kept) or not (dropped):
			// no longer early either way.
			r.early = false
			l.early--
		}
		// A count already in this view's epoch (or later) began after
		// the sender installed this view, where it charges us afresh:
		// keep it. An older one counts a stream the sender no longer
		// charges to us.
		stale := (fresh || joined(v, k.s)) && int32(r.epoch-uint32(v.ID)) < 0
		if !v.Has(k.s) || !v.Has(self) || stale {
			delete(l.recv, k)
		}
	}
	s := l.send[v.Group]
	if !v.Has(self) {
		if s == nil {
			return
		}
		if l.joining[v.Group] && s.q.len() > 0 {
			// Removed, not left (R1): the application's casts accepted
			// and still waiting for credit are kept, in order, for the
			// view that readmits this node; dropping them would lose
			// casts no removal explains (they never left this node).
			l.detach(s)
			return
		}
		l.close(s)
		delete(l.send, v.Group)
		return
	}
	if s == nil {
		s = &sender{g: v.Group}
		l.send[v.Group] = s
	}
	s.detached = false
	l.reconfigure(s, v)
	l.pump(s)
}

// joined reports whether n is listed in v's Joined: new in v, whatever
// state was held for it before (rejoin contract R3).
func joined(v *event.ViewInfo, n event.NodeID) bool {
	for _, j := range v.Joined {
		if j == n {
			return true
		}
	}
	return false
}

// Close releases queued messages (stack.Closer).
func (l *Layer) Close() {
	for _, s := range l.send {
		l.close(s)
	}
}

func (l *Layer) close(s *sender) {
	if s.blocked {
		l.unblock(s)
	}
	for {
		m, _, ok := s.q.pop()
		if !ok {
			break
		}
		l.queued -= int64(m.Len())
		m.Release()
	}
	if s.held {
		l.setHeld(s, false)
	}
	if s.below {
		s.below = false
		l.Ctx.Up(&event.Event{Kind: event.Resume, Group: s.g})
	}
}

// Counters for one receiver: how long senders here waited on its credit
// (ns) and how often its credit ran out.
func (l *Layer) receiverCounters(n event.NodeID) {
	if l.blockedNs[n] == nil {
		l.blockedNs[n] = l.Ctx.Counter("blocked_by:" + n.String())
		l.blocks[n] = l.Ctx.Counter("blocks:" + n.String())
	}
}
