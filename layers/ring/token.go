package ring

import (
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/wirecodec"
)

// regenJump is how far a regenerated token's sequence jumps ahead of the
// last one the leader handled: more than the passes a lost (or only late)
// copy can make before it reaches a member that saw the new one.
const regenJump = 2 * maxMembers

// tokenUp takes a token from the network and acknowledges it (even a
// duplicate: the sender's copy of the acknowledgement may have been lost).
func (l *Layer) tokenUp(ev *event.Event) {
	defer ev.Msg.Release()
	l.c.TokenBytesMax.Max(int64(ev.Msg.Len()))
	hdr, err := ev.Msg.Consume(tokenHdrSize)
	if err != nil {
		l.c.Malformed.Inc()
		return
	}
	tx := hdr[1]
	// Decoded aside: l.tok may be a token in hand (held idle, or a
	// one-member ring's between its visits), which a stray, stale or
	// foreign token must not overwrite. It did: a one-member ring whose
	// held token became an old ring's copy (its member back from a
	// partition got its old partner's last token) handled that token in
	// a loop at one instant, never idle, its aru never raised, and
	// virtual time stood still (spread-site-soak seeds 45 and 49).
	in := &l.rx
	if err := decodeToken(l.wc, ev.Msg.Bytes(), in, l.cfg.MaxRtr); err != nil {
		l.c.Malformed.Inc()
		if l.Ctx.Logging() {
			l.Ctx.Logf("dropping token from %v: %v", ev.Peer, err)
		}
		return
	}
	r := l.cur
	if r != nil && r.inRing(ev.Peer) {
		a := l.Ctx.NewMessage()
		putTokenAck(a.Append(tokenAckSize), in.Ring, in.Seq, tx)
		l.c.TokenAcks.Inc()
		l.Ctx.Down(&event.Event{Kind: event.Send, Peer: ev.Peer, Control: true, Msg: a})
	}
	switch {
	case r == nil || in.Ring != r.id:
		// Perhaps a ring this node has not installed yet: keep the newest.
		if !l.hasStash || l.stash.Ring != in.Ring || l.stash.Seq < in.Seq {
			in.copyTo(&l.stash)
			l.stashFrom = ev.Peer
			l.hasStash = true
		}
		l.c.StaleTokens.Inc()
	case ev.Peer != r.prev():
		l.c.Foreign.Inc()
	case in.Seq <= r.lastSeq:
		l.c.StaleTokens.Inc() // a duplicate, or an old copy of a regenerated token
	default:
		if l.holding {
			// A newer token than the one held (the leader regenerated
			// it meanwhile): only one may go on, the newer.
			l.holding = false
			l.hold.Stop()
			l.c.StaleTokens.Inc()
		}
		l.tok, l.rx = l.rx, l.tok // swap: both keep their slices
		l.handleToken(false)
	}
}

// handleToken runs Figure 3.3 on the token in l.tok (fresh: the leader just
// made it, so it completes no rotation).
func (l *Layer) handleToken(fresh bool) {
	r, tok := l.cur, &l.tok
	r.lastSeq = tok.Seq
	now := l.Ctx.Now()
	l.c.Tokens.Inc()
	if !fresh {
		l.sampleRotation(now)
	}
	if l.firstTok == 0 {
		l.firstTok = now
	}
	l.c.ActiveNs.Set(int64(now.Sub(l.firstTok)))
	if !fresh && r.leader() == l.self {
		// A rotation is complete.
		l.c.Rotations.Inc()
		l.loss.Stop()
		// The flow-control sums are what the members counted during
		// this rotation, whatever the token claimed (see token.RotSent).
		tok.FlowControl, tok.RotSent = tok.RotSent, 0
		tok.Backlog, tok.RotBacklog = tok.RotBacklog, 0
		switch {
		case tok.Type == tokQuiet:
			tok.Type = tokRegular
		case tok.Type == tokRecovery && !tok.Busy && !tok.Changed:
			tok.Type, tok.Old = tokRegular, tok.Old[:0]
		case tok.Type == tokRecovery:
			tok.Busy, tok.Changed = false, false
		}
	}
	idle := false
	if tok.Type == tokRecovery {
		l.recoveryStep()
	} else {
		if r.recovering {
			l.startRing()
		}
		idle = l.regularStep()
	}
	l.pass(idle)
	if tok.Type == tokRegular && l.last.Ring == r.id && l.last.Type == tokRegular {
		// Every member has every packet up to the lesser of this token's
		// aru and the last one's (a quiet rotation frees nothing).
		r.ringAru = max(r.ringAru, min(tok.LinkAru, l.last.LinkAru))
		r.siteAru = max(r.siteAru, min(tok.SiteAru, l.last.SiteAru))
	}
	tok.copyTo(&l.last)
	l.deliver()
}

