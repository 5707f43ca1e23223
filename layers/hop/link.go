package hop

import (
	"fmt"
	"slices"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/ring"
	"github.com/layercast/layercast/stack"
)

// link is one Hop link (Figure 3.2) from this site's representative to a
// neighbour site's: both a sender and a receiver side.
type link struct {
	l    *Layer
	far  event.SiteID
	peer event.NodeID

	// Sender side.
	sHighest uint32          // s_highest_linkseq
	otherAru uint32          // s_other_end_aru
	open     []slot          // sent and not acknowledged, by seq & (len-1)
	pend     ring.Ring[slot] // live traffic: what this site casts and forwards now
	// catchUp is what a far site lacks, sent when it is readmitted or the
	// link is new (resend): its own queue, so a long one does not hold
	// the site's new casts (congested counts pend only). pump gives it
	// catchShare packets of every catchShare+1 while live packets wait,
	// all of them when none do. A stream's live packets may so pass its
	// catch-up: the far end takes a stream's messages in any order (a
	// link forwards past its gaps too), and holds them until its tStart
	// when it does not know where the stream stands (stream early); a
	// stream's tStart queued while its catch-up is still queued goes
	// behind it (catchN).
	catchUp   ring.Ring[slot]
	catchN    [maxSite + 1]int // packets of each source site in catchUp
	catchOpen int              // catch-up packets in the window
	catchRun  int              // catch-up packets sent in a row while live ones waited
	catchSkip [maxSite + 1]int // 1 + index in catchUp of its last skip record per source site, 0 if none
	rtx       ring.Ring[uint32]
	tokens    float64
	refilled  event.Time
	lastSend  event.Time
	sendT     *stack.Timer
	skipRuns  [maxSite + 1]skipRun // pending skip record per source site
	retxCtr   *stack.Counter
	heldBytes int64

	// Receiver side.
	rHighest uint32 // r_highest_seq
	rAru     uint32 // r_link_aru
	missing  []miss // retransmit list, sorted
	nackBuf  []uint32
	pktCount int // Pkt_cnt_linkack
	ackT     *stack.Timer
	nackT    *stack.Timer
	heard    event.Time
	// answered: the far end has sent this link something since it was
	// opened, so it knows it is a link end (it installed the view that
	// made it its site's representative). Until then at most
	// firstWindow packets go out.
	answered bool
	// beaten: the far end's heartbeat came on this link since it was
	// opened, so this node's clock is past what that site delivered
	// (unsyncedFar).
	beaten bool

	// epoch is this end's life of the link, which its link numbers are
	// of; farEpoch (once farKnown) the far end's newest life seen here.
	// Each end numbers a link afresh each time it opens it, and packets
	// of an earlier life can still be on the way, or come from a far
	// end that does not know yet that it left the view: a representative
	// frozen for 2.4 s, removed and readmitted, sent its old link's
	// window again when it woke, those packets reached the far end's new
	// link first, and their numbers stood for other messages there: the
	// new link's own packet 42 was then dropped as a copy, and the far
	// site's stream of its site stopped at the hole for good (site soak,
	// freeze mode, seed 148: 3,335 owed deliveries missing). Numbers of an
	// older life are dropped; a newer one starts the receiving side
	// afresh. A link this end reopens while the far end keeps its own
	// takes up the far end's life where the closed one stood (recvOf).
	epoch    uint16
	farEpoch uint16
	farKnown bool
}

// farLife takes a far end's link life e from a packet: it reports whether
// the packet's link numbers count (of the newest life seen; a newer one
// starts the receiving side afresh).
func (lk *link) farLife(e uint16) bool {
	switch {
	case !lk.farKnown:
		lk.farEpoch, lk.farKnown = e, true
	case e == lk.farEpoch:
	case int16(e-lk.farEpoch) > 0:
		lk.farEpoch = e
		lk.rHighest, lk.rAru, lk.pktCount = 0, 0, 0
		lk.missing = lk.missing[:0]
		lk.nackT.Stop()
		lk.l.c.LinkLives.Inc()
	default:
		lk.l.c.StaleLife.Inc()
		return false
	}
	return true
}

