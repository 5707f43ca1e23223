package reliable

import (
	"slices"
	"time"
	"unsafe"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/prefetch"
	"github.com/layercast/layercast/internal/ring"
	"github.com/layercast/layercast/internal/wirecodec"
	"github.com/layercast/layercast/stack"
)

// group is the layer's state for one group: the view, the node's own stream
// (sequence numbers, retransmission buffer, casts waiting for room) and a
// member entry per other member (its receive state and what it holds of ours).
type group struct {
	// The first cache line holds what every packet of the group reads
	// (the view, the gossip state a delivery marks, our stream's ends),
	// the line Warm asks for before a packet: at thousands of simulated
	// nodes each further line read is a cold load.
	id   event.GroupID
	tag  uint32          // view tag of view
	view *event.ViewInfo // nil until the first view arrives

	// gossip
	gossip     bool // the gossip timer is set
	dirty      bool // something changed since the last digest
	answerOwed bool // a member with unstable messages gossiped: answer it
	held       bool // HoldOff sent, Resume not yet (our stream)
	// heldAt is when the buffer last filled (HoldOff): while held, and
	// for nak_slow after, our casts carry flagPressed (pressed)
	heldAt     event.Time
	next       uint32     // next sequence number to send (our stream)
	rxMsgs     int        // messages received since our last digest
	rxBytes    int64      // bytes received since our last digest
	lastAnswer event.Time // when we last answered a held sender's digest (or a Q)
	// askedAt is when our digest last asked for an answer (Q) to time the
	// round trip to a sender we receive; 0 when none is outstanding
	askedAt event.Time
	stable  uint32 // every message up to stable is stable and freed (our stream)
	// waiting is how many members have waitFloor set (gossip keeps going
	// while one has): counted, so the gossip timer reads no member
	waiting int
	gt      *stack.Timer

	// own stream
	base     uint32 // first sequence number sent since baseView was installed
	baseView uint32
	buf      ring.Ring[sentMsg]        // messages stable+1 .. next-1
	bufBytes int64                     // bytes in buf
	pending  ring.Ring[*event.Message] // casts waiting for room or for a view

	idx     int
	members map[event.NodeID]*member
	// ranked is members by view rank (nil for us), rebuilt by
	// installView (rerank; use rankedOf): the per-member loops of gossip
	// walk it rather than looking each member up.
	ranked []*member
	// grtt is the group's round trip as our receivers state it in their
	// NAKs (NORM's GRTT, RFC 5740: the largest, raised at once, lowered
	// gradually); 0 until a NAK stated one. It paces our digests while
	// the application is held off (heldInterval) and bounds how long a
	// second member's NAK counts as the same loss (nakUp).
	grtt time.Duration
}

// member is another member of a group, seen from this node.
type member struct {
	id    event.NodeID
	rs    *recvState // its stream at this node (&recv); nil before first contact
	acked uint32     // it holds our stream up to here (from its digests)
	floor uint32     // our stream starts here for it
	// since is the view tag from which it and we are in the group together
	// (our first view, or the view that listed it as joined): its casts
	// tagged with an earlier view, and its digests of an earlier view,
	// belong to a relationship that ended.
	since uint32
	// waitFloor: we heard from it but cannot tell where its stream starts
	// for us; its digest will say.
	waitFloor bool
	// recv is where rs points once set: the stream's state in the
	// member's own memory, whose first fields share the member's cache
	// line. A data packet and every entry of a digest read both, and at
	// thousands of simulated nodes each separate object is a cold load.
	// A member's stream starts at most once (a member whose stream ends
	// is deleted with it).
	recv recvState
}

// sentMsg is one message in a sender's retransmission buffer.
type sentMsg struct {
	m *event.Message // retained until stable
	// b is our header and payload, sliced when we sent it: layers below may
	// prepend (or even move the message to a larger buffer) without
	// touching these bytes
	b    []byte
	sent event.Time   // first sent
	last event.Time   // last retransmission
	to   event.NodeID // requester of the last retransmission (NoNode: multicast)
}

