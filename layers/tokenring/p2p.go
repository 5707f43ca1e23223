package tokenring

import (
	"maps"
	"slices"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/ring"
	"github.com/layercast/layercast/stack"
)

// peer is the reliable point-to-point state towards one node: Sends from
// the layers above (fifo's floor requests, mflow's credit) are numbered,
// kept until acknowledged cumulatively, sent again every p2p_timeout (up
// to p2p_max_tries), and delivered in order. Only nodes that share a group
// with this one get a peer; it goes when they no longer do.
type peer struct {
	id event.NodeID
	// session numbers this node's messages to the peer (p2pHeaderSize);
	// recvSession is the peer's session this node receives in (0: none
	// yet), oldSession the one before it (its late copies are dropped).
	session, recvSession, oldSession uint32
	sendSeq                          uint32 // last sequence number sent
	acked                            uint32
	unacked                          ring.Ring[p2pOut] // acked+1 .. sendSeq
	timer                            *stack.Timer
	tries                            int
	recvNext                         uint32
	early                            map[uint32]p2pIn
	// silent: the peer let a send be given up and has not been heard from
	// since; the token passes over it (a crashed member that a static
	// membership keeps must not stop the region's recovery).
	silent bool
}

type p2pOut struct {
	msg     *event.Message // header included; copies are sent
	control bool
	group   event.GroupID
}

type p2pIn struct {
	msg      *event.Message
	control  bool
	internal bool // tokenring's own control (tP2PCtl)
	group    event.GroupID
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
	p := &peer{id: n, session: l.sessions, recvNext: 1, early: map[uint32]p2pIn{}}
	p.timer = l.Ctx.NewTimer(func() { l.p2pRetry(p) })
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
			l.peers[n].release()
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
	if p == nil || p.unacked.Len() >= l.cfg.P2PWindow {
		return false
	}
	p.sendSeq++
	putP2P(m.Prepend(p2pHeaderSize), p2pHeader{typ: typ, seq: p.sendSeq, floor: p.acked + 1, session: p.session})
	out := p2pOut{msg: m, control: control, group: g}
	p.unacked.Push(out)
	if typ == tP2P {
		l.c.P2pSent.Inc()
	}
	l.p2pSend(p, out)
	if !p.timer.Pending() {
		p.tries = 0
		p.timer.Reset(l.cfg.P2PTimeout)
	}
	return true
}

func (l *Layer) p2pSend(p *peer, o p2pOut) {
	l.Ctx.Down(&event.Event{Kind: event.Send, Group: o.group, Peer: p.id, Control: o.control, Msg: o.msg.Clone()})
}