// firstWindow is how many packets a link sends before its far end first
// answers. A far representative new to its site learns it is one when
// its views are, which may be seconds after this node's: its ring below
// holds them up while it recovers, until membership removes a member that
// crashed meanwhile. A full window sent meanwhile was dropped there, and
// came again only as repairs once it answered, a nack round at a time with
// the window shut behind the first still missing; with a state transfer
// queued behind it (what that site lacks since its old representative
// failed), the site here held its members' casts for seconds more
// (spread-site-soak seed 517 at rate max: n3 took over site 2 at 4.6 s,
// answered at 7.4 s, and site 3's link to it drained at 10.5 s).
const firstWindow = 16

// slot is a packet a link holds: a data message (payload retained) or a
// skip record (msg nil).
type slot struct {
	used    bool
	queued  bool // in the retransmit queue
	catchUp bool // sent from the catch-up queue
	h       dataHdr
	g       event.GroupID
	msg     *event.Message
}

// miss is one seq on the retransmit list.
type miss struct {
	seq   uint32
	tries int
	since event.Time
}

// maxNack bounds the seqs one nack lists.
const maxNack = 256

func newLink(l *Layer, far event.SiteID, peer event.NodeID) *link {
	// A node that has heard no time stamp yet has nothing to stamp above
	// (its far streams wait for their tStarts meanwhile, unsyncedFar):
	// waiting for the first heartbeats cost hop 1.6% of its throughput at
	// 246 msgs/s on spread-wan.scenario.
	l.epochs++
	lk := &link{l: l, far: far, peer: peer, open: make([]slot, l.cfg.Window), tokens: float64(l.cfg.Bucket), beaten: l.clock == 0, epoch: l.epochs}
	now := l.Ctx.Now()
	lk.refilled, lk.heard = now, now
	lk.retxCtr = l.Ctx.Counter(fmt.Sprintf("retransmissions_by_link:s%d>s%d", l.me, far))
	if r, ok := l.recvOf[peer]; ok {
		// This end reopens a link the far end kept (a probe brought it
		// up and only this end had declared it down, or this node
		// brought it up twice): the far end goes on numbering its life
		// of the link, and this end takes it from where it stood. Started
		// afresh, it asked for the far end's numbers from 1 again, which
		// the far end had freed, and declared the link down once more
		// (site soak seed 3286 at rate max). The far end starts its
		// receiving side afresh when it sees this end's new life.
		lk.farEpoch, lk.farKnown, lk.rHighest, lk.rAru = r.epoch, true, r.highest, r.aru
		for _, ms := range r.missing {
			lk.missing = append(lk.missing, miss{seq: ms.seq, since: ms.since}) // tries start over
		}
	}
	lk.sendT = l.Ctx.NewTimer(lk.pump)
	lk.ackT = l.Ctx.NewTimer(lk.onAck)
	lk.nackT = l.Ctx.NewTimer(lk.onNack)
	if len(lk.missing) > 0 {
		lk.nackT.Reset(l.cfg.NackRetry)
	}
	lk.ackT.Reset(l.cfg.AckLong)
	return lk
}

// recvLife is a closed link's receiving side: the far end's life of the
// link and where this end stood in it (newLink takes it up again).
type recvLife struct {
	epoch        uint16
	highest, aru uint32
	missing      []miss
}

// close releases what the link holds.
func (lk *link) close() {
	if lk.farKnown {
		if lk.l.recvOf == nil {
			lk.l.recvOf = map[event.NodeID]recvLife{}
		}
		lk.l.recvOf[lk.peer] = recvLife{epoch: lk.farEpoch, highest: lk.rHighest, aru: lk.rAru, missing: slices.Clone(lk.missing)}
	}
	lk.sendT.Stop()
	lk.ackT.Stop()
	lk.nackT.Stop()
	for i := range lk.open {
		if lk.open[i].msg != nil {
			lk.open[i].msg.Release()
		}
		lk.open[i] = slot{}
	}
	for lk.pend.Len() > 0 {
		if s := lk.pend.Pop(); s.msg != nil {
			s.msg.Release()
		}
	}
	for lk.catchUp.Len() > 0 {
		if s := lk.catchUp.Pop(); s.msg != nil {
			s.msg.Release()
		}
	}
	lk.hold(-lk.heldBytes)
}