// groupFor returns the group's state, creating it (viewless) if needed.
func (l *Layer) groupFor(id event.GroupID) *group {
	if g := l.groups[id]; g != nil {
		return g
	}
	g := &group{id: id, members: map[event.NodeID]*member{}, next: 1, base: 1}
	if n := len(l.gfree); n > 0 {
		g.idx = l.gfree[n-1]
		l.gfree = l.gfree[:n-1]
		l.gslots[g.idx] = g
	} else {
		g.idx = len(l.gslots)
		l.gslots = append(l.gslots, g)
	}
	l.groups[id] = g

	g.gt = l.Ctx.NewTimer(func() { l.gossipTimer(g) })
	return g
}

// forget deletes a member from the group.
func (g *group) forget(m *member) {
	if m.waitFloor {
		g.waiting--
	}
	delete(g.members, m.id)
}

// dropGroup releases everything held for a group (we left it).
func (l *Layer) dropGroup(g *group) {
	l.clearGroup(g)
	for g.pending.Len() > 0 {
		g.pending.Pop().Release()
	}
	if g.held {
		l.Ctx.Up(&event.Event{Kind: event.Resume, Group: g.id})
	}
	delete(l.groups, g.id)
	l.stale = true
	l.gslots[g.idx] = nil
	l.gfree = append(l.gfree, g.idx)
	gone := g.members
	g.members = nil
	for id := range gone {
		l.forgetPeer(id)
	}
}

// clearGroup releases our retransmission buffer and every member's state,
// and stops the gossip timer; casts waiting for room stay.
func (l *Layer) clearGroup(g *group) {
	for g.buf.Len() > 0 {
		g.buf.Pop().m.Release()
	}
	l.setBuf(-g.bufBytes)
	g.bufBytes = 0
	for _, m := range g.members {
		if m.rs != nil {
			l.freeRecv(m.rs)
		}
	}
	if g.gossip {
		g.gt.Stop()
		g.gossip = false
	}
}

// restartGroup makes a group we were re-admitted to (we are in the view's
// Joined: our removal notice was lost) start as a first-time joiner would:
// a new stream from sequence number 1, no member state, no view. Casts
// waiting for room stay and go out in the new stream.
func (l *Layer) restartGroup(g *group) {
	defer func(gt *stack.Timer) { g.gt = gt }(g.gt) // the gossip timer outlives the restart

	l.clearGroup(g)
	*g = group{id: g.id, idx: g.idx, members: map[event.NodeID]*member{}, next: 1, base: 1,
		buf: g.buf, pending: g.pending, held: g.held}
	l.stale = true
}

// installView reconfigures a group for a new view: departed members are no
// longer waited for and their receive state is released; joined members get
// a floor (where our stream starts for them); stability is recomputed.
func (l *Layer) installView(v *event.ViewInfo) {
	if v == nil {
		return
	}
	g := l.groups[v.Group]
	if !v.Has(l.self) {
		if g != nil && g.view != nil {
			l.dropGroup(g)
		}
		return
	}
	if g == nil {
		g = l.groupFor(v.Group)
	}
	tag := viewTag(v)
	if g.view != nil && tag <= g.tag {
		return // old or repeated view
	}
	if g.view != nil && slices.Contains(v.Joined, l.self) {
		// re-admitted without having seen our removal (R3): start over
		old := g.members
		l.restartGroup(g)
		for id := range old {
			if !v.Has(id) {
				l.forgetPeer(id)
			}
		}
	}
	// our stream's base moves to this view if we sent since the last move
	if g.next != g.base {
		g.base, g.baseView = g.next, tag
	}
	var gone []event.NodeID
	if g.view != nil {
		for _, id := range g.view.Members {
			if m := g.members[id]; m != nil && !v.Has(id) {
				if m.rs != nil {
					l.freeRecv(m.rs)
				}
				g.forget(m)
				gone = append(gone, id)
			}
		}
	}
	// a member listed as joined starts afresh even if we knew it (it was
	// removed and re-admitted, or restarted): nothing of its old stream or
	// of what it held of ours carries over (R3)
	for _, id := range v.Joined {
		if m := g.members[id]; m != nil && id != l.self {
			if m.rs != nil {
				l.freeRecv(m.rs)
			}
			g.forget(m)
		}
	}
	for _, id := range v.Members {
		if id == l.self || g.members[id] != nil {
			continue
		}
		g.members[id] = &member{id: id, floor: g.next, acked: g.next - 1, since: tag}
	}
	g.view, g.tag = v, tag
	g.rerank()
	l.stale = true // members changed
	for _, id := range gone {
		l.forgetPeer(id)
	}
	l.advanceStability(g)
	l.flushPending(g)
	l.touch(g)
}

