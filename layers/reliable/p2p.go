package reliable

import (
	"encoding/binary"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/ring"
	"github.com/layercast/layercast/internal/rtt"
	"github.com/layercast/layercast/internal/wirecodec"
	"github.com/layercast/layercast/stack"
)

// peer is the reliable point-to-point state towards and from one node.
// Sending: sequence numbers from 1, a buffer of unacknowledged messages
// (at most p2p_window; more wait in pending and the application is held off
// its Sends), retransmission every p2p_timeout, given up after p2p_max_tries
// (the peer is presumed gone). Receiving: delivery exactly once in the
// peer's send order, and a cumulative acknowledgement for every packet.
type peer struct {
	id  event.NodeID
	idx int

	next    uint32            // next sequence number to send
	acked   uint32            // the peer holds everything up to here
	buf     ring.Ring[p2pMsg] // sent, not yet acknowledged: acked+1 .. next-1
	pending ring.Ring[p2pMsg] // waiting for room in the window
	held    bool
	timer   bool
	tm      *stack.Timer
	// rtt is the round trip to the peer, sampled from sends acknowledged
	// at their first try (Karn's rule): it sets the retransmission
	// timeout (p2pRTO)
	rtt rtt.Estimator

	rnext     uint32
	rhold     []p2pHeld // ring over the window: early arrivals
	rheld     int       // messages in rhold
	rheldSize int64     // their bytes
}

type p2pMsg struct {
	m     *event.Message
	b     []byte // our header and payload (see sentMsg)
	ctrl  bool
	sent  event.Time
	tries int
}

// p2pHeader is
//
//	byte 0     tP2P
//	byte 1     flags (bit 0: retransmission)
//	bytes 2-5  sequence number
//	bytes 6-9  low: the sender no longer sends anything below it
const p2pFullHeader = 10

func (l *Layer) peerFor(id event.NodeID) *peer {
	if p := l.peers[id]; p != nil {
		return p
	}
	p := &peer{id: id, idx: len(l.pslots), next: 1, rnext: 1}
	p.tm = l.Ctx.NewTimer(func() { l.p2pTimer(p) })
	l.pslots = append(l.pslots, p)
	l.peers[id] = p
	return p
}

// dropPeer releases what is buffered towards a peer.
func (l *Layer) dropPeer(p *peer) {
	for p.buf.Len() > 0 {
		p.buf.Pop().m.Release()
	}
	for p.pending.Len() > 0 {
		p.pending.Pop().m.Release()
	}
	p.acked = p.next - 1
	if p.timer {
		p.tm.Stop()
		p.timer = false
	}
}

// shares says whether id is a member of a group we have a view of.
func (l *Layer) shares(id event.NodeID) bool {
	for _, g := range l.gslots {
		if g != nil && g.members[id] != nil {
			return true
		}
	}
	return false
}

// forgetPeer stops retransmitting to a node that left a group and is in
// none of ours any more (it crashed or left): what it has not acknowledged
// is given up, and what it sent us early is released.
func (l *Layer) forgetPeer(id event.NodeID) {
	p := l.peers[id]
	if l.paths[id] != nil && !l.shares(id) {
		delete(l.paths, id) // its streams are gone with it
	}
	if p == nil || l.shares(id) {
		return
	}
	l.releaseHeld(p)
	if p.inflight()+p.pending.Len() == 0 {
		return
	}
	l.c.P2pGivenUp.Add(int64(p.inflight() + p.pending.Len()))
	l.dropPeer(p)
	l.p2pFlush(p)
}

// releaseHeld drops the early arrivals held from a peer and their ring.
// Where its stream stands (rnext) is kept: what it sends again starts
// from its low mark.
func (l *Layer) releaseHeld(p *peer) {
	for i := range p.rhold {
		if p.rhold[i].m != nil {
			p.rhold[i].m.Release()
			l.c.P2pHeldDropped.Inc()
		}
	}
	p.rhold, p.rheld, p.rheldSize = nil, 0, 0
}

func (p *peer) inflight() int { return int(p.next - 1 - p.acked) }