// queue queues a data message for this link (the payload is retained).
// The queues hold at most max_pending packets (as many as a representative
// keeps per source site); the application is held off long before
// (checkHold), but casts of other members and packets forwarded from other
// links cannot be.
func (lk *link) queue(h *dataHdr, g event.GroupID, payload *event.Message) {
	lk.flushSkip(h.Site)
	if lk.queued() >= lk.l.cfg.MaxPending {
		lk.l.c.QueueDrops.Inc()
		return
	}
	payload.Retain()
	lk.pend.Push(slot{h: *h, g: g, msg: payload})
	lk.hold(int64(payload.Len()))
	lk.pump()
}

// queueSkip adds first..last of a source site to the pending skip record,
// sending the previous one if the run is not contiguous.
func (lk *link) queueSkip(site event.SiteID, first, last uint32, lts uint64) {
	r := &lk.skipRuns[site]
	if r.first != 0 && r.last+1 == first {
		r.last, r.lts = last, lts
		return
	}
	lk.flushSkip(site)
	*r = skipRun{first: first, last: last, lts: lts}
}

// flushSkip queues the pending skip record of a source site.
func (lk *link) flushSkip(site event.SiteID) {
	r := &lk.skipRuns[site]
	if r.first == 0 {
		return
	}
	if lk.queued() < lk.l.cfg.MaxPending {
		lk.pend.Push(slot{h: dataHdr{Type: tSkip, Site: site, Seq: r.first, Last: r.last, LTS: r.lts}})
	} else {
		lk.l.c.QueueDrops.Inc()
	}
	*r = skipRun{}
	lk.pump()
}

// queueStart queues a stream's tStart (state.go) behind what is queued,
// and behind the stream's catch-up if some is still queued: taken before
// it, a later tStart made the far end skip what the catch-up brings.
func (lk *link) queueStart(h *dataHdr) {
	lk.flushSkip(h.Site)
	if lk.catchN[h.Site] > 0 {
		lk.catchStart(h)
		return
	}
	if lk.queued() >= lk.l.cfg.MaxPending {
		lk.l.c.QueueDrops.Inc()
		return
	}
	lk.pend.Push(slot{h: dataHdr{Type: tStart, Site: h.Site, Seq: h.Seq, LTS: h.LTS}})
	lk.pump()
}

// unqueue drops what waits unsent of a source site's stream (data, skip
// records and tStarts): this link's far site no longer takes that stream
// from here. A tree rebuilt for a moment through this site (its link state
// not yet updated) had the whole backlog a far site lacked resent here, and
// when the tree turned back, the backlog, already resent by the parent
// again, still crossed this link too, ahead of this site's own casts
// (spread-site-soak seed 3146 at rate max: site 1's 735 packets resent to
// site 3 both from site 1 and through site 2 in a tree that stood for 38
// ms; site 2's casts waited behind them for 5.5 s, past the run's end).
// Sent but unacknowledged packets stay: the link's sequence numbers them.
func (lk *link) unqueue(site event.SiteID) {
	lk.skipRuns[site] = skipRun{}
	for n := lk.pend.Len(); n > 0; n-- {
		s := lk.pend.Pop()
		if s.h.Site != site {
			lk.pend.Push(s)
			continue
		}
		lk.drop(s)
	}
	// The catch-up queue is rebuilt in order, its per-site counts and
	// skip-record indexes with it.
	lk.catchN, lk.catchSkip = [maxSite + 1]int{}, [maxSite + 1]int{}
	for n := lk.catchUp.Len(); n > 0; n-- {
		s := lk.catchUp.Pop()
		if s.h.Site == site {
			lk.drop(s)
			continue
		}
		lk.catchPush(s)
		if s.h.Type == tSkip {
			lk.catchSkip[s.h.Site] = lk.catchUp.Len()
		}
	}
	lk.l.checkHold()
}