// castDown sequences an application cast, or queues it when the buffer is
// full or the group has no view yet.
func (l *Layer) castDown(ev *event.Event) {
	var g *group
	if e := l.hits.Get(ev.Group, l.self); e != nil && !l.stale {
		// the pair table holds (group, ourselves) for every group with
		// a view: one probe, where the map's was a tenth of a send at
		// thousands of simulated nodes
		g = e.g
	} else {
		g = l.groupFor(ev.Group)
	}
	if g.view == nil || g.pending.Len() > 0 || !l.room(g, ev.Msg.Len()) {
		if g.view == nil {
			l.c.NoView.Inc()
		}
		g.pending.Push(ev.Msg)
		l.holdOff(g)
		return
	}
	l.sendData(g, ev.Msg)
}

// room says whether a message of n bytes fits the buffer (an empty buffer
// takes any message, so one larger than max_buffer still goes). The buffer
// also holds at most a receive window of messages: stable is at most what
// every member acknowledged, so a sender within a window of it sends
// nothing beyond any member's window (what lies beyond is dropped and
// asked for again, round after round, and a large max_buffer of small
// messages made more retransmissions than deliveries).
func (l *Layer) room(g *group, n int) bool {
	return g.bufBytes == 0 || g.bufBytes+int64(n+dataHeaderSize) <= l.cfg.MaxBuffer && g.buf.Len() < l.cfg.Window
}

func (l *Layer) holdOff(g *group) {
	if !g.held {
		g.held = true
		g.heldAt = l.Ctx.Now()
		l.c.HeldOff.Inc()
		l.Ctx.Up(&event.Event{Kind: event.HoldOff, Group: g.id})
		if g.view != nil {
			// ask the members for their digests now and every nak_retry
			// while held, rather than wait for the next round
			l.sendDigest(g, true, false)
			if g.gossip {
				g.gt.Stop()
			}
			g.gossip = true
			g.gt.Reset(l.heldInterval(g))
		}
	}
}

// pressed says our rate waits for stability: the buffer is full, or was
// within nak_slow (which bounds the round trips NAKs state; a sender
// resumed at rate max fills it again within one). Our casts then carry
// flagPressed: their receivers NAK gaps as soon as they are certain,
// NAKs in 2 copies, and report repairs of their first gap at once.
func (l *Layer) pressed(g *group) bool {
	return g.held || g.heldAt > 0 && l.Ctx.Now()-g.heldAt < event.Time(l.cfg.NakSlow)
}

// flushPending sends waiting casts while they fit, and resumes the
// application once nothing waits and an eighth of the buffer is free. At
// half (before), a sender at rate max sat idle while stability freed the
// first half of its window, then sent it in one burst, stop and go: on a
// 20 ms path at 1% loss it sent 4,000 messages in 31 ms and waited 45
// (57k msgs/s; resumed at 3/4 66.7k, at 7/8 68.7k, at 15/16 70.7k). The
// eighth bounds the HoldOff and Resume pairs, each of which asks the
// members for digests, to one per eighth of the buffer freed.
func (l *Layer) flushPending(g *group) {
	if g.view == nil {
		return
	}
	for g.pending.Len() > 0 {
		if !l.room(g, (*g.pending.Front()).Len()) {
			return
		}
		l.sendData(g, g.pending.Pop())
	}
	if g.held && g.bufBytes <= l.cfg.MaxBuffer*7/8 && g.buf.Len() <= l.cfg.Window*7/8 {
		g.held = false
		l.Ctx.Up(&event.Event{Kind: event.Resume, Group: g.id})
	}
}

// sendData gives m the next sequence number, keeps it for retransmission
// and multicasts it.
func (l *Layer) sendData(g *group, m *event.Message) {
	seq := g.next
	g.next++
	// kept until stable: not in a pooled buffer many times its size (which
	// a flood of large packets would leave the pool full of)
	m = m.Compact()
	var flags byte
	if l.pressed(g) {
		flags = flagPressed
	}
	putData(m.Prepend(dataHeaderSize), dataHeader{flags: flags, view: g.tag, baseView: g.baseView, base: g.base, seq: seq})
	m.Retain()
	l.bufPush(g, sentMsg{m: m, b: m.Bytes(), sent: l.Ctx.Now()})
	l.c.Sent.Inc()
	l.Ctx.Down(&event.Event{Kind: event.Cast, Group: g.id, Msg: m})
	if len(g.members) == 0 {
		l.advanceStability(g) // nobody to wait for
	}
	l.touch(g)
}