// regularStep is the token holder's work on a regular (or quiet) token:
// retransmissions, new messages within flow control, requests for what it
// misses, the aru fields. It reports whether the ring is idle.
func (l *Layer) regularStep() bool {
	r, tok := l.cur, &l.tok
	w := &r.win
	quiet := tok.Type == tokQuiet
	// Raise the sequence fields to what this member has handed out (after
	// a regeneration this is how the token learns what was sent with the
	// lost one): its own, and those it holds without a gap. A stray
	// packet far ahead never makes holes nobody can fill.
	tok.LinkSeq = max(tok.LinkSeq, r.sentSeq, w.aru)
	tok.SiteSeq = max(tok.SiteSeq, r.siteSeq)
	tok.SiteLTS = max(tok.SiteLTS, r.siteLTS)
	w.highest = max(w.highest, tok.LinkSeq)
	r.siteSeq, r.siteLTS = tok.SiteSeq, tok.SiteLTS
	// Skip what the token says no member holds.
	lost := tok.Lost[:0]
	for _, s := range tok.Lost {
		if !w.has(s) && w.fits(s) {
			w.put(s, entry{lost: true})
		}
		if s > r.ringAru {
			lost = append(lost, s) // until every member has passed it
		}
	}
	tok.Lost = lost
	// Flow control: the lesser of the member's limit and what the ring's
	// limit leaves, given what was sent in the last rotation (Figure 3.3),
	// retransmissions included.
	rest := max(0, int(tok.FlowControl)-int(l.lastSent))
	budget := max(0, min(l.cfg.MemberLimit, l.cfg.RingLimit-rest))
	budget = min(budget, l.fairShare(quiet))
	// Answer the previous holders' requests first; a request that every
	// member in a row lacked is for a packet nobody holds.
	sent := 0
	others := uint32(len(r.members) - 1)
	keep, ages := tok.Rtr[:0], tok.Age[:0]
	for i, s := range tok.Rtr {
		switch e := w.get(s); {
		case s < w.base:
			// freed: every member had it; a stale request
		case e.m != nil && sent < budget:
			l.sendPacket(e.m, e.g, flagRetrans)
			sent++
		case e.m != nil:
			// On a later visit. A member holds it, so the count of
			// members that passed it unanswered starts again: else the
			// next ones could declare lost what this one holds.
			keep, ages = append(keep, s), append(ages, 0)
		case tok.Age[i]+1 > others:
			l.loseSeq(s) // this member is the last of all of them to lack it
		default:
			keep, ages = append(keep, s), append(ages, tok.Age[i]+1)
		}
	}
	tok.Rtr, tok.Age = keep, ages
	l.c.Retrans.Add(int64(sent))
	newSent := 0
	if !quiet {
		// Stay within half the window of what every member may still hold.
		floor := min(w.base, r.ringAru+1)
		for sent+newSent < budget && l.pending.Len() > 0 && int(tok.LinkSeq+1-floor) < l.cfg.Window/2 {
			l.sendNew(l.pending.Pop())
			newSent++
		}
		l.resume()
	}
	sent += newSent
	l.c.Sent.Add(int64(newSent))
	l.c.VisitMax.Max(int64(sent))
	tok.FlowControl = uint32(min(rest+sent, wirecodec.MaxSeq))
	// A second step in one visit (sendWhileHolding) follows an idle one,
	// which sent nothing: adding is exact.
	tok.RotSent = uint32(min(uint64(tok.RotSent)+uint64(sent), wirecodec.MaxSeq))
	l.lastSent = uint32(sent)
	l.c.RotationMax.Max(int64(tok.FlowControl))
	// Ask for what this member misses.
	l.noteMissing(r, tok.LinkSeq+1)
	for s := w.aru + 1; s <= tok.LinkSeq && len(tok.Rtr) < l.cfg.MaxRtr; s++ {
		switch {
		case w.has(s) || contains(tok.Rtr, s):
		case others == 0:
			l.loseSeq(s)
		default:
			tok.Rtr, tok.Age = append(tok.Rtr, s), append(tok.Age, 1) // the asker lacks it
		}
	}
	site := min(w.aruLTS, tok.SiteLTS)
	if w.aru >= tok.LinkSeq {
		site = tok.SiteLTS
	}
	l.updateAru(min(w.aru, tok.LinkSeq), site)
	return !quiet && sent == 0 && tok.FlowControl == 0 && len(tok.Rtr) == 0 && len(tok.Lost) == 0 &&
		tok.LinkAru == tok.LinkSeq && l.pending.Len() == 0
}

