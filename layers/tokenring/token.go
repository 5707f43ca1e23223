package tokenring

import (
	"encoding/binary"
	"math"
	"slices"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/wirecodec"
)

// inf is the start of the token's minimums (no node has reported yet).
const inf = wirecodec.MaxSeq

// maxParts bounds the partitions a token's record describes.
const maxParts = 1 << 16

// infs is a fresh per-partition minimum.
func infs(p uint32) []uint32 {
	k := make([]uint32, p)
	for i := range k {
		k[i] = inf
	}
	return k
}

// makeToken is the region leader's timer: a new round's token, one record
// per active sender carrying the last round's cutoff, ACK and purge point.
//
// Elsewhere it is a watchdog: a member with data not yet purged that has
// seen no token for a few intervals sends the member it takes for acting
// (the leader, or the first after those that went silent) a keep-alive;
// one that does not answer goes silent, and the first member on the path
// that answers acts (crashed members that a static membership keeps, the
// leader and the next ones alike).
func (l *Layer) makeToken(r *region) {
	if r != l.own {
		return
	}
	if l.acting(r) != l.self {
		if l.unstable(r) {
			if l.Ctx.Now().Sub(r.tokenAt) > 3*l.cfg.Interval {
				l.keepAlive(r, l.acting(r))
			}
			r.timer.Reset(l.cfg.Interval)
		}
		return
	}
	if r.round > r.done && l.Ctx.Now().Sub(r.madeAt[r.round%uint32(len(r.madeAt))]) < l.roundLost(r) {
		// One token per region (section 2.3.2): while the last round is
		// out, the next waits for it and starts as it completes. Tokens
		// made every interval regardless overlapped once a round took
		// longer than the interval; each asked again for what the one
		// before had pulled, and the extra forwarding slowed the rounds
		// further (5 partitions of 5: rounds grew from 35 to 300 ms).
		r.owed = true
		r.timer.Reset(l.cfg.Interval) // the watchdog for a lost round
		return
	}
	r.owed = false
	r.round++
	r.madeAt[r.round%uint32(len(r.madeAt))] = l.Ctx.Now()
	t := &l.tok
	*t = tokenMsg{R: uint32(r.id), V: r.view, N: r.round, Mu: math.MaxUint32, S: t.S[:0]}
	for _, s := range r.lastOrder {
		lr := r.last[s]
		t.S = append(t.S, recMsg{S: uint32(s), C: lr.c, P: lr.p, AU: lr.au, AL: lr.al, F: inf})
	}
	h := slices.Index(r.path, l.self)
	for k := 0; k < h; k++ {
		l.passOver(r, t, k) // acting for silent members ahead of this one
	}
	t.H = uint32(h)
	l.visit(r, t)
	if len(r.last) > 0 || l.unstable(r) {
		r.timer.Reset(l.cfg.Interval)
	}
}

// tokenUp takes a token from a member of the region.
func (l *Layer) tokenUp(ev *event.Event) {
	t := &l.tok
	*t = tokenMsg{S: t.S[:0]}
	err := l.wc.Decode(ev.Msg.Bytes()[1:], t)
	ev.Msg.Release()
	if err == nil {
		err = t.check(l.cfg.MaxSenders, l.cfg.MaxRanges, maxParts)
	}
	if err != nil {
		l.c.Malformed.Inc()
		return
	}
	r := l.ownFrom(t.R, ev.Peer)
	if r == nil {
		return
	}
	h := int(t.H)
	if t.V == r.view {
		r.tokenAt = l.Ctx.Now()
	}
	switch {
	case t.V != r.view:
		l.c.StaleTokens.Inc() // a token of another view dies quietly
	case h == len(r.path) && l.acting(r) == l.self:
		l.complete(r, t)
	case h < len(r.path) && r.path[h] == l.self:
		l.visit(r, t)
	default:
		l.c.StaleTokens.Inc()
	}
}

// visit processes the token at this node (as many hops in a row as are
// this node's) and passes it on, or completes the round; the pulls and
// NAKs it makes go after the token.
func (l *Layer) visit(r *region, t *tokenMsg) {
	l.holdCtlDuring(func() { l.visitHops(r, t) })
}