// bufPush appends to the retransmission ring, growing it (rarely) when full.
func (l *Layer) bufPush(g *group, s sentMsg) {
	g.buf.Push(s)
	g.bufBytes += int64(len(s.b))
	l.setBuf(int64(len(s.b)))
}

// sentAt returns the buffered message with sequence number seq, or nil.
func (g *group) sentAt(seq uint32) *sentMsg {
	if seq <= g.stable || seq >= g.next {
		return nil
	}
	return g.buf.At(int(seq - g.stable - 1))
}

// advanceStability frees every message all current members hold.
func (l *Layer) advanceStability(g *group) {
	if g.view == nil {
		return
	}
	st := g.next - 1
	for _, m := range l.rankedOf(g) {
		if m != nil && m.acked < st {
			st = m.acked
		}
	}
	freed := int64(0)
	for g.stable < st {
		s := g.buf.Pop()
		freed += int64(len(s.b))
		s.m.Release()
		g.stable++
	}
	if freed > 0 {
		g.bufBytes -= freed
		l.setBuf(-freed)
		l.c.FreedBytes.Add(freed)
		l.flushPending(g)
	}
}

// nakUp retransmits what a member asks for: by unicast to the requester, or
// by one re-multicast when a different member asked for the same message
// less than nak_retry/2 ago (several members lost it; one multicast serves
// them all). A message multicast again that recently is not sent again.
func (l *Layer) nakUp(ev *event.Event) {
	from := ev.Peer
	msg := &l.nak
	msg.G, msg.R, msg.T, msg.C, msg.S = 0, msg.R[:0], 0, 0, 0
	err := l.wc.Decode(ev.Msg.Bytes(), msg)
	ev.Msg.Release()
	if err != nil || len(msg.R)%2 != 0 || len(msg.R) > 2*l.cfg.MaxNakRanges {
		l.c.Malformed.Inc()
		return
	}
	g := l.groups[event.GroupID(msg.G)]
	if g == nil || g.view == nil || g.members[from] == nil {
		l.c.NonMember.Inc()
		return
	}
	if l.Ctx.Logging() {
		l.Ctx.Logf("nak from %v for %v: %v", from, g.id, msg.R)
	}
	now := l.Ctx.Now()
	// another member's NAK for the same message within nak_retry/2 is the
	// same loss seen by several: one multicast serves them all
	recent := now - event.Time(l.cfg.NakRetry/2)
	// a repeat from the same requester within about its round trip (3/4 of
	// it: its retries come at least srtt + 4 rttvar apart) crossed our
	// answer: resending would only double the traffic. Bounded by nak_slow.
	mine := now - event.Time(l.cfg.NakRetry/2)
	if msg.T > 0 {
		// its retries come at least nak_retry_min apart once it measured
		// the round trip it states
		rt := time.Duration(msg.T) * time.Microsecond
		mine = now - event.Time(max(l.cfg.NakRetryMin/2, min(rt, l.cfg.NakSlow)*3/4))
		g.noteGRTT(rt, l.cfg.NakSlow)
	}
	if g.grtt > 0 && l.cfg.NakDelayRTTs > 0 {
		// members that measured their round trip ask within 2k of them
		// after a loss (firstNakAfter), and the NAK travels one more: a
		// window that long, not nak_retry/2, tells the same loss from a
		// later one (at least nak_delay_min, at most nak_retry/2)
		w := time.Duration(float64(g.grtt) * (2*l.cfg.NakDelayRTTs + 1))
		recent = now - event.Time(min(l.cfg.NakRetry/2, max(l.cfg.NakDelayMin, w)))
	}
	for i := 0; i < len(msg.R); i += 2 {
		lo, hi := msg.R[i], msg.R[i+1]
		if lo > hi || lo == 0 || hi > wirecodec.MaxSeq {
			l.c.Malformed.Inc()
			return
		}
	}
	// copies of each retransmission: as the NAK asks, at most 2 (or
	// nak_copies if more), so a NAK buys no more than twice its ranges
	copies := max(l.cfg.NakCopies, min(int(msg.C), 2), 1)
	// one NAK causes at most max_nak_retrans retransmissions: a 12-byte
	// packet must not buy a window's worth of traffic; the receiver asks
	// again for the rest
	budget := l.cfg.MaxNakRetrans
	for i := 0; i < len(msg.R); i += 2 {
		lo, hi := msg.R[i], msg.R[i+1]
		// only what we still hold: freed messages were held by every
		// member, and nothing beyond next exists
		if lo <= g.stable || hi >= g.next {
			l.c.NakUnavailable.Inc()
			lo, hi = max(lo, g.stable+1), min(hi, g.next-1)
		}
		if lo > hi {
			continue
		}
		if n := int64(hi-lo) + 1; n > int64(budget) {
			l.c.NakRefused.Add(n - int64(budget))
			if budget == 0 {
				continue
			}
			hi = lo + uint32(budget) - 1
		}
		for seq := lo; seq <= hi; seq++ {
			s := g.sentAt(seq)
			budget--
			to := from
			if s.last > 0 && (s.to == event.NoNode || s.to == from) && s.last > mine {
				continue // just sent it where this requester gets it
			}
			if s.last > 0 && s.last > recent && s.to != event.NoNode && s.to != from {
				to = event.NoNode
				l.c.Remulticasts.Inc()
			}
			s.last, s.to = now, to
			// an answer to the asker alone echoes its NAK's stamp: a
			// multicast one reaches members whose clocks the stamp is
			// not of
			echo := msg.S
			if to == event.NoNode {
				echo = 0
			}
			// nak_copies leave together, as configured; the copies a
			// lossy receiver asks for beyond them (nak_copies_loss) a
			// moment later (copyLater)
			first := min(copies, max(l.cfg.NakCopies, 1))
			l.retransmit(g, s, to, flagRetrans, first, echo)
			if copies > first {
				l.copyLater(g, seq, to, flagRetrans, copies-first, echo)
			}
		}
	}
}