// fairShare updates the token's backlog with this member's waiting casts
// and returns the most the member may send on this visit: its share of the
// rotation in proportion to its share of the backlog (Totem's
// fcc_calculate), at least one while it has casts waiting. The flow
// control of Figure 3.3 alone lets the members that sent last rotation
// take the whole ring_limit again, and a member that sent nothing (the
// leader, after a new ring) found it full every time: it sent nothing for
// seconds while the others' casts went on (spread-ring-wan soak seed 66).
// A quiet rotation (after a regeneration) counts the backlog afresh.
func (l *Layer) fairShare(quiet bool) int {
	tok := &l.tok
	if quiet {
		l.lastBacklog = 0
	}
	cur := uint32(min(l.pending.Len(), wirecodec.MaxSeq))
	total := tok.Backlog - min(tok.Backlog, l.lastBacklog)
	total = min(total+cur, wirecodec.MaxSeq)
	tok.Backlog, l.lastBacklog = total, cur
	// As for RotSent, an idle first step of the visit counted nothing.
	tok.RotBacklog = uint32(min(uint64(tok.RotBacklog)+uint64(cur), wirecodec.MaxSeq))
	if cur == 0 || total == 0 {
		return l.cfg.RingLimit
	}
	return max(1, int(uint64(l.cfg.RingLimit)*uint64(cur)/uint64(total)))
}

// loseSeq records that no member holds seq: skipped here, and by every
// member the token reaches.
func (l *Layer) loseSeq(seq uint32) {
	w := &l.cur.win
	if !w.has(seq) && w.fits(seq) {
		w.put(seq, entry{lost: true})
	}
	if !contains(l.tok.Lost, seq) && len(l.tok.Lost) < l.cfg.MaxRtr {
		l.tok.Lost = append(l.tok.Lost, seq)
	}
}

// updateAru applies the paper's aru rules: a member lowers the token's aru
// fields to its own and marks itself the modifier; it raises them only if
// it is the modifier or nobody lowered them during the last round.
func (l *Layer) updateAru(aru, site uint32) {
	tok := &l.tok
	canRaise := tok.Modifier == uint32(l.self) || tok.Modifier == 0
	set := false
	if aru < tok.LinkAru || (canRaise && aru != tok.LinkAru) {
		tok.LinkAru, set = aru, true
	}
	if site < tok.SiteAru || (canRaise && site != tok.SiteAru) {
		tok.SiteAru, set = site, true
	}
	if set || tok.Modifier == uint32(l.self) {
		tok.Modifier = uint32(l.self)
		if tok.LinkAru == tok.LinkSeq && tok.SiteAru == tok.SiteLTS {
			tok.Modifier = 0
		}
	}
}

// sendNew gives a waiting cast the token's next sequence numbers, keeps it
// and multicasts it on the site's channel.
func (l *Layer) sendNew(p pend) {
	r, tok := l.cur, &l.tok
	// A number already held (a stray packet claiming it) is passed over:
	// this member answers requests for it with what it holds.
	for r.win.has(tok.LinkSeq+1) && r.win.fits(tok.LinkSeq+1) {
		tok.LinkSeq++
	}
	tok.LinkSeq++
	tok.SiteSeq++
	tok.SiteLTS++
	r.sentSeq, r.siteSeq, r.siteLTS = tok.LinkSeq, tok.SiteSeq, tok.SiteLTS
	m := p.m.Compact()
	var flags byte
	if p.site {
		flags = flagSite
	}
	putData(m.Prepend(dataHeaderSize), dataHeader{flags: flags, ring: r.id, seq: tok.LinkSeq, siteSeq: tok.SiteSeq, lts: tok.SiteLTS, origin: l.self})
	if !r.win.put(tok.LinkSeq, entry{m: m, g: p.g, lts: tok.SiteLTS, origin: l.self, site: p.site}) {
		m.Release() // cannot happen: the window was checked
		return
	}
	l.setBuf()
	l.sendPacket(m, p.g, 0)
}