// drop lets go of a queued packet unsent (unqueue).
func (lk *link) drop(s slot) {
	lk.l.c.Unqueued.Inc()
	if s.msg != nil {
		lk.hold(-int64(s.msg.Len()))
		s.msg.Release()
	}
}

// catchData queues a data message of a far site's catch-up (resend; the
// payload is retained).
func (lk *link) catchData(h *dataHdr, g event.GroupID, payload *event.Message) {
	if !lk.catchRoom() {
		return
	}
	payload.Retain()
	lk.catchPush(slot{h: *h, g: g, msg: payload})
	lk.hold(int64(payload.Len()))
}

// catchStart queues a stream's tStart on the catch-up queue.
func (lk *link) catchStart(h *dataHdr) {
	if !lk.catchRoom() {
		return
	}
	lk.catchPush(slot{h: dataHdr{Type: tStart, Site: h.Site, Seq: h.Seq, LTS: h.LTS}})
	lk.pump()
}

// catchSkipRun queues first..last of a source site on the catch-up queue,
// joined to the site's last skip record there when it runs on from it.
func (lk *link) catchSkipRun(site event.SiteID, first, last uint32, lts uint64) {
	if i := lk.catchSkip[site] - 1; i >= 0 && i < lk.catchUp.Len() {
		if r := lk.catchUp.At(i); r.h.Type == tSkip && r.h.Site == site && r.h.Last+1 == first {
			r.h.Last, r.h.LTS = last, lts
			return
		}
	}
	if !lk.catchRoom() {
		return
	}
	lk.catchPush(slot{h: dataHdr{Type: tSkip, Site: site, Seq: first, Last: last, LTS: lts}})
	lk.catchSkip[site] = lk.catchUp.Len()
}

// queued is how many packets the link's two queues hold: at most
// max_pending, as its one queue did (bufferBound).
func (lk *link) queued() int { return lk.pend.Len() + lk.catchUp.Len() }

// catchRoom reports whether the link's queues have room for a catch-up
// packet.
func (lk *link) catchRoom() bool {
	if lk.queued() >= lk.l.cfg.MaxPending {
		lk.l.c.QueueDrops.Inc()
		return false
	}
	return true
}

func (lk *link) catchPush(s slot) {
	s.catchUp = true
	lk.catchUp.Push(s)
	lk.catchN[s.h.Site]++
	lk.catchSkip[s.h.Site] = 0
}

// catchPop takes the catch-up queue's first packet.
func (lk *link) catchPop() slot {
	s := lk.catchUp.Pop()
	lk.catchN[s.h.Site]--
	for i := range lk.catchSkip {
		if lk.catchSkip[i] > 0 {
			lk.catchSkip[i]-- // indexes shift by one; the first one gone
		}
	}
	return s
}

func (lk *link) flushSkips() {
	for s := range lk.skipRuns {
		lk.flushSkip(event.SiteID(s))
	}
}

// hold counts bytes of payload the link holds (and the layer in all).
func (lk *link) hold(d int64) {
	lk.heldBytes += d
	lk.l.hold(d)
}