// retransmit sends copies of a buffered message, with the given flags (a
// retransmission), to one node (or the whole group for NoNode), echoing a
// NAK's stamp after the header unless echo is 0 (flagEcho).
func (l *Layer) retransmit(g *group, s *sentMsg, to event.NodeID, flags byte, copies int, echo uint32) {
	for range copies {
		c := l.Ctx.NewMessage()
		if echo != 0 {
			c.SetPayload(s.b[dataHeaderSize:])
			h := c.Prepend(dataHeaderSize + echoSize)
			copy(h, s.b[:dataHeaderSize])
			putEcho(h[dataHeaderSize:], echo)
			h[1] |= flags | flagEcho
		} else {
			c.SetPayload(s.b)
			c.Bytes()[1] |= flags
		}
		// marked for the layers below: lec passes a retransmission unnumbered
		c.Recovery.By = "nak"
		l.c.Retransmissions.Inc()
		l.Ctx.Down(&event.Event{Kind: event.Cast, Group: g.id, Peer: to, OneMember: to != event.NoNode, Msg: c})
	}
}

// laterCopy is a retransmission's further copies, due at the copy timer.
type laterCopy struct {
	g     event.GroupID
	seq   uint32
	to    event.NodeID
	flags byte
	n     int
	echo  uint32
}

// copyGap is how long after a retransmission its further copies leave.
const copyGap = 100 * time.Microsecond

// copyLater sends n more copies of our message seq copyGap from now, not
// with the first: a layer below that packs (pack) put every copy of a
// retransmission in the same datagram as the first, so one loss took them
// all and the copies a lossy receiver asked for (nak_copies_loss)
// protected nothing (UDP, 10% loss, 3 receivers: 120,000 retransmissions
// for 58,000 messages recovered, each pair in one datagram). A moment
// later they leave in another.
func (l *Layer) copyLater(g *group, seq uint32, to event.NodeID, flags byte, n int, echo uint32) {
	l.later = append(l.later, laterCopy{g: g.id, seq: seq, to: to, flags: flags, n: n, echo: echo})
	if !l.copyTm.Pending() {
		l.copyTm.ResetAt(l.Ctx.Now().Add(copyGap))
	}
}