func (l *Layer) visitHops(r *region, t *tokenMsg) {
	for {
		h := int(t.H)
		l.visitOnce(r, t, h)
		next := h + 1
		for next < len(r.path) && r.path[next] != l.self && l.silent(r.path[next]) {
			l.passOver(r, t, next)
			next++
		}
		if next >= len(r.path) {
			if a := l.acting(r); a != l.self {
				t.H = uint32(len(r.path))
				l.sendToken(a, t)
				return
			}
			l.complete(r, t)
			return
		}
		t.H = uint32(next)
		if r.path[next] != l.self {
			l.sendToken(r.path[next], t)
			return
		}
	}
}

// endLoop ends partition j's loop for rec: the collective NAK of what
// every member visited lacks goes to the sender.
func (l *Layer) endLoop(r *region, rec *recMsg, j uint32) {
	if len(rec.I) > 0 {
		nak := &rangeMsg{R: uint32(r.id), S: rec.S, Mod: r.p, Part: j, G: rec.I}
		l.c.NaksSent.Inc()
		if o := l.out[r.id]; rec.S == uint32(l.self) && o != nil {
			l.retransmit(o, nak) // this partition's leader is the sender
		} else {
			l.sendBody(event.NodeID(rec.S), tNak, nak)
		}
	}
	rec.I, rec.IL, rec.N, rec.NL = nil, 0, nil, 0
}

// passOver skips hop h, whose member does not answer (crashed, frozen or
// cut off): the round goes on among the others, so they recover from each
// other, but neither the ACK nor the purge point passes the round's purge
// point, as if the member held nothing more; a silent partition leader's
// collective NAK goes from the member passing over it. A frozen member that comes
// back finds every packet it lacks still cached; senders to a crashed one
// that a static membership keeps fill their buffers and hold off.
func (l *Layer) passOver(r *region, t *tokenMsg, h int) {
	j := r.hopPart[h]
	for i := range t.S {
		rec := &t.S[i]
		if len(rec.K) == int(r.p) {
			rec.K[j] = min(rec.K[j], rec.P)
		}
		rec.F = min(rec.F, rec.P)
		if h == r.finish[j] {
			l.endLoop(r, rec, j) // the partition's leader would have sent the NAK
		}
	}
	l.keepAlive(r, r.path[h])
}

func (l *Layer) sendToken(to event.NodeID, t *tokenMsg) {
	n := l.sendBody(to, tToken, t)
	l.c.TokensSent.Inc()
	l.c.TokenBytesMax.Max(int64(n))
}

// visitOnce is one hop of the round at this node.
func (l *Layer) visitOnce(r *region, t *tokenMsg, h int) {
	j := r.hopPart[h]
	start, finish := h == r.start[j], h == r.finish[j]
	// The predecessor is the last member before this hop the token did
	// not pass over; if the token passed over all of them, this hop
	// starts the partition's loop.
	ph := h - 1
	for !start && ph >= r.start[j] && r.path[ph] != l.self && l.silent(r.path[ph]) {
		ph--
	}
	if !start && ph < r.start[j] {
		start = true
	}
	if !finish {
		t.Mu = min(t.Mu, l.rc.recvRate())
		l.addRecords(r, t, h)
	}
	for i := range t.S {
		rec := &t.S[i]
		if len(rec.K) != int(r.p) || len(rec.U) != int(r.p) {
			// made here, or by a leader of another view: this round's
			// per-partition figures start empty
			rec.K, rec.U, rec.UL = infs(r.p), make([][]uint32, r.p), infs(r.p)
		}
		s := l.stream(r, event.NodeID(rec.S), rec.P+1)
		// The region's purge point is at least the one this member last
		// saw: every member of the region then had every packet up to it,
		// has freed it, and the sender freed it on the region's ACKs. A
		// member (re)admitted since (the region made anew, its leader
		// starting from nothing) cannot get those packets from anyone,
		// and its stream, begun at a floor below them (a packet in flight
		// from before its readmission), held the purge point, the ACK and
		// its own window there for good (qsm-gms soak seeds 76, 367).
		rec.P = max(rec.P, s.lastP)
		if n := s.purge(l, rec.P); n > 0 {
			l.c.Skipped.Add(int64(n))
		}
		s.lowerCache(l, rec.P+1)
		if rec.C > s.high {
			s.discover(s.high+1, rec.C, l.Ctx.Now())
		}
		b := newBuilder(l.scratch, r.p, l.cfg.MaxRanges, rec.C)
		s.nakSet(&b, r.p, r.part, rec.C)
		l.scratch = b.r
		mine, ml := b.r, b.limit
		if !start {
			pred := r.path[ph]
			l.push(r, s, rec, pred)
			l.pullPred(r, s, rec, mine, ml, pred)
		}
		if start {
			rec.I, rec.IL = append(rec.I[:0], mine...), ml
		} else {
			var x []uint32
			x, rec.IL = intersect(nil, rec.I, rec.IL, mine, ml)
			rec.I = x
		}
		if finish {
			l.endLoop(r, rec, j)
			continue
		}
		rec.N, rec.NL = append(rec.N[:0], mine...), ml
		rec.M = max(rec.M, s.high)
		rec.K[r.part] = min(rec.K[r.part], s.cachedPrefix(r.p, r.part))
		if rec.UL[r.part] == inf {
			rec.U[r.part], rec.UL[r.part] = append([]uint32(nil), mine...), ml
		} else {
			rec.U[r.part], rec.UL[r.part] = union(nil, rec.U[r.part], rec.UL[r.part], mine, ml, r.p, l.cfg.MaxRanges)
		}
		rec.F = min(rec.F, s.next-1)
		l.pullOthers(r, s, rec)
	}
}