// sendDown sends a point-to-point message reliably.
func (l *Layer) sendDown(ev *event.Event) {
	if ev.Peer == event.NoNode || ev.Peer == l.self {
		ev.Msg.Release()
		return
	}
	p := l.peerFor(ev.Peer)
	pm := p2pMsg{m: ev.Msg, ctrl: ev.Control}
	if p.pending.Len() > 0 || p.inflight() >= l.cfg.P2PWindow {
		p.pending.Push(pm)
		if !p.held && !ev.Control {
			p.held = true
			l.c.HeldOff.Inc()
			l.Ctx.Up(&event.Event{Kind: event.HoldOff, Group: event.NoGroup})
		}
		return
	}
	l.p2pSend(p, pm)
}

func (l *Layer) p2pSend(p *peer, pm p2pMsg) {
	seq := p.next
	p.next++
	h := pm.m.Prepend(p2pFullHeader)
	h[0], h[1] = tP2P, 0
	binary.BigEndian.PutUint32(h[2:], seq)
	binary.BigEndian.PutUint32(h[6:], p.acked+1)
	pm.b = pm.m.Bytes()
	pm.sent = l.Ctx.Now()
	pm.m.Retain()
	p.buf.Push(pm)
	l.c.P2pSent.Inc()
	l.Ctx.Down(&event.Event{Kind: event.Send, Peer: p.id, Control: pm.ctrl, Msg: pm.m})
	if !p.timer {
		p.timer = true
		p.tm.Reset(l.p2pRTO(p))
	}
}

// p2pRTO is how long a point-to-point send waits for its acknowledgement
// before it is sent again: p2p_timeout until the round trip to the peer is
// measured, then its timeout (srtt + 4 rttvar), at least nak_retry_min and
// at most p2p_timeout. Acknowledgements go at once, so nothing but the path
// delays them; a fixed 50 ms held a lost flow-control credit (mflow's, sent
// this way) that long on a sub-millisecond path.
func (l *Layer) p2pRTO(p *peer) time.Duration {
	if p.rtt.SRTT() == 0 {
		return l.cfg.P2PTimeout
	}
	return min(l.cfg.P2PTimeout, max(l.cfg.NakRetryMin, p.rtt.RTO()))
}

// p2pUp receives a point-to-point message, acknowledges it, and delivers
// it in the peer's send order: an early one waits (within the window) for
// those before it. Order matters to the control protocols that use Sends
// (flow-control credit, for one).
func (l *Layer) p2pUp(ev *event.Event) {
	m := ev.Msg
	h, err := m.Peek(p2pFullHeader)
	if err != nil {
		l.drop(ev)
		return
	}
	seq, low := binary.BigEndian.Uint32(h[2:]), binary.BigEndian.Uint32(h[6:])
	if seq == 0 || seq > wirecodec.MaxSeq || low == 0 || low > seq {
		l.drop(ev)
		return
	}
	p := l.peers[ev.Peer]
	if (p == nil || p.rhold == nil) && !l.shares(ev.Peer) {
		// only members of our groups get state here (it retries once
		// we install the view that has it)
		l.c.NonMember.Inc()
		m.Release()
		return
	}
	_, _ = m.Consume(p2pFullHeader)
	if p == nil {
		p = l.peerFor(ev.Peer)
	}
	// the sender keeps at most p2p_window messages in flight, so nothing
	// legitimate arrives further ahead than that
	w := uint32(l.p2pRing)
	if p.rhold == nil {
		p.rhold = make([]p2pHeld, w)
	}
	// the sender gave up on everything below low: deliver what we hold of
	// it and stop waiting for the rest
	for p.rnext < low {
		if low-p.rnext > w {
			p.rnext = low - w // nothing can be held that far back
		}
		if hm := &p.rhold[p.rnext&(w-1)]; hm.m != nil {
			l.p2pDeliver(p, hm)
		}
		p.rnext++
	}
	switch {
	case seq < p.rnext || (seq < p.rnext+w && p.rhold[seq&(w-1)].m != nil):
		l.c.Duplicates.Inc()
		m.Release()
	case seq >= p.rnext+uint32(l.cfg.P2PWindow):
		l.c.OutOfWindow.Inc()
		m.Release()
		return
	case seq != p.rnext && p.rheldSize+event.HeldCost(m.Len()) > l.cfg.P2PMaxHeldBytes:
		// early, and no room for its bytes: not acknowledged, so the
		// sender sends it again
		l.c.P2pHeldDropped.Inc()
		m.Release()
		return
	default:
		if seq != p.rnext {
			m = m.Compact() // held: in a buffer its charge accounts for
		}
		p.rhold[seq&(w-1)] = p2pHeld{m: m, ctrl: ev.Control}
		p.rheld++
		p.rheldSize += event.HeldCost(m.Len())
	}
	for hm := &p.rhold[p.rnext&(w-1)]; hm.m != nil; hm = &p.rhold[p.rnext&(w-1)] {
		l.p2pDeliver(p, hm)
		p.rnext++
	}
	ack := l.Ctx.NewMessage()
	a := ack.Append(p2pAckSize)
	a[0] = tP2PAck
	binary.BigEndian.PutUint32(a[1:], p.rnext-1)
	l.c.AcksSent.Inc()
	l.Ctx.Down(&event.Event{Kind: event.Send, Peer: p.id, Control: true, Msg: ack})
}