// copyTimer sends the copies queued by copyLater whose messages we still
// hold.
func (l *Layer) copyTimer() {
	later := l.later
	l.later = l.later[len(l.later):]
	for _, c := range later {
		g := l.groups[c.g]
		if g == nil || g.view == nil {
			continue
		}
		if s := g.sentAt(c.seq); s != nil {
			l.retransmit(g, s, c.to, c.flags, c.n, c.echo)
		}
	}
	if len(l.later) == 0 {
		l.later = later[:0]
	}
}

// touch notes activity in a group and makes sure digests flow.
func (l *Layer) touch(g *group) {
	g.dirty = true
	if !g.gossip && g.view != nil {
		g.gossip = true
		g.gt.Reset(l.cfg.StableInterval)
	}
}

// gossipTimer multicasts a digest while the group has something to settle:
// new traffic since the last digest, our own unstable messages, a member
// waiting for our answer, or a stream we cannot place yet. Idle groups send
// nothing.
func (l *Layer) gossipTimer(g *group) {
	g.gossip = false
	waiting := g.waiting > 0
	unstable := g.stable < g.next-1
	if !(g.dirty || unstable || g.answerOwed || waiting) || g.view == nil {
		return
	}
	l.sendDigest(g, unstable, false)
	g.gossip = true
	d := l.cfg.StableInterval
	if g.held {
		d = min(d, l.heldInterval(g))
	}
	g.gt.Reset(d)
}

// heldInterval is how often a held-off sender asks its members for
// digests: nak_retry until a NAK stated the group's round trip, then two
// of those (a digest out and the answers back, with room for their
// queueing), at least nak_retry_min and at most nak_retry. Stability comes
// only from those answers while nothing new is sent, so a fixed 20 ms on a
// sub-millisecond path held the sender that long each time its buffer
// filled.
func (l *Layer) heldInterval(g *group) time.Duration {
	if g.grtt == 0 {
		return l.cfg.NakRetry
	}
	return min(l.cfg.NakRetry, max(l.cfg.NakRetryMin, 2*g.grtt))
}

// noteGRTT takes the round trip a member's NAK states (bounded by
// nak_slow, so a forged one cannot slow the group past what nak_slow
// allows): the group's rises to it at once and falls a quarter of the way.
func (g *group) noteGRTT(t, most time.Duration) {
	t = min(t, most)
	if t >= g.grtt {
		g.grtt = t
		return
	}
	g.grtt -= (g.grtt - t) / 4
}

// sendDigest multicasts our digest of g; answer marks it as the answer to
// a held sender's digest or to a Q (see askRTT).
func (l *Layer) sendDigest(g *group, unstable, answer bool) {
	g.dirty, g.answerOwed, g.rxBytes, g.rxMsgs = false, false, 0, 0
	d := &l.digest
	d.G, d.V, d.U, d.H, d.A = uint32(g.id), g.tag, unstable, g.held, answer
	d.Q = false
	d.E = append(d.E[:0], uint32(l.self), g.next-1, 0)
	ranked := l.rankedOf(g)
	// a timer's step is not warmed ahead: every member, then every
	// stream's path, asked for at once rather than one cold load after
	// another (thousands of simulated nodes)
	for _, m := range ranked {
		if m != nil {
			prefetch.Lines(unsafe.Pointer(m), 2)
		}
	}
	if l.cfg.NakDelayRTTs > 0 {
		for _, m := range ranked {
			if m != nil && m.rs != nil {
				prefetch.Lines(unsafe.Pointer(m.rs.path), 1)
			}
		}
	}
	for _, m := range ranked {
		if m == nil {
			continue
		}
		c := uint32(0)
		if m.rs != nil {
			c = m.rs.next - 1
			// (with nak_delay_rtts=0 the first NAK waits nak_delay
			// whatever the round trip: nothing to ask for)
			if l.cfg.NakDelayRTTs > 0 && m.rs.unmeasured() && m.rs.path.asks < maxRTTAsks {
				m.rs.path.asks++
				d.Q = true
			}
		}
		d.E = append(d.E, uint32(m.id), c, m.floor)
	}
	if d.Q && g.askedAt == 0 {
		g.askedAt = l.Ctx.Now()
	}
	msg := l.Ctx.NewMessage()
	b := msg.Append(1 + digestSize(d))
	b[0] = tDigest
	appendDigest(b[1:1], d) // in place: b has exactly digestSize bytes after the type
	l.c.StabilityMsgs.Inc()
	l.c.AcksSent.Inc()
	l.Ctx.Down(&event.Event{Kind: event.Cast, Group: g.id, Control: true, Msg: msg})
}