// p2pRetry sends every unacknowledged message again, or gives up.
func (l *Layer) p2pRetry(p *peer) {
	if p.unacked.Len() == 0 {
		return
	}
	p.tries++
	if p.tries > l.cfg.P2PMaxTries {
		l.c.P2pGivenUp.Add(int64(p.unacked.Len()))
		p.silent = true
		p.acked = p.sendSeq
		for p.unacked.Len() > 0 {
			o := p.unacked.Pop()
			o.msg.Release()
		}
		return
	}
	for i := 0; i < p.unacked.Len(); i++ {
		l.p2pSend(p, *p.unacked.At(i))
		l.c.P2pRetrans.Inc()
	}
	p.timer.Reset(l.cfg.P2PTimeout)
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
	p.silent = false // heard from
	if h.typ == tP2PAck {
		ev.Msg.Release()
		if h.session != p.session {
			l.c.P2pStale.Inc() // acknowledges an earlier session of ours
			return
		}
		if h.seq > p.sendSeq {
			l.c.Malformed.Inc()
			return
		}
		for p.acked < h.seq {
			o := p.unacked.Pop()
			o.msg.Release()
			p.acked++
		}
		p.tries = 0
		if p.unacked.Len() == 0 {
			p.timer.Stop()
		} else {
			p.timer.Reset(l.cfg.P2PTimeout)
		}
		return
	}
	if h.session != p.recvSession {
		if h.session == p.oldSession {
			l.c.P2pStale.Inc() // a late copy from the peer's earlier session
			ev.Msg.Release()
			return
		}
		// The peer made its state for this node afresh: its numbers start
		// again, and everything below its floor was delivered or given up.
		for _, in := range p.early {
			in.msg.Release()
		}
		clear(p.early)
		p.oldSession, p.recvSession, p.recvNext = p.recvSession, h.session, h.floor
	}
	_, _ = ev.Msg.Consume(p2pHeaderSize)
	if h.floor > p.recvNext {
		l.p2pSkip(p, h.floor)
	}
	in := p2pIn{msg: ev.Msg, control: ev.Control, internal: h.typ == tP2PCtl, group: ev.Group}
	switch {
	case h.seq < p.recvNext:
		ev.Msg.Release() // a copy of one delivered: the ack was lost
	case h.seq == p.recvNext:
		l.p2pDeliver(p, in)
		l.p2pDrain(p)
	case h.seq-p.recvNext < uint32(l.cfg.P2PWindow) && len(p.early) < l.cfg.P2PWindow:
		if _, dup := p.early[h.seq]; dup {
			ev.Msg.Release()
		} else {
			p.early[h.seq] = in
		}
	default:
		ev.Msg.Release() // beyond the window: it comes again
	}
	m := l.Ctx.NewMessage()
	putP2P(m.Append(p2pHeaderSize), p2pHeader{typ: tP2PAck, seq: p.recvNext - 1, session: p.recvSession})
	l.sendCtl(p.id, m)
}

// p2pDrain delivers the early arrivals that are next in order.
func (l *Layer) p2pDrain(p *peer) {
	for {
		nx, ok := p.early[p.recvNext]
		if !ok {
			return
		}
		delete(p.early, p.recvNext)
		l.p2pDeliver(p, nx)
	}
}

// p2pSkip moves past messages the sender gave up (below its floor): the
// early arrivals below floor are delivered, in order, and the rest follow.
func (l *Layer) p2pSkip(p *peer, floor uint32) {
	for _, seq := range slices.Sorted(maps.Keys(p.early)) {
		if seq < floor {
			in := p.early[seq]
			delete(p.early, seq)
			p.recvNext = seq
			l.p2pDeliver(p, in)
		}
	}
	p.recvNext = floor
	l.p2pDrain(p)
}

func (l *Layer) p2pDeliver(p *peer, in p2pIn) {
	p.recvNext++
	if in.internal {
		l.controlUp(&event.Event{Kind: event.Send, Peer: p.id, Control: true, Msg: in.msg})
		return
	}
	l.c.P2pDelivered.Inc()
	l.Ctx.Up(&event.Event{Kind: event.Send, Group: in.group, Peer: p.id, Control: in.control, Msg: in.msg})
}

// release frees what the peer holds.
func (p *peer) release() {
	p.timer.Stop()
	for p.unacked.Len() > 0 {
		o := p.unacked.Pop()
		o.msg.Release()
	}
	for _, in := range p.early {
		in.msg.Release()
	}
	clear(p.early)
}

// silent reports whether the token passes over n: a send to it was given
// up and nothing came from it since.
func (l *Layer) silent(n event.NodeID) bool {
	p := l.peers[n]
	return p != nil && p.silent
}

// keepAlive sends a member of region r an empty pull, reliably, unless
// something to it is unacknowledged already. To a silent member: its
// acknowledgement says it is back (a frozen node thawed, a partition
// healed), and the token goes through it again. To the member taken for
// acting: if it never answers, it goes silent and the next acts. The peer
// state is made if there was none (a member that never sent the leader
// anything must still find it silent).
func (l *Layer) keepAlive(r *region, n event.NodeID) {
	if p := l.peerOf(n); p != nil && p.unacked.Len() == 0 {
		l.sendBody(n, tPull, &rangeMsg{R: uint32(r.id), S: uint32(l.self), Mod: r.p, Part: r.part})
	}
}