// p2pHeld is a point-to-point message waiting for those before it.
type p2pHeld struct {
	m    *event.Message
	ctrl bool
}

func (l *Layer) p2pDeliver(p *peer, hm *p2pHeld) {
	p.rheld--
	p.rheldSize -= event.HeldCost(hm.m.Len())
	l.c.P2pDelivered.Inc()
	l.Ctx.Up(&event.Event{Kind: event.Send, Peer: p.id, Control: hm.ctrl, Msg: hm.m})
	*hm = p2pHeld{}
}

// p2pAckUp frees what a peer acknowledged and sends what waited.
func (l *Layer) p2pAckUp(ev *event.Event) {
	b := ev.Msg.Bytes()
	if len(b) != p2pAckSize {
		l.drop(ev)
		return
	}
	c := binary.BigEndian.Uint32(b[1:])
	ev.Msg.Release()
	p := l.peers[ev.Peer]
	if p == nil || c <= p.acked || c >= p.next {
		return
	}
	if s := p.buf.At(int(c - p.acked - 1)); s.tries == 0 {
		// the newest it acknowledges, sent once: its round trip
		p.rtt.Sample(time.Duration(l.Ctx.Now() - s.sent))
	}
	for p.acked < c {
		p.buf.Pop().m.Release()
		p.acked++
	}
	l.p2pFlush(p)
}

func (l *Layer) p2pFlush(p *peer) {
	for p.pending.Len() > 0 && p.inflight() < l.cfg.P2PWindow {
		l.p2pSend(p, p.pending.Pop())
	}
	if p.pending.Len() == 0 {
		if p.held {
			p.held = false
			for _, q := range l.pslots {
				if q.held {
					return // the application stays held off while any peer is full
				}
			}
			l.Ctx.Up(&event.Event{Kind: event.Resume, Group: event.NoGroup})
		}
	}
}

// p2pTimer retransmits what has waited p2p_timeout for its acknowledgement;
// past p2p_max_tries the peer is presumed gone and its messages dropped.
func (l *Layer) p2pTimer(p *peer) {
	p.timer = false
	n := p.inflight()
	if n == 0 {
		return
	}
	now := l.Ctx.Now()
	rto := l.p2pRTO(p)
	for i := 0; i < n; i++ {
		s := p.buf.At(i)
		// each try in a row doubles the wait, up to p2p_timeout
		if s.sent > now-event.Time(min(rto<<min(s.tries, maxBackoff), l.cfg.P2PTimeout)) {
			continue
		}
		s.tries++
		if s.tries > l.cfg.P2PMaxTries {
			l.c.P2pGivenUp.Add(int64(n))
			l.dropPeer(p)
			l.p2pFlush(p)
			return
		}
		s.sent = now
		c := l.Ctx.NewMessage()
		c.SetPayload(s.b)
		hb := c.Bytes()
		hb[1] |= flagRetrans
		binary.BigEndian.PutUint32(hb[6:], p.acked+1)
		l.c.P2pRetrans.Inc()
		l.Ctx.Down(&event.Event{Kind: event.Send, Peer: p.id, Control: s.ctrl, Msg: c})
	}
	p.timer = true
	p.tm.Reset(rto)
}