// addRecords adds to the token a record for every sender this node has
// unpurged data from that the token does not list yet (a new sender, or
// one whose record was dropped once all its packets were everywhere).
func (l *Layer) addRecords(r *region, t *tokenMsg, h int) {
	for _, s := range r.order {
		if s.high <= s.lastP || len(t.S) >= l.cfg.MaxSenders {
			continue
		}
		i, found := slices.BinarySearchFunc(t.S, uint32(s.sender), func(a recMsg, b uint32) int { return cmpU32(a.S, b) })
		if found {
			continue
		}
		t.S = slices.Insert(t.S, i, recMsg{S: uint32(s.sender), P: s.lastP, F: inf, Z: uint32(h)})
	}
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// push sends the predecessor the packets its NAK set names that this node
// caches.
func (l *Layer) push(r *region, s *stream, rec *recMsg, pred event.NodeID) {
	n := 0
	eachIn(rec.N, r.p, r.part, rec.NL, func(x uint32) bool {
		if m := s.cached(x); m != nil {
			l.forward(pred, m)
			l.c.Pushes.Inc()
			n++
		}
		return n < l.cfg.MaxPush
	})
}

// pullPred asks the predecessor for what this node lacks and the
// predecessor's NAK set says it has.
func (l *Layer) pullPred(r *region, s *stream, rec *recMsg, mine []uint32, ml uint32, pred event.NodeID) {
	var b rangeBuilder
	eachIn(mine, r.p, r.part, min(ml, rec.NL), func(x uint32) bool {
		if !inRanges(rec.N, x) {
			if b.r == nil {
				b = newBuilder(make([]uint32, 0, 8), r.p, l.cfg.MaxRanges, ml)
			}
			b.add(x)
		}
		return !b.full
	})
	if len(b.r) > 0 {
		l.sendBody(pred, tPull, &rangeMsg{R: uint32(r.id), S: uint32(s.sender), Mod: r.p, Part: r.part, G: b.r})
		l.c.PullsSent.Inc()
	}
}

// pullOthers asks other partitions for the packets they cache that this
// node lacks, once they are on every member of their partition (so a pull
// is answered at once): up to where the partition's union of NAK sets is
// complete and outside it. A partition the token went round earlier in
// this round says so in U; for the others, AU has what the last round
// found. Each pull goes to this node's counterpart in the partition
// (pullPeer), not to its leader, nor to the stream's sender.
func (l *Layer) pullOthers(r *region, s *stream, rec *recMsg) {
	if r.p <= 1 {
		return
	}
	for j := uint32(0); j < r.p; j++ {
		var u []uint32
		var lim uint32
		switch {
		case j == r.part:
			continue
		case j < r.part && rec.UL[j] != inf:
			u, lim = rec.U[j], rec.UL[j]
		case len(rec.AL) == int(r.p) && len(rec.AU) == int(r.p) && rec.AL[j] != inf:
			u, lim = rec.AU[j], rec.AL[j]
		default:
			continue
		}
		b := newBuilder(l.scratch, r.p, l.cfg.MaxRanges, lim)
		for x := firstFrom(s.next, r.p, j); x <= lim && x != 0 && !b.full; x += r.p {
			if !s.has(x) && !inRanges(u, x) {
				b.add(x)
			}
		}
		l.scratch = b.r
		if len(b.r) == 0 {
			continue
		}
		a := s.asked[j]
		if a.first == b.r[0] {
			a.misses++
		} else {
			a = pullAsk{first: b.r[0]}
		}
		if a.misses >= 2 {
			// The first packet asked for stayed missing two visits running:
			// not a lost pull or answer (one visit) but a member that does
			// not answer (crashed, which only the nodes next to it on the
			// ring learn): ask the next member from now on.
			r.rot[j]++
			a.misses = 0
		}
		s.asked[j] = a
		l.sendPull(l.pullPeer(r, j, s.sender), &rangeMsg{R: uint32(r.id), S: uint32(s.sender), Mod: r.p, Part: j, G: b.r})
		l.c.PullsSent.Inc()
	}
}

// pullPeer is the member of partition j this node pulls from: the one at
// its own position in its partition (modulo j's size; moved on by one each
// time a pull there went unanswered, pullOthers), or the next after
// it that the token does not pass over. QSM 2005 section 2.3.3 sends every
// pull to the partition's leader and names a node chosen in each
// partition as the alternative; QSM 2008 section 2.2 has nodes "send pull
// requests to nodes in those partitions". Any member serves, since a
// packet is pulled only once every member of its partition has it. Pairing
// positions spreads the serving evenly: with partitions of equal size each
// member answers one member of every other partition. Sent to the
// leaders, the pulls and their answers made every leader's receive and
// send load a few percent above the others'; at the per-node capacity the
// sender runs at, the tokens then waited in the leaders' queues and the
// rounds grew from 36 to 146 ms.
//
// The stream's sender is passed over too (unless it is the partition's
// only member): it "participates in recovery only if an entire region
// drops a packet" (QSM 2005 section 2.3), and the pulls would add to the
// control it handles per data packet (QSM Figure 10).
func (l *Layer) pullPeer(r *region, j uint32, sender event.NodeID) event.NodeID {
	ms := r.parts[j]
	k := (int(r.pos) + r.rot[j]) % len(ms)
	if ms[k] == sender && len(ms) > 1 {
		// The sender's pullers go to different members (one from each
		// partition), so that no member answers twice its share.
		k = (k + 1 + int(r.part)%(len(ms)-1)) % len(ms)
	}
	for i := range ms {
		if n := ms[(k+i)%len(ms)]; n != sender && !l.silent(n) {
			return n
		}
	}
	return ms[k]
}

// forward sends a copy of a cached packet to one peer.
//
// Copies wait in a queue pulled by a data feed, so they go out when the
// transport has room and never sit in its queue ahead of a token (control
// before data, QSM 2008 section 3). A full queue drops the copy; the next
// round asks again.
func (l *Layer) forward(to event.NodeID, m *event.Message) {
	if l.fwdQ.Len() >= maxForwards {
		l.c.FwdDropped.Inc()
		return
	}
	c := m.Clone()
	c.Bytes()[1] |= flagAgain
	l.fwdQ.Push(fwd{to: to, msg: c})
	l.fwdFeed.Ready()
}

// maxForwards bounds the copies waiting to be forwarded.
const maxForwards = 4096

type fwd struct {
	to  event.NodeID
	msg *event.Message
}

// pullForward is the forwarding feed: one copy per call.
func (l *Layer) pullForward() bool {
	if l.fwdQ.Len() == 0 {
		return false
	}
	f := l.fwdQ.Pop()
	g := event.GroupID(binary.BigEndian.Uint32(f.msg.Bytes()[22:]))
	l.Ctx.Down(&event.Event{Kind: event.Send, Group: g, Peer: f.to, Msg: f.msg})
	return l.fwdQ.Len() > 0
}

// ownFrom is our own region when a token or pull names it (id)
// and comes from one of its members; otherwise it counts the packet as
// foreign and is nil.
func (l *Layer) ownFrom(id uint32, from event.NodeID) *region {
	r := l.own
	if r == nil || event.RegionID(id) != r.id || !r.has(from) {
		l.c.Foreign.Inc()
		return nil
	}
	return r
}

// pullUp answers a pull with the cached packets it names (at most
// max_push).
func (l *Layer) pullUp(ev *event.Event) {
	m, err := l.decodeRanges(ev)
	if err != nil {
		l.c.Malformed.Inc()
		return
	}
	r := l.ownFrom(m.R, ev.Peer)
	if r == nil {
		return
	}
	s := r.streams[event.NodeID(m.S)]
	if s == nil {
		return
	}
	n := 0
	eachIn(m.G, m.Mod, m.Part, s.high, func(x uint32) bool {
		if c := s.cached(x); c != nil {
			l.forward(ev.Peer, c)
			l.c.Pulled.Inc()
			n++
		}
		return n < l.cfg.MaxPush
	})
}

// complete ends a round at the region leader: one ACK per sender, and the
// round's results kept for the next token.
func (l *Layer) complete(r *region, t *tokenMsg) {
	if t.N <= r.done {
		l.c.StaleTokens.Inc() // overtaken by a later round
		return
	}
	r.done = t.N
	l.c.TokenRounds.Inc()
	if r.round-t.N < uint32(len(r.madeAt)) {
		l.c.RoundNs.Add(int64(l.Ctx.Now() - r.madeAt[t.N%uint32(len(r.madeAt))]))
		l.c.RoundsTimed.Inc()
	}
	active := 0
	for i := range t.S {
		if t.S[i].Z == 0 {
			active++
		}
	}
	var rate uint32
	if t.Mu != math.MaxUint32 && active > 0 {
		rate = t.Mu / uint32(active)
	}
	r.lastOrder = r.lastOrder[:0]
	for i := range t.S {
		rec := &t.S[i]
		s := event.NodeID(rec.S)
		prev := r.last[s]
		if rec.Z != 0 {
			r.last[s] = lastRec{c: rec.M, p: prev.p, au: prev.au, al: prev.al} // partial: keep the last full round's
			r.lastOrder = append(r.lastOrder, s)
			continue
		}
		k := slices.Min(append(rec.K, rec.M)) // stable on every partition's replicas
		if l.cfg.AckAll {
			k = min(k, rec.F) // stable everywhere
		}
		l.sendAck(r, s, ackMsg{Region: uint32(r.id), View: uint32(r.view), Stable: k, Rate: rate})
		if rec.P >= rec.M {
			delete(r.last, s) // every packet known is everywhere and purged: inactive
			continue
		}
		// Never below the purge point the round carried (raised by the
		// members that saw a later one: visitOnce).
		r.last[s] = lastRec{c: rec.M, p: max(rec.P, min(rec.F, rec.M)), au: rec.U, al: rec.UL}
		r.lastOrder = append(r.lastOrder, s)
	}
	for s := range r.last {
		if !slices.Contains(r.lastOrder, s) {
			delete(r.last, s)
		}
	}
	d := l.Ctx.Now().Sub(r.madeAt[t.N%uint32(len(r.madeAt))])
	if t.N < r.round {
		// A round the leader took for lost (it made a later one) comes
		// back late: its time is mostly the stall that made it late (a
		// frozen member held the token). It may raise the round time the
		// lost-round watchdog follows at most twofold: taken whole, one
		// freeze made the region wait four times as long for its next lost
		// token (soak seed 237 of specs/qsm-lec.stack: no round for 5 s
		// after the member thawed). Rounds slower for good still raise it,
		// doubling per round.
		d = min(d, 2*max(l.cfg.Interval, r.lastRound))
	}
	r.lastRound = d
	if r.owed && t.N == r.round {
		l.makeToken(r) // the interval passed while this round was out
	}
}

// roundLost is how long a round may be out before the region leader takes
// its token for lost (a member it went to crashed, or dropped it as of
// another view) and makes the next: four times the longer of the interval
// and the last round's time (complete bounds what a late round adds).
func (l *Layer) roundLost(r *region) time.Duration {
	return 4 * max(l.cfg.Interval, r.lastRound)
}

// sendAck sends the region's ACK to a sender (or takes it, if the leader
// is the sender).
func (l *Layer) sendAck(r *region, to event.NodeID, a ackMsg) {
	l.c.AcksSent.Inc()
	m := l.Ctx.NewMessage()
	putAck(m.Append(ackSize), a)
	if to == l.self {
		l.ackUp(&event.Event{Kind: event.Send, Peer: l.self, Msg: m})
		return
	}
	l.sendCtl(to, m)
}
