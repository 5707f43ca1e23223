package mflow

import (
	"encoding/binary"

	"github.com/layercast/layercast/event"
)

// sender is this node's instance as the sender of one group.
type sender struct {
	g     event.GroupID
	epoch uint32

	nodes []event.NodeID         // slot -> receiver, in rotation (view) order
	slot  map[event.NodeID]int32 // receiver -> slot
	off   []int64                // each receiver's offset as last heard (or assigned)
	// transit marks receivers that continue from the previous view and have
	// not yet said they count in the current epoch; while any has not, the
	// credits stay in their O(n) mode.
	transit  []bool
	nTransit int

	cr credits
	q  msgRing

	held  bool // mflow holds the application off (queue past hi_wmark)
	below bool // the layer below holds us off: queue, send nothing

	// detached: this node was removed from the group (not left) with
	// casts still queued; they wait, sending nothing, for the view that
	// readmits it, where every receiver starts afresh.
	detached bool

	blocked      bool
	blockedSince event.Time
	blockedBy    event.NodeID
}

// reconfigure moves the sender to view v: departed receivers' credit is
// dropped, continuing receivers keep theirs (with their queued
// acknowledgements applied), new receivers start with a full window.
func (l *Layer) reconfigure(s *sender, v *event.ViewInfo) {
	self := l.Ctx.Self()
	if s.slot != nil && s.epoch == uint32(v.ID) && len(s.slot) == v.Size()-1 {
		same := true
		for _, n := range v.Members {
			if _, ok := s.slot[n]; !ok && n != self {
				same = false
			}
		}
		if same {
			return // the same view again
		}
	}
	oldSlot, oldOff := s.slot, s.off
	if s.cr.sent == 0 || joined(v, self) {
		// Nothing sent yet, or this node rejoins (R3): every receiver
		// starts afresh.
		oldSlot = nil
	}
	var oldLimit []int64
	if len(s.cr.limit) > 0 {
		s.cr.slow()
		oldLimit = append([]int64(nil), s.cr.limit...)
	}
	s.epoch = uint32(v.ID)
	s.nodes = s.nodes[:0]
	for _, n := range v.Members {
		if n != self {
			s.nodes = append(s.nodes, n)
			l.receiverCounters(n)
		}
	}
	m := len(s.nodes)
	s.slot = make(map[event.NodeID]int32, m)
	s.off = make([]int64, m)
	s.transit = make([]bool, m)
	s.nTransit = 0
	limits := make([]int64, m)
	for i, n := range s.nodes {
		s.slot[n] = int32(i)
		// A receiver in Joined is new (R3) even if it was a member of
		// our previous view: it dropped its count of our stream, so the
		// credit it held can never come back; it starts with a full
		// window at our switch point.
		if j, ok := oldSlot[n]; ok && !joined(v, n) {
			// Continuing: it still counts the old epoch with its old
			// offset until our first message of this view reaches it.
			limits[i] = oldLimit[j]
			s.off[i] = oldOff[j]
			s.transit[i] = true
			s.nTransit++
			continue
		}
		off := int64(0)
		if l.cfg.Stagger && m > 0 {
			off = int64(i) * l.cfg.AckThresh / int64(m)
		}
		s.off[i] = off
		limits[i] = s.cr.sent + l.cfg.Window + l.headroom(off)
	}
	if s.blocked && s.slot != nil {
		if _, ok := s.slot[s.blockedBy]; !ok {
			l.unblock(s)
		}
	}
	s.cr.noFast = s.nTransit > 0
	s.cr.reset(limits)
}

// detach keeps a removed sender's queue and drops everything else: its
// receivers and their credit (the next view that has this node starts
// them afresh: with sent at 0, reconfigure keeps no old receiver).
func (l *Layer) detach(s *sender) {
	if s.blocked {
		l.unblock(s)
	}
	s.detached = true
	s.nodes, s.slot, s.off, s.transit, s.nTransit = s.nodes[:0], nil, nil, nil, 0
	s.cr.noFast = false
	s.cr.reset(nil)
	s.cr.sent = 0
}