// pump is Hop_Send_Data: send retransmissions, then new packets, while the
// token bucket has tokens and the window room.
func (lk *link) pump() {
	l := lk.l
	defer l.checkHold()
	now := l.Ctx.Now()
	if el := now.Sub(lk.refilled); el > 0 {
		lk.tokens = min(float64(l.cfg.Bucket), lk.tokens+float64(l.cfg.LinkRate)*el.Seconds())
		lk.refilled = now
	}
	for {
		var s *slot
		var retx bool
		for lk.rtx.Len() > 0 {
			seq := lk.rtx.Pop()
			cand := &lk.open[seq&uint32(len(lk.open)-1)]
			cand.queued = false
			if cand.used && cand.h.LinkSeq == seq && seq > lk.otherAru {
				s, retx = cand, true
				break
			}
		}
		if s == nil {
			win := uint32(len(lk.open))
			if !lk.answered {
				win = min(win, firstWindow)
			}
			if lk.pend.Len()+lk.catchUp.Len() == 0 || lk.sHighest-lk.otherAru >= win {
				break // nothing new, or the window is full: acks reopen it
			}
			catch := lk.takeCatchUp(win)
			q := &lk.pend
			if catch {
				q = &lk.catchUp
			}
			p := q.Front()
			if lk.tokens < float64(size(p)) {
				lk.wait(size(p))
				return
			}
			lk.sHighest++
			ns := &lk.open[lk.sHighest&uint32(len(lk.open)-1)]
			if catch {
				*ns = lk.catchPop()
				lk.catchOpen++
			} else {
				*ns = lk.pend.Pop()
			}
			switch {
			case !catch:
				lk.catchRun = 0
			case lk.pend.Len() > 0:
				lk.catchRun++
			}
			ns.used = true
			ns.h.LinkSeq = lk.sHighest
			s = ns
		} else if lk.tokens < float64(size(s)) {
			lk.rtx.Push(s.h.LinkSeq) // keep it first in line
			s.queued = true
			lk.wait(size(s))
			return
		}
		lk.tokens -= float64(size(s))
		lk.transmit(s, retx)
	}
}

// takeCatchUp reports whether the next new packet comes from the catch-up
// queue: always when no live packet waits; else catchShare packets of
// every catchShare+1, and only while catch-up holds less than that share
// of the window.
func (lk *link) takeCatchUp(win uint32) bool {
	switch {
	case lk.catchUp.Len() == 0:
		return false
	case lk.pend.Len() == 0:
		return true
	}
	return lk.catchRun < catchShare && uint64(lk.catchOpen)*uint64(catchShare+1) < max(uint64(win)*uint64(catchShare), 1)
}

// catchShare is how many catch-up packets go for each live one while both
// wait. Live packets get a share (held at none, a site's casts waited for
// the whole catch-up), but a small one: the far site's agreed order waits
// on the catch-up anyway, and so, when every site is caught up by another
// (a WAN cut routed round), does everyone's. At one for one, the
// sites-1-and-3 cut at rate max (TestHopRoutesAroundACutWANLink) had p99
// 5.6 s against 3.7 s with catch-up first; at three for one, 4.1 s.
const catchShare = 3

// size is what a slot costs in tokens: its packet's bytes.
func size(s *slot) int {
	n := dataHdrSize + stack.FrameSize
	if s.msg != nil {
		n += s.msg.Len()
	}
	return n
}

// wait arms the send timer for when the bucket holds need bytes.
func (lk *link) wait(need int) {
	d := (float64(need) - lk.tokens) / float64(lk.l.cfg.LinkRate)
	lk.sendT.Reset(max(time1us, durationOf(d)))
}

// transmit sends one held packet.
func (lk *link) transmit(s *slot, retx bool) {
	l := lk.l
	now := l.Ctx.Now()
	var m *event.Message
	if s.msg != nil {
		m = l.Ctx.MessageFrom(s.msg.Bytes())
	} else {
		m = l.Ctx.NewMessage()
	}
	h := s.h
	h.Flags, h.Epoch = 0, lk.epoch
	if retx {
		h.Flags = flagRetx
		l.c.Retx.Inc()
		if h.Type == tData {
			// Repairs of data by link (a stream's tStart or skip
			// records resent are not the losses the figure is about).
			lk.retxCtr.Inc()
		}
	} else if h.Type == tData {
		l.c.DataSent.Inc()
	} else {
		l.c.Skips.Inc()
	}
	h.put(m.Prepend(dataHdrSize))
	l.c.Tokens.Inc()
	if gap := now.Sub(lk.lastSend); gap > 0 {
		l.c.ActiveNs.Add(int64(min(gap, 10*l.cfg.Heartbeat)))
	}
	lk.lastSend = now
	l.Ctx.Down(&event.Event{Kind: event.Send, Peer: lk.peer, Group: s.g, Control: h.Type != tData, Msg: m})
	lk.counted()
}

