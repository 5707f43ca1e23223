package reliable

import (
	"encoding/binary"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/wirecodec"
	"github.com/layercast/layercast/layers/internal/p2p"
)

// peer is the reliable point-to-point state towards and from one node
// (layers/internal/p2p). Sending: sequence numbers from 1, a buffer of
// unacknowledged messages (at most p2p_window; more wait and the
// application is held off its Sends), each sent again after the round
// trip's timeout measured to the peer (p2p_timeout until measured, and
// at most that; at least nak_retry_min, doubled per try: a fixed 50 ms held
// a lost flow-control credit, mflow's, sent this way, that long on a
// sub-millisecond path), given up after p2p_max_tries (the peer is presumed
// gone). Receiving: delivery exactly once in the peer's send order (the
// control protocols that use Sends, flow-control credit for one, need it),
// early arrivals held within p2p_window messages and p2p_max_held bytes,
// and a cumulative acknowledgement for every packet.
type peer = p2p.Peer

// p2pHeader is
//
//	byte 0     tP2P
//	byte 1     flags (bit 0: retransmission)
//	bytes 2-5  sequence number
//	bytes 6-9  low: the sender no longer sends anything below it
const p2pFullHeader = 10

// newP2P makes the layer's point-to-point protocol (Init).
func (l *Layer) newP2P() *p2p.Proto {
	return p2p.New(p2p.Config{
		Window: l.cfg.P2PWindow, MaxTries: l.cfg.P2PMaxTries, Timeout: l.cfg.P2PTimeout,
		Adaptive: true, MinRTO: l.cfg.NakRetryMin, MaxBackoff: maxBackoff,
		Queue: true, MaxHeldBytes: l.cfg.P2PMaxHeldBytes,
	}, p2pHost{l}, p2p.Counters{
		Retrans: l.c.P2pRetrans, GivenUp: l.c.P2pGivenUp, Duplicates: l.c.Duplicates,
		OutOfWindow: l.c.OutOfWindow, HeldDropped: l.c.P2pHeldDropped,
	})
}

func (l *Layer) peerFor(id event.NodeID) *peer {
	if p := l.peers[id]; p != nil {
		return p
	}
	p := l.p2p.NewPeer(id, 0)
	l.pslots = append(l.pslots, p)
	l.peers[id] = p
	return p
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
	p.ReleaseHeld()
	p.GiveUp()
}

// sendDown sends a point-to-point message reliably.
func (l *Layer) sendDown(ev *event.Event) {
	if ev.Peer == event.NoNode || ev.Peer == l.self {
		ev.Msg.Release()
		return
	}
	l.peerFor(ev.Peer).Send(p2p.Out{Msg: ev.Msg, Ctrl: ev.Control})
}

// p2pUp receives a point-to-point message.
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
	if (p == nil || !p.Receiving()) && !l.shares(ev.Peer) {
		// only members of our groups get state here (it retries once
		// we install the view that has it)
		l.c.NonMember.Inc()
		m.Release()
		return
	}
	_, _ = m.Consume(p2pFullHeader)
	l.peerFor(ev.Peer).Receive(p2p.In{Msg: m, Ctrl: ev.Control}, seq, low, 0)
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
	if p := l.peers[ev.Peer]; p != nil {
		p.Ack(c, 0)
	}
}

// p2pHost is the layer as layers/internal/p2p's Host.
type p2pHost struct{ l *Layer }

func (h p2pHost) Now() event.Time { return h.l.Ctx.Now() }

func (h p2pHost) NewTimer(fn func()) p2p.Timer { return h.l.Ctx.NewTimer(fn) }

// Transmit sends the message itself the first time, keeping its bytes,
// and a copy of them, marked sent again and with the current low, after.
func (h p2pHost) Transmit(p *peer, o *p2p.Out, again bool) {
	l, m := h.l, o.Msg
	if again {
		m = l.Ctx.NewMessage()
		m.SetPayload(o.B)
		hb := m.Bytes()
		hb[1] |= flagRetrans
		binary.BigEndian.PutUint32(hb[6:], p.Floor())
	} else {
		b := m.Prepend(p2pFullHeader)
		b[0], b[1] = tP2P, 0
		binary.BigEndian.PutUint32(b[2:], o.Seq)
		binary.BigEndian.PutUint32(b[6:], p.Floor())
		o.B = m.Bytes()
		m.Retain()
		l.c.P2pSent.Inc()
	}
	l.Ctx.Down(&event.Event{Kind: event.Send, Peer: p.ID(), Control: o.Ctrl, Msg: m})
}

func (h p2pHost) Ack(p *peer, cum, _ uint32) {
	ack := h.l.Ctx.NewMessage()
	a := ack.Append(p2pAckSize)
	a[0] = tP2PAck
	binary.BigEndian.PutUint32(a[1:], cum)
	h.l.c.AcksSent.Inc()
	h.l.Ctx.Down(&event.Event{Kind: event.Send, Peer: p.ID(), Control: true, Msg: ack})
}

func (h p2pHost) Deliver(p *peer, in p2p.In) {
	h.l.c.P2pDelivered.Inc()
	h.l.Ctx.Up(&event.Event{Kind: event.Send, Peer: p.ID(), Control: in.Ctrl, Msg: in.Msg})
}

// Hold holds the application off its Sends while any peer is full.
func (h p2pHost) Hold(_ *peer, on bool) {
	if on {
		h.l.c.HeldOff.Inc()
		h.l.Ctx.Up(&event.Event{Kind: event.HoldOff, Group: event.NoGroup})
		return
	}
	for _, q := range h.l.pslots {
		if q.HeldOff() {
			return
		}
	}
	h.l.Ctx.Up(&event.Event{Kind: event.Resume, Group: event.NoGroup})
}