// cast takes an application multicast: it leaves now if there is credit
// for every receiver and nothing is queued, otherwise it queues.
func (l *Layer) cast(s *sender, m *event.Message) {
	cost := int64(m.Len()) + l.cfg.Overhead
	if s.q.len() == 0 && !s.below && !s.detached && l.fits(s, cost) {
		l.transmit(s, m, cost)
		return
	}
	if !s.below && !s.detached {
		l.c.CreditWaits.Inc()
	}
	s.q.push(m, cost)
	l.queued += int64(m.Len())
	l.c.QueuePeak.Max(int64(s.q.len()))
	l.c.PeakBuf.Max(l.queued)
	l.pump(s)
	if !s.held && s.q.len() >= l.cfg.HiWmark {
		l.setHeld(s, true)
	}
}

// headroom is the credit beyond window a receiver with stagger offset off
// starts with: ack_thresh for a staggered receiver, none for the one at
// offset 0 (or without stagger).
//
// Why: a receiver whose acknowledgements fall at offset + k*ack_thresh
// would, with window alone (Ensemble's mcredit), stop the sender at its
// own points of the cycle, and the n-1 receivers' stops, staggered, add up
// to n-1 stops per ack_thresh where unstaggered receivers make one (they
// coincide). Once ack_thresh passes equation 6's bound every stop is a
// wait, and staggering throttled the sender (issue 13, item 7). With this
// headroom a staggered receiver's acknowledgement at offset + k*ack_thresh
// credits the sender up to window + (k+1)*ack_thresh, what the unstaggered
// protocol grants only at the later (k+1)*ack_thresh: at every point of
// the stream each receiver allows at least as much as without stagger, so
// staggering never makes the sender wait longer, and it waits for one
// receiver's acknowledgement per cycle (the one at offset 0) instead of the
// last of n-1. The price is buffer: a staggered receiver may be sent up to
// window + ack_thresh bytes it has not returned.
func (l *Layer) headroom(off int64) int64 {
	if off == 0 {
		return 0
	}
	return l.cfg.AckThresh
}

// fits reports whether a message of that cost may leave now, and if not
// notes which receiver holds the sender back.
func (l *Layer) fits(s *sender, cost int64) bool {
	lo, slot := s.cr.min()
	credit := lo - s.cr.sent
	// A message larger than window-ack_thresh could never fit once the
	// least-credited receiver has less than ack_thresh unacknowledged (it
	// would not acknowledge again): it leaves as soon as that is the case.
	big := l.cfg.Window - l.cfg.AckThresh
	if credit >= cost || (cost > big && credit >= big) {
		if s.blocked {
			l.unblock(s)
		}
		return true
	}
	l.block(s, s.nodes[slot])
	return false
}

func (l *Layer) block(s *sender, by event.NodeID) {
	now := l.Ctx.Now()
	if s.blocked {
		if s.blockedBy == by {
			return
		}
		l.blockedNs[s.blockedBy].Add(int64(now - s.blockedSince))
		l.c.CreditWaitNs.Add(int64(now - s.blockedSince))
	}
	s.blocked, s.blockedSince, s.blockedBy = true, now, by
	l.blocks[by].Inc()
}

func (l *Layer) unblock(s *sender) {
	now := l.Ctx.Now()
	d := int64(now - s.blockedSince)
	if c := l.blockedNs[s.blockedBy]; c != nil {
		c.Add(d)
	}
	l.c.CreditWaitNs.Add(d)
	s.blocked = false
}

// transmit sends one multicast, charging its cost.
func (l *Layer) transmit(s *sender, m *event.Message, cost int64) {
	h := m.Prepend(dataHeaderSize)
	h[0] = tagData
	binary.BigEndian.PutUint32(h[1:], s.epoch)
	s.cr.sent += cost
	l.c.Casts.Inc()
	l.Ctx.Down(&event.Event{Kind: event.Cast, Group: s.g, Msg: m})
}

// pump sends queued messages while credit lasts and resumes the
// application once the queue has drained to half of hi_wmark.
func (l *Layer) pump(s *sender) {
	for s.q.len() > 0 && !s.below && !s.detached {
		m, cost := s.q.front()
		if !l.fits(s, cost) {
			break
		}
		s.q.pop()
		l.queued -= int64(m.Len())
		l.transmit(s, m, cost)
	}
	if s.held && s.q.len() <= l.cfg.HiWmark/2 {
		l.setHeld(s, false)
	}
}