// digestUp takes a member's digest: how far it holds our stream (stability),
// where our stream starts in its eyes, and the highest sequence numbers it
// knows of every stream (which reveals lost tails).
func (l *Layer) digestUp(ev *event.Event) {
	from := ev.Peer
	d := &l.digest
	err := parseDigest(ev.Msg.Bytes(), d)
	ev.Msg.Release()
	if err != nil || len(d.E)%3 != 0 || len(d.E) < 3 || event.NodeID(d.E[0]) != from {
		l.c.Malformed.Inc()
		return
	}
	if l.Ctx.Logging() {
		l.Ctx.Logf("digest from %v: %v", from, d.E)
	}
	for i := 1; i < len(d.E); i += 3 {
		if d.E[i] > wirecodec.MaxSeq || d.E[i+1] > wirecodec.MaxSeq {
			l.c.Malformed.Inc()
			return
		}
	}
	g, fm := l.lookup(event.GroupID(d.G), from)
	if g == nil || g.view == nil {
		l.c.NoView.Inc()
		return
	}
	if fm == nil {
		l.c.NonMember.Inc()
		return
	}
	if len(d.E)/3 > len(g.view.Members) {
		l.c.Malformed.Inc() // more entries than members
		return
	}
	if d.V != g.tag {
		// what it holds of our stream and where it starts its own for us
		// are only comparable within one view: an older view may be a
		// relationship that ended (before its re-admission), a newer one
		// floors we have not set yet. Both of us gossip again in the next.
		l.c.StaleDigest.Inc()
		return
	}
	if d.U {
		g.answerOwed = true
		l.touchQuiet(g)
	}
	// a held sender, or a member timing its round trip to our stream
	// (Q: only a member with a stream asked is meant; a held sender's
	// own paced digests serve while it is held)
	asked := d.H || d.Q && g.next > 1 && !g.held
	answerNow := asked && l.Ctx.Now()-g.lastAnswer >= event.Time(l.answerGap(fm))
	if d.A && fm.rs != nil && fm.rs.unmeasured() {
		l.askRTT(g, fm.rs)
	}
	// our own entry in its digest first: its floor for us places its stream
	highest := d.E[1]
	for i := 3; i < len(d.E); i += 3 {
		n, c, f := event.NodeID(d.E[i]), d.E[i+1], d.E[i+2]
		if n == l.self {
			if c > fm.acked && c < g.next {
				fm.acked = c
			}
			// its stream starts for us at most one past what it sent
			if fm.rs == nil && f > 0 && f <= highest+1 {
				if fm.waitFloor {
					fm.waitFloor = false
					g.waiting--
				}
				l.newRecv(g, fm, f)
			}
		}
	}
	l.repairLagging(g, fm)
	ranked := l.rankedOf(g)
	for _, m := range ranked {
		// every member and stream the entries name (a stream is in its
		// member's memory), asked for at once rather than one cold load
		// after another (thousands of simulated nodes)
		if m != nil {
			prefetch.Lines(unsafe.Pointer(m), 2)
		}
	}
	if fm.rs != nil {
		l.announce(fm.rs, highest)
	}
	r := 0 // the sender lists the members in view order, as ranked
	for i := 3; i < len(d.E); i += 3 {
		n, c := event.NodeID(d.E[i]), d.E[i+1]
		if n == l.self || n == from {
			continue
		}
		var om *member
		for r < len(ranked) && g.view.Members[r] != n {
			r++
		}
		if r < len(ranked) {
			om = ranked[r]
		} else {
			_, om = l.lookup(g.id, n)
			r = 0
		}
		if om != nil && om.rs != nil {
			l.announce(om.rs, c)
		}
	}
	l.advanceStability(g)
	if answerNow {
		// a sender is held off: tell it at once what we hold
		g.lastAnswer = l.Ctx.Now()
		l.sendDigest(g, g.stable < g.next-1, true)
	}
}

// unmeasured says the stream has messages (known or arrived) from a
// sender the round trip to which is not measured yet: a stream placed by a
// digest alone (a member that never sent) needs none.
func (rs *recvState) unmeasured() bool {
	return rs.highest >= rs.start && rs.path.SRTT() == 0
}

