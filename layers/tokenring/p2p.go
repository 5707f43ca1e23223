package tokenring

import (
	"maps"
	"slices"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/layers/internal/p2p"
)

// peer is the reliable point-to-point state towards one node
// (layers/internal/p2p): Sends from the layers above (fifo's floor requests,
// mflow's credit) and tokenring's own control are numbered, kept until
// acknowledged cumulatively, all sent again every p2p_timeout (given up
// after p2p_max_tries timeouts in a row without an acknowledgement; the
// peer is silent then, until it is heard from), and delivered in order.
// Only nodes that share a group with this one get a peer; it goes when
// they no longer do. Silent: the token passes over it (a crashed member
// that a static membership keeps must not stop the region's recovery).
type peer = p2p.Peer

// newP2P makes the layer's point-to-point protocol (Init).
func (l *Layer) newP2P() *p2p.Proto {
	return p2p.New(p2p.Config{Window: l.cfg.P2PWindow, MaxTries: l.cfg.P2PMaxTries, Timeout: l.cfg.P2PTimeout},
		p2pHost{l}, p2p.Counters{Retrans: l.c.P2pRetrans, GivenUp: l.c.P2pGivenUp, Stale: l.c.P2pStale, Malformed: l.c.Malformed})
}

// peerOf returns n's peer state, or nil if n shares no group with us.
func (l *Layer) peerOf(n event.NodeID) *peer {
	if p := l.peers[n]; p != nil {
		return p
	}
	if n == l.self || !l.sharesGroup(n) {
		return nil
	}
	l.sessions++
	if l.sessions == 0 {
		l.sessions++
	}
	p := l.p2p.NewPeer(n, l.sessions)
	l.peers[n] = p
	return p
}

// sharesGroup reports whether n is in one of the node's groups.
func (l *Layer) sharesGroup(n event.NodeID) bool {
	if l.nb == nil {
		return false
	}
	for _, g := range l.nb.Groups {
		if l.isMember(g, n) {
			return true
		}
	}
	return false
}

// prunePeers drops the peers that share no group with us any more.
func (l *Layer) prunePeers() {
	for _, n := range slices.Sorted(maps.Keys(l.peers)) {
		if !l.sharesGroup(n) {
			l.peers[n].Close()
			delete(l.peers, n)
		}
	}
}

// p2pDown numbers a Send and sends it.
func (l *Layer) p2pDown(ev *event.Event) {
	if !l.p2pQueue(ev.Peer, ev.Msg, tP2P, ev.Control, ev.Group) {
		l.c.P2pGivenUp.Inc()
		ev.Msg.Release()
	}
}

// p2pQueue numbers m (header type typ) for node to, keeps it until
// acknowledged and sends it. It reports false, keeping nothing, if to
// shares no group with this node or too many messages wait for it.
func (l *Layer) p2pQueue(to event.NodeID, m *event.Message, typ byte, control bool, g event.GroupID) bool {
	p := l.peerOf(to)
	return p != nil && p.Send(p2p.Out{Msg: m, Ctrl: control, Group: g, Typ: typ})
}

// p2pUp takes a point-to-point message or acknowledgement.
func (l *Layer) p2pUp(ev *event.Event) {
	h, err := parseP2P(ev.Msg.Bytes())
	if err != nil {
		l.drop(ev)
		return
	}
	p := l.peerOf(ev.Peer)
	if p == nil {
		l.c.Foreign.Inc()
		ev.Msg.Release()
		return
	}
	if h.typ == tP2PAck {
		ev.Msg.Release()
		p.Ack(h.seq, h.session)
		return
	}
	_, _ = ev.Msg.Consume(p2pHeaderSize)
	p.Receive(p2p.In{Msg: ev.Msg, Ctrl: ev.Control, Group: ev.Group, Typ: h.typ}, h.seq, h.floor, h.session)
}

// p2pHost is the layer as p2p's Host.
type p2pHost struct{ l *Layer }

func (h p2pHost) Now() event.Time { return h.l.Ctx.Now() }

func (h p2pHost) NewTimer(fn func()) p2p.Timer { return h.l.Ctx.NewTimer(fn) }

// Transmit puts the header on the first time and sends a copy each time.
func (h p2pHost) Transmit(p *peer, o *p2p.Out, again bool) {
	if !again {
		putP2P(o.Msg.Prepend(p2pHeaderSize), p2pHeader{typ: o.Typ, seq: o.Seq, floor: p.Floor(), session: p.Session()})
		if o.Typ == tP2P {
			h.l.c.P2pSent.Inc()
		}
	}
	h.l.Ctx.Down(&event.Event{Kind: event.Send, Group: o.Group, Peer: p.ID(), Control: o.Ctrl, Msg: o.Msg.Clone()})
}

func (h p2pHost) Ack(p *peer, cum, session uint32) {
	m := h.l.Ctx.NewMessage()
	putP2P(m.Append(p2pHeaderSize), p2pHeader{typ: tP2PAck, seq: cum, session: session})
	h.l.sendCtl(p.ID(), m)
}

func (h p2pHost) Deliver(p *peer, in p2p.In) {
	if in.Typ == tP2PCtl {
		h.l.controlUp(&event.Event{Kind: event.Send, Peer: p.ID(), Control: true, Msg: in.Msg})
		return
	}
	h.l.c.P2pDelivered.Inc()
	h.l.Ctx.Up(&event.Event{Kind: event.Send, Group: in.Group, Peer: p.ID(), Control: in.Ctrl, Msg: in.Msg})
}

// Hold is not called: a Send to a full window is refused.
func (p2pHost) Hold(*peer, bool) {}

// silent reports whether the token passes over n: a send to it was given
// up and nothing came from it since.
func (l *Layer) silent(n event.NodeID) bool {
	p := l.peers[n]
	return p != nil && p.Silent()
}

// keepAlive sends a member of region r an empty pull, reliably, unless
// something to it is unacknowledged already. To a silent member: its
// acknowledgement says it is back (a frozen node thawed, a partition
// healed), and the token goes through it again. To the member taken for
// acting: if it never answers, it goes silent and the next acts. The peer
// state is made if there was none (a member that never sent the leader
// anything must still find it silent).
func (l *Layer) keepAlive(r *region, n event.NodeID) {
	if p := l.peerOf(n); p != nil && p.Inflight() == 0 {
		l.sendBody(n, tPull, &rangeMsg{R: uint32(r.id), S: uint32(l.self), Mod: r.p, Part: r.part})
	}
}