// counted is the Pkt_cnt_linkack rule: an ack at most every AckEvery
// packets sent or received.
func (lk *link) counted() {
	lk.pktCount++
	if lk.pktCount == 1 && (!lk.ackT.Pending() || lk.ackT.When() > lk.l.Ctx.Now().Add(lk.l.cfg.AckShort)) {
		lk.ackT.Reset(lk.l.cfg.AckShort)
	}
	if lk.pktCount > lk.l.cfg.AckEvery {
		lk.sendAck()
	}
}

// onAck is Hop_Send_Ack's timer; it also watches the far end's silence.
func (lk *link) onAck() {
	if lk.l.Ctx.Now().Sub(lk.heard) > lk.l.cfg.DeadAfter {
		lk.l.linkDown(lk.far, lk.peer, fmt.Sprintf("nothing heard for %v", lk.l.cfg.DeadAfter))
		return
	}
	lk.sendAck()
}

// sendAck sends link_aru and the highest seq sent.
func (lk *link) sendAck() {
	l := lk.l
	m := l.Ctx.NewMessage()
	a := ackHdr{Aru: lk.rAru, Highest: lk.sHighest, AruEpoch: lk.farEpoch, Epoch: lk.epoch}
	a.put(m.Append(ackHdrSize))
	l.Ctx.Down(&event.Event{Kind: event.Send, Peer: lk.peer, Control: true, Msg: m})
	l.c.Acks.Inc()
	lk.pktCount = 0
	lk.ackT.Reset(l.cfg.AckLong)
}

// onNack is Hop_Send_Nack: request what is still missing, count the
// requests, and declare the far end dead past the retry limit.
func (lk *link) onNack() {
	if len(lk.missing) == 0 {
		return
	}
	l := lk.l
	body := nackBody{Seqs: lk.nackBuf[:0], Epoch: lk.farEpoch}
	for i := range lk.missing {
		if i == maxNack {
			break
		}
		ms := &lk.missing[i]
		ms.tries++
		if ms.tries > l.cfg.MaxRetries {
			l.linkDown(lk.far, lk.peer, fmt.Sprintf("link seq %d requested %d times", ms.seq, ms.tries-1))
			return
		}
		body.Seqs = append(body.Seqs, ms.seq)
	}
	lk.nackBuf = body.Seqs
	enc := l.codec.Encode(&body)
	m := l.Ctx.NewMessage()
	b := m.Append(1 + len(enc))
	b[0] = tNack
	copy(b[1:], enc)
	l.Ctx.Down(&event.Event{Kind: event.Send, Peer: lk.peer, Control: true, Msg: m})
	l.c.Nacks.Inc()
	lk.nackT.Reset(l.cfg.NackRetry)
}

// receive handles a packet from the far representative.
func (lk *link) receive(ev *event.Event) {
	l := lk.l
	m := ev.Msg
	lk.heard = l.Ctx.Now()
	if !lk.answered {
		lk.answered = true
		defer lk.pump() // the whole window is open now
	}
	b := m.Bytes()
	switch b[0] {
	case tAck:
		a, err := parseAck(b)
		m.Release()
		if err != nil || a.AruEpoch == lk.epoch && a.Aru > lk.sHighest {
			l.c.Malformed.Inc()
			return
		}
		lk.onAckIn(&a)
	case tNack:
		var body nackBody
		err := l.codec.Decode(b[1:], &body)
		m.Release()
		if err != nil || len(body.Seqs) > maxNack {
			l.c.Malformed.Inc()
			return
		}
		if body.Epoch != lk.epoch {
			l.c.StaleLife.Inc() // of an earlier life of this end's link
			return
		}
		for _, seq := range body.Seqs {
			s := &lk.open[seq&uint32(len(lk.open)-1)]
			if seq > lk.otherAru && seq <= lk.sHighest && s.used && s.h.LinkSeq == seq && !s.queued {
				s.queued = true
				lk.rtx.Push(seq)
			}
		}
		lk.pump()
	case tBeat:
		bt, err := parseBeat(b)
		m.Release()
		if err != nil {
			l.c.Malformed.Inc()
			return
		}
		l.onBeatIn(&bt, true, lk.far == bt.Site)
		if !lk.beaten {
			lk.beaten = true
			l.checkHold() // casts waiting for its clock (unsyncedFar)
		}
	case tData, tSkip, tStart:
		hb, err := m.Consume(dataHdrSize)
		var h dataHdr
		if err == nil {
			h, err = parseData(hb)
		}
		if err != nil || h.LinkSeq == 0 || h.Seq == 0 {
			l.c.Malformed.Inc()
			m.Release()
			return
		}
		if !lk.farLife(h.Epoch) {
			m.Release()
			return
		}
		if !lk.onData(&h, m) {
			l.c.Duplicates.Inc()
			m.Release()
			return
		}
		l.accept(&h, ev.Group, m)
		m.Release()
	default:
		l.c.Malformed.Inc()
		m.Release()
	}
}