// sendPacket multicasts a copy of a held packet on the site's channel,
// with flags added to its header.
func (l *Layer) sendPacket(m *event.Message, g event.GroupID, flags byte) {
	c := m.Clone()
	c.Bytes()[1] |= flags
	l.Ctx.Down(&event.Event{Kind: event.Cast, Group: g, Channel: l.ch, Msg: c})
}

// pass sends the token on (or, idle, holds it for token_idle first; a
// one-member ring passes it to itself through the hold timer).
func (l *Layer) pass(idle bool) {
	l.tok.Seq++
	if len(l.cur.members) == 1 || (idle && l.cfg.TokenIdle > 0) {
		l.holding = true
		d := l.cfg.TokenIdle
		if !idle {
			d = 0
		}
		l.hold.Reset(d)
		return
	}
	l.sendToken()
}

// sendToken encodes the token and sends it to the successor, keeping a
// copy to send again until the successor acknowledges it.
func (l *Layer) sendToken() {
	r := l.cur
	body := l.wc.Encode(&l.tok)
	l.sentTok = append(append(l.sentTok[:0], tToken, 0), body...)
	// Send it again for as long as the leader would wait before
	// regenerating it; past that the successor is presumably gone, and the
	// regeneration (or a new view) takes over.
	l.sentTokSeq, l.sentTo = l.tok.Seq, r.next()
	l.txN = 0
	l.rtxLeft = max(2, int(l.lossTimeout()/l.rto()))
	l.c.TokensSent.Inc()
	l.c.TokenBytesMax.Max(int64(len(l.sentTok)))
	l.transmitToken()
	if r.leader() == l.self {
		l.loss.Reset(l.lossTimeout())
	}
}

// maxTx bounds the copies of one token whose send times are kept (later
// copies are not timed).
const maxTx = 16

// transmitToken sends the kept copy of the token, numbered, and arms its
// retransmission.
func (l *Layer) transmitToken() {
	if l.txN < maxTx {
		l.txAt[l.txN] = l.Ctx.Now()
	}
	l.sentTok[1] = byte(min(l.txN, 255))
	l.txN++
	m := l.Ctx.NewMessage()
	copy(m.Append(len(l.sentTok)), l.sentTok)
	l.Ctx.Down(&event.Event{Kind: event.Send, Peer: l.sentTo, Control: true, Msg: m})
	l.rtx.Reset(l.rto())
}

// rto is how long the member waits for the successor's acknowledgement
// before it sends the token again: the measured round trip plus four times
// its deviation (Jacobson), at least rtoMin; before any round trip is
// measured, token_retransmit, doubled for every copy of the token that
// went unacknowledged. At most half of what the leader waits before it
// regenerates the token. The round trip scales the timer to the ring's
// links: across a WAN (tens of ms each way) a fixed LAN timer sent every
// token many times over (spread-ring-wan: 2,286 retransmissions of 208
// tokens); under bursty loss on a LAN a hop costs a burst's length of
// timeouts, so a timer of a few LAN round trips, not a fixed 10 ms, keeps
// a rotation (and the ring's throughput) near its loss-free figure.
func (l *Layer) rto() time.Duration {
	d := l.cfg.TokenRetransmit << l.backoff
	if l.rtt.SRTT() != 0 {
		d = max(rtoMin, l.rtt.RTO())
	}
	return min(d, l.lossTimeout()/2)
}

// maxBackoff bounds the doublings of token_retransmit.
const maxBackoff = 8

// lossTimeout is how long the leader waits for the token before it
// regenerates it: token_timeout, or twice the measured rotation when that
// is longer (a ring across the wide area), at most 8 x token_timeout.
func (l *Layer) lossTimeout() time.Duration {
	return min(max(l.cfg.TokenTimeout, 2*l.srot), 8*l.cfg.TokenTimeout)
}

// sampleRotation folds the time since the token was last in hand into the
// rotation estimate; a rotation longer than the loss timeout (the token
// was lost and regenerated, or the ring was stalled) is not a sample.
func (l *Layer) sampleRotation(now event.Time) {
	last := l.lastVisit
	l.lastVisit = now
	if last == 0 {
		return
	}
	d := now.Sub(last)
	switch {
	case d >= l.lossTimeout():
	case l.srot == 0:
		l.srot = d
	default:
		l.srot += (d - l.srot) / 8
	}
}

// rtoMin is the least token retransmission timeout.
const rtoMin = 500 * time.Microsecond