// acked applies an acknowledgement from receiver r.
func (l *Layer) acked(r event.NodeID, a ack) {
	s := l.send[a.group]
	if s == nil {
		l.c.Foreign.Inc()
		return
	}
	i, ok := s.slot[r]
	if !ok {
		l.c.Foreign.Inc()
		return // not a receiver in this view (it left, or never was)
	}
	// An epoch ahead of ours was never ours: a forged multicast in our
	// name moved the receiver's count there, and it keeps counting our
	// messages in it (mflow.received). Its acknowledgements return our
	// bytes: take them as current ones, or one forged packet would stop
	// this sender's credit for good.
	ahead := int32(a.epoch-s.epoch) > 0
	current := a.epoch == s.epoch || ahead
	if !s.transit[i] && !current {
		// Counted in an earlier view by a receiver that is new in this
		// one (it started here with a full window): never charged to it.
		return
	}
	amount := a.amount
	if a.sw && !s.transit[i] && !ahead {
		// A receiver new in this view started with a full window at our
		// switch point; what it counted of earlier views was never
		// charged to it here.
		amount = 0
	}
	if !l.plausible(s, int(i), a.off, amount) {
		l.c.BadAcks.Inc()
		return
	}
	if a.off != s.off[i] {
		// The receiver keeps back a different offset than assumed (it
		// moved to a new view, or placed itself differently).
		s.cr.adjust(int(i), l.headroom(a.off)-l.headroom(s.off[i]))
		s.off[i] = a.off
	}
	if s.transit[i] && current {
		s.transit[i] = false
		s.nTransit--
		s.cr.noFast = s.nTransit > 0
	}
	s.cr.ack(int(i), amount)
	l.pump(s)
}

// plausible checks an acknowledgement's fields against what the protocol
// can produce, so that no acknowledgement (forged, or from a confused peer)
// creates credit the receiver never had: a stagger offset is below
// ack_thresh (r*ack_thresh/(n-1) with r < n-1), an amount is never negative,
// and a receiver's credit never runs ahead of the sender's total by more
// than window plus its headroom (limit = window + sent - count - offset +
// headroom, count >= -offset, headroom <= ack_thresh). The bound is checked
// against the headroom the offset it claims gives and the largest one
// possible, so that it holds across view changes whatever the order of the
// switch acknowledgements. amount is what the acknowledgement would add
// (after the switch rule).
func (l *Layer) plausible(s *sender, slot int, off, amount int64) bool {
	if amount < 0 || off < 0 || off >= l.cfg.AckThresh || (!l.cfg.Stagger && off != 0) {
		return false
	}
	room := s.cr.sent + l.cfg.Window + l.cfg.AckThresh - s.cr.credited(slot) - (l.headroom(off) - l.headroom(s.off[slot]))
	return amount <= room
}

// msgRing is the bounded queue of multicasts waiting for credit: at most
// hi_wmark plus what the stack had already accepted when the application
// was told to hold off. It grows only to a new peak.
type msgRing struct {
	msgs       []*event.Message
	costs      []int64
	head, size int
}

func (r *msgRing) len() int { return r.size }

func (r *msgRing) push(m *event.Message, cost int64) {
	if r.size == len(r.msgs) {
		n := 2 * len(r.msgs)
		if n == 0 {
			n = 16
		}
		nm, nc := make([]*event.Message, n), make([]int64, n)
		for i := 0; i < r.size; i++ {
			j := (r.head + i) % len(r.msgs)
			nm[i], nc[i] = r.msgs[j], r.costs[j]
		}
		r.msgs, r.costs, r.head = nm, nc, 0
	}
	j := (r.head + r.size) % len(r.msgs)
	r.msgs[j], r.costs[j] = m, cost
	r.size++
}

func (r *msgRing) front() (*event.Message, int64) { return r.msgs[r.head], r.costs[r.head] }

func (r *msgRing) pop() (*event.Message, int64, bool) {
	if r.size == 0 {
		return nil, 0, false
	}
	m, c := r.msgs[r.head], r.costs[r.head]
	r.msgs[r.head] = nil
	r.head = (r.head + 1) % len(r.msgs)
	r.size--
	return m, c, true
}