// onAckIn is the ACK case of Hop_Recv: its aru counts only if it is of
// this end's link life, its highest only if of the far end's newest.
func (lk *link) onAckIn(a *ackHdr) {
	aru, highest := a.Aru, a.Highest
	if a.AruEpoch != lk.epoch {
		if a.AruEpoch != 0 { // 0: the far end has heard nothing of this end yet
			lk.l.c.StaleLife.Inc()
		}
		aru = 0
	}
	if aru > lk.otherAru {
		for seq := lk.otherAru + 1; seq <= aru; seq++ {
			s := &lk.open[seq&uint32(len(lk.open)-1)]
			if s.used && s.h.LinkSeq == seq {
				if s.catchUp {
					lk.catchOpen--
				}
				if s.msg != nil {
					lk.hold(-int64(s.msg.Len()))
					s.msg.Release()
				}
				*s = slot{}
			}
		}
		lk.otherAru = aru
		lk.pump()
	}
	if lk.farLife(a.Epoch) && highest > lk.rHighest && highest-lk.rHighest <= uint32(len(lk.open)) {
		lk.addMissing(lk.rHighest+1, highest)
		lk.rHighest = highest
	}
}

// onData is the DATA_PKT case of Hop_Recv: it reports whether the packet is
// new on this link.
func (lk *link) onData(h *dataHdr, m *event.Message) bool {
	l := lk.l
	lk.counted()
	seq := h.LinkSeq
	switch {
	case seq == lk.rHighest+1:
		if lk.rAru == lk.rHighest {
			lk.rAru++
		}
		lk.rHighest++
	case seq <= lk.rHighest:
		if seq <= lk.rAru {
			return false
		}
		i := -1
		for j := range lk.missing {
			if lk.missing[j].seq == seq {
				i = j
				break
			}
		}
		if i < 0 {
			return false
		}
		since := lk.missing[i].since
		lk.missing = append(lk.missing[:i], lk.missing[i+1:]...)
		if h.Flags&flagRetx != 0 { // else it was only late
			l.c.Recovered.Inc()
			l.c.RecNs.Add(int64(l.Ctx.Now().Sub(since)))
			m.Recovery = event.Recovery{By: "hop", Discovered: since}
		}
		if len(lk.missing) == 0 {
			lk.rAru = lk.rHighest
			lk.nackT.Stop()
		} else {
			lk.rAru = lk.missing[0].seq - 1
		}
	default:
		if seq-lk.rHighest > uint32(len(lk.open)) {
			return false // beyond the far end's window: not a packet it sent
		}
		lk.addMissing(lk.rHighest+1, seq-1)
		lk.rHighest = seq
	}
	return true
}

// addMissing puts first..last on the retransmit list and arms the nack.
func (lk *link) addMissing(first, last uint32) {
	now := lk.l.Ctx.Now()
	for s := first; s <= last && s != 0; s++ {
		if len(lk.missing) >= 4*len(lk.open) {
			break
		}
		lk.missing = append(lk.missing, miss{seq: s, since: now})
	}
	if len(lk.missing) > 0 && !lk.nackT.Pending() {
		lk.nackT.Reset(lk.l.cfg.NackDelay)
	}
}

const time1us = time.Microsecond

func durationOf(sec float64) time.Duration { return time.Duration(sec * 1e9) }