// maxRTTAsks bounds the digests that ask (Q) on account of one sender: one
// that never answers (it crashed, or its answers are lost) must not keep
// every member answering every digest.
const maxRTTAsks = 4

// askRTT takes an answer to our Q from the sender of rs's stream: with no
// round trip measured to it yet (no NAK of ours was answered), the time
// since our Q seeds it, and the stream's gaps not yet NAKed fall due after
// the measured wait rather than nak_delay. NORM's receivers likewise learn
// the group's round trip before they first NACK, from the sender's probes.
// The answer may have been made for another member's Q (one multicast
// answers all), so the sample can be short; a NAK's answers soon correct
// it. One kept longer than nak_delay is no better than nak_delay: not
// taken, and the next digest asks again. Over UDP at 1% loss, 3
// receivers, every gap a receiver found before its first NAK was answered
// waited nak_delay (20 ms) and held the sender's stability that long; in
// a run of half a second (stacktool bench, 200,000 casts) that was the
// first 30 to 100 ms of every receiver.
func (l *Layer) askRTT(g *group, rs *recvState) {
	at := g.askedAt
	if at == 0 {
		return
	}
	now := l.Ctx.Now()
	g.askedAt = 0
	if now <= at || time.Duration(now-at) > l.cfg.NakDelay {
		return
	}
	rs.path.Sample(time.Duration(now - at))
	for i := range rs.epochs {
		e := &rs.epochs[i]
		if e.tries > 0 {
			continue
		}
		if due := max(now, e.at.Add(l.firstNakAfter(rs))); due < e.due {
			e.due = due
			if !rs.timer || rs.tm.When() > due {
				rs.timer = true
				rs.tm.ResetAt(due)
			}
		}
	}
}

// answerGap is the least time between two answers to a held-off sender's
// digests: nak_retry/2, or once the round trip to that sender is measured,
// that round trip (at least nak_retry_min/2): the held sender asks about
// every two (heldInterval), and what an answer frees lets it send again.
func (l *Layer) answerGap(m *member) time.Duration {
	if m.rs == nil || m.rs.path.SRTT() == 0 {
		return l.cfg.NakRetry / 2
	}
	return min(l.cfg.NakRetry/2, max(l.cfg.NakRetryMin/2, m.rs.path.SRTT()))
}

// digestSoon has our digest go out within nak_delay_min (the repairs one
// NAK brought, arriving together, in one digest): a repair moved the
// first gap of a stream whose sender's buffer is full (flagPressed), and
// the sender frees room only as digests say what every member holds.
// While held it asks for them every two round trips and nothing new
// arrives to count towards Window/4, so each repair's news waited up to
// that long: at rate max on a 20 ms path the sender was held 20 to 40 ms
// after its last gap was filled.
func (l *Layer) digestSoon(g *group) {
	at := l.Ctx.Now().Add(l.cfg.NakDelayMin)
	if !g.gossip || g.gt.When() > at {
		g.gossip = true
		g.gt.ResetAt(at)
	}
}

// touchQuiet makes sure the gossip timer runs without marking new traffic.
func (l *Layer) touchQuiet(g *group) {
	if !g.gossip {
		g.gossip = true
		g.gt.Reset(l.cfg.StableInterval)
	}
}

// repairLagging resends to a member the first messages its digest shows it
// lacks (up to minAsk of them) when we have neither sent nor resent them for
// nak_slow: its NAKs are not reaching us (lost, or it backed off while we
// could not hear them) or it cannot know they exist (a lost tail, and its
// copies of the digests saying so lost too). Without this, a burst of loss
// at a quiet node (the sender, hearing only control) left a receiver backed
// off for up to nak_slow after the sender heard again, and a lost tail
// waited for a digest to get through to the receiver.
func (l *Layer) repairLagging(g *group, m *member) {
	now := l.Ctx.Now()
	quiet := now - event.Time(l.cfg.NakSlow)
	n := 0
	for seq := max(m.acked+1, m.floor, g.stable+1); seq < g.next && n < minAsk; seq++ {
		s := g.sentAt(seq)
		if max(s.sent, s.last) > quiet {
			break // sent since: in flight, or its NAKs are coming
		}
		s.last, s.to = now, m.id
		l.c.DigestRepairs.Inc()
		l.retransmit(g, s, m.id, flagRetrans|flagUnasked, max(l.cfg.NakCopies, 1), 0)
		n++
	}
}