// retransmitToken: the successor has not acknowledged the token.
func (l *Layer) retransmitToken() {
	if l.cur == nil || l.rtxLeft <= 0 {
		return
	}
	l.rtxLeft--
	if l.rtt.SRTT() == 0 {
		l.backoff = min(l.backoff+1, maxBackoff)
	}
	l.c.TokenRetrans.Inc()
	l.transmitToken()
}

// tokenAckUp: the successor has the token.
func (l *Layer) tokenAckUp(ev *event.Event) {
	defer ev.Msg.Release()
	ring, seq, tx, err := parseTokenAck(ev.Msg.Bytes())
	if err != nil {
		l.c.Malformed.Inc()
		return
	}
	if l.cur != nil && ring == l.cur.id && seq == l.sentTokSeq && ev.Peer == l.sentTo {
		if l.rtx.Stop() && int(tx) < min(l.txN, maxTx) {
			// The copy acknowledged is known, retransmitted or not.
			l.rtt.Sample(l.Ctx.Now().Sub(l.txAt[tx]))
			l.backoff = 0
		}
	}
}

// holdDone ends a hold: the token goes on (to itself, in a one-member ring).
func (l *Layer) holdDone() {
	if !l.holding || l.cur == nil {
		return
	}
	l.holding = false
	if len(l.cur.members) == 1 {
		l.handleToken(false)
		return
	}
	l.sendToken()
}

// tokenLost is the leader's token-loss timer: it regenerates the token,
// its sequence far ahead so any old copy is dropped, for a quiet rotation
// (or, during recovery, another recovery rotation).
func (l *Layer) tokenLost() {
	r := l.cur
	if r == nil || r.leader() != l.self {
		return
	}
	l.c.Regenerated.Inc()
	if l.Ctx.Logging() {
		l.Ctx.Logf("token of ring %08x lost: regenerating", r.id)
	}
	seq := r.lastSeq + regenJump
	if r.recovering {
		l.tok = token{Ring: r.id, Type: tokRecovery, Seq: seq, Busy: true, Rtr: l.tok.Rtr[:0], Age: l.tok.Age[:0], Lost: l.tok.Lost[:0], Old: l.tok.Old[:0]}
	} else {
		l.last.copyTo(&l.tok)
		tok := &l.tok
		tok.Ring, tok.Type, tok.Seq = r.id, tokQuiet, seq
		tok.Rtr, tok.Age, tok.Lost, tok.Old = tok.Rtr[:0], tok.Age[:0], tok.Lost[:0], tok.Old[:0]
		tok.FlowControl, tok.Backlog, tok.RotSent, tok.RotBacklog = 0, 0, 0, 0
		tok.LinkSeq = max(tok.LinkSeq, r.sentSeq, r.win.aru)
		tok.SiteSeq = max(tok.SiteSeq, r.siteSeq)
		tok.SiteLTS = max(tok.SiteLTS, r.siteLTS)
		tok.LinkAru, tok.SiteAru, tok.Modifier = 0, 0, uint32(l.self)
	}
	l.lastSent = 0
	l.handleToken(true)
}

// deliver hands up, in link_seq order, every message of the current ring
// the member may deliver (all it holds without a gap; safe: only what
// every member has), once the old ring's are all delivered, then frees
// what the ring's aru covers.
func (l *Layer) deliver() {
	r := l.cur
	if r == nil {
		return
	}
	w := &r.win
	if !r.recovering && l.old == nil && len(l.upq) == 0 {
		lim := w.aru
		if l.cfg.Safe {
			lim = min(lim, r.ringAru)
		}
		l.deliverUpTo(w, lim)
	}
	w.free(r.ringAru)
	for s := range r.found {
		if s < w.base {
			delete(r.found, s) // skipped as lost
		}
	}
	l.setBuf()
}

// deliverUpTo hands up every held message up to seq, in order; lost
// entries are skipped (and counted).
func (l *Layer) deliverUpTo(w *window, seq uint32) {
	for w.delivered < seq {
		e := w.get(w.delivered + 1)
		w.delivered++
		switch {
		case e.lost || e.m == nil:
			l.c.RecoveryLost.Inc()
		case e.site || l.member(e.g):
			m := e.m.Clone()
			_, _ = m.Consume(dataHeaderSize)
			if e.retrans {
				m.Recovery.By = "ring" // Discovered was noted when it arrived
			}
			l.c.Delivered.Inc()
			l.Ctx.Up(&event.Event{Kind: event.Cast, Group: e.g, Peer: e.origin, Msg: m})
		}
	}
}

// contains reports whether s is in list.
func contains(list []uint32, s uint32) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
