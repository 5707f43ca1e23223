package reliable

import (
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/rtt"
	"github.com/layercast/layercast/internal/seqwin"
	"github.com/layercast/layercast/stack"
)

// recvState is one sender's stream in one group, at a receiver. Everything
// below next has been delivered (or was never owed to us); the bitmap marks
// what arrived in [next, next+window); highest is the highest sequence number
// known to exist. Missing messages between next and highest are NAKed.
type recvState struct {
	g       *group
	from    event.NodeID
	start   uint32 // the join floor: the stream starts here for us
	next    uint32
	highest uint32
	// path is the round trip to the sender, shared by all its streams at
	// this node (see path). Beside next and highest: every digest we
	// send reads the three of each member's stream (unmeasured), and the
	// member's lines further on are cold then.
	path *path
	// rx and lost count the first copies that arrived and the messages
	// a retransmission recovered since loss (the stream's loss in
	// thousandths, smoothed) was last updated (see noteLoss). Every data
	// packet reads them: they sit with next and highest, in the lines
	// Warm asks for (at thousands of simulated nodes, a counter four
	// lines further on was a twentieth of the run's CPU, waiting for
	// memory).
	rx, lost uint32
	loss     uint32
	// hintedAt: a loss hint named this stream before it was placed (its
	// first casts lost); the gap its placement reveals was discovered
	// then, and is NAKed nak_delay after it (0: no such hint, or used).
	// Beside next and highest: every digest reads the three.
	hintedAt event.Time
	// got marks what arrived in [next, highest]: it starts at 64 numbers
	// and grows as highest moves (raise), up to the window: at 1% loss a
	// stream rarely has more than a few numbers outstanding, and a full
	// window on each of 57,000 streams at 2,048 simulated nodes was 29 MB
	got seqwin.Bitmap
	// epochs record when gaps were discovered: every missing sequence number
	// from epochs[i].from up to epochs[i+1].from was found missing at
	// epochs[i].at. Bounded: the oldest merge when it is full. Made at the
	// stream's first gap (most streams at low loss never have one, and
	// 32 records on each of 57,000 streams at 2,048 simulated nodes were
	// 73 MB for the collector to mark), then grown to maxEpochs at most.
	epochs []gapEpoch
	timer  bool // a NAK timer is set
	// pressed: the sender's buffer was over half full when it sent the
	// latest first copy to arrive (flagPressed; see firstNakAfter)
	pressed bool
	tm      *stack.Timer
	// retransmissions received, in all and when we last NAKed: a sender
	// answers a NAK with at most max_nak_retrans messages, so a NAK round
	// that brought some back is progress, not a failed try
	recovered, recoveredAtNak uint32
	// lecOff maps a lower layer's numbering of this stream to ours (ours
	// minus its), learnt from the anchor of a loss hint (hint.go).
	lecOff   uint32
	lecKnown bool
	// sampled is the NAK of this stream the last round-trip sample was
	// taken from (one sample per NAK).
	sampled event.Time
	// answered is the latest NAK of this stream an answer echoed (see
	// answered)
	answered event.Time
	// ask bounds the messages one NAK round asks for (0: max_nak_retrans),
	// and asked is how many the last round asked for, at askedAt (see
	// askLimit)
	ask, asked int
	askedAt    event.Time
	// askBusy is when a round last found everything the one before asked
	// for back with the limit at max_nak_retrans (or the stream's first
	// round): see askLimit
	askBusy event.Time
	// stalls counts NAK retry rounds in a row that brought nothing back:
	// the retry interval doubles with each (exponential backoff)
	stalls int
}

// path is the round trip to one sender as this receiver sees it (a NAK to
// the first retransmission answering it, queueing included), smoothed as
// TCP's srtt and rttvar (RFC 6298); zero srtt: no sample yet. It belongs to
// the sender, not to one of its streams, as SRM keeps a distance per host:
// a node in many groups hears each of them rarely (Ricochet's point), and a
// stream that had never been NAKed retried every nak_retry with backoff
// while its sender's round trip was known from its other streams (Figure
// 8's set-up at 20% loss, 16 nodes in 125 groups: one NAK round in 12 is
// lost, and three in a row took a message 541 ms to recover; with the
// path's timeout, about 130 ms).
//
// Its samples are the echoes of our NAKs' stamps (echoRTT); exact is set
// by the first. Before it, the estimate may be a digest's answer (askRTT),
// which can be another member's answer and is often far too short: it
// only hastens first NAKs, and the retry interval stays at least
// nak_retry (retryRTO).
type path struct {
	rtt.Estimator
	asks  int  // digests that asked to time an answer while none was measured (askRTT)
	exact bool // the estimate is of echoed NAK stamps (echoRTT)
}

// pathTo returns the round-trip state towards a sender.
func (l *Layer) pathTo(id event.NodeID) *path {
	if p := l.paths[id]; p != nil {
		return p
	}
	if l.paths == nil {
		l.paths = map[event.NodeID]*path{}
	}
	p := &path{}
	l.paths[id] = p
	return p
}

type gapEpoch struct {
	from  uint32
	at    event.Time // discovered
	due   event.Time // first NAK due (see firstNakAfter)
	naked event.Time // last NAKed
	tries int        // NAK rounds so far
	// lost: an answer to a NAK sent after this epoch's last came while a
	// gap of it was still missing (see answered): due again at once
	lost bool
}

const maxEpochs = 32

// newRecv starts a sender's stream at a receiver at sequence number start.
func (l *Layer) newRecv(g *group, m *member, start uint32) *recvState {
	m.recv = recvState{g: g, from: m.id, start: start, next: start, highest: start - 1, path: l.pathTo(m.id),
		hintedAt: l.placedAfterHint(g.id, m.id)}
	rs := &m.recv
	rs.got = seqwin.NewBitmap(64)
	m.rs = rs

	rs.tm = l.Ctx.NewTimer(func() { l.nakTimer(rs) })
	return rs
}

// freeRecv releases a stream's state (its sender left) and its NAK timer.
func (l *Layer) freeRecv(rs *recvState) {
	if rs.timer {
		rs.tm.Stop()
	}
	rs.got, rs.epochs = seqwin.Bitmap{}, nil
}

// dataUp receives a sequenced multicast and delivers it at once unless it
// is a duplicate or not owed to us.
func (l *Layer) dataUp(ev *event.Event) {
	m := ev.Msg
	hb, _ := m.Peek(dataHeaderSize)
	h, err := parseData(hb)
	if err != nil {
		l.drop(ev)
		return
	}
	hsize, echo := dataHeaderSize, uint32(0)
	if h.flags&flagEcho != 0 {
		hsize += echoSize
		eb, _ := m.Peek(hsize)
		if eb == nil {
			l.drop(ev)
			return
		}
		if echo, err = parseEcho(eb[dataHeaderSize:]); err != nil {
			l.drop(ev)
			return
		}
	}
	g, mb := l.lookup(ev.Group, ev.Peer)
	if g == nil || g.view == nil {
		l.c.NoView.Inc()
		m.Release()
		return
	}
	if mb == nil {
		l.c.NonMember.Inc()
		m.Release()
		return
	}
	if h.view > g.tag {
		// cast in a view we have not installed: it may belong to a
		// relationship that view starts (the sender re-admitted, or
		// restarted), which our state for the sender cannot tell from
		// the old one (soak seed 166 of specs/gms.stack: a new stream's
		// messages delivered as the old one's, then again). The sender
		// keeps it until we acknowledge it: recovered once we install
		// the view.
		l.c.NoView.Inc()
		m.Release()
		return
	}
	if h.view < mb.since {
		// sent before we were in the group together (before we joined,
		// or before it was re-admitted): not owed to us
		l.c.BeforeJoin.Inc()
		m.Release()
		return
	}
	rs := mb.rs
	if rs == nil {
		switch {
		case h.baseView <= mb.since:
			// the sender sent nothing between our joining and base
			rs = l.newRecv(g, mb, h.base)
		default:
			// it may have sent since we joined; its digest will say
			// where its stream starts for us (it keeps the messages
			// until we acknowledge them)
			if !mb.waitFloor {
				mb.waitFloor = true
				g.waiting++
			}
			l.touchQuiet(g)
			m.Release()
			return
		}
	}
	w := l.cfg.Window
	seq := h.seq
	switch {
	case seq < rs.next || (seq <= rs.highest && rs.got.Has(seq)):
		l.c.Duplicates.Inc()
		m.Release()
		return
	case seq >= rs.next+uint32(w):
		// too far ahead to track; it will be asked for again
		l.c.OutOfWindow.Inc()
		l.announce(rs, seq)
		m.Release()
		return
	}
	now := l.Ctx.Now()
	if h.flags&flagRetrans == 0 {
		// the sender's buffer was over half full when it sent this (its
		// rate waits for stability): the gaps this reveals are NAKed at
		// once (firstNakAfter)
		rs.pressed = h.flags&flagPressed != 0
	}
	if seq > rs.highest {
		l.announce(rs, seq-1)
		rs.raise(seq)
	} else if h.flags&flagRetrans == 0 && m.Recovery.By == "" {
		// counted missing, but it was only late (reordered): not a loss
		l.c.LossDiscovered.Add(-1)
	}
	rs.got.Set(seq)
	if h.flags&flagRetrans == 0 {
		l.noteLoss(rs, 1, 0)
	}
	if h.flags&flagRetrans != 0 {
		rs.recovered++
		if echo != 0 {
			l.echoRTT(rs, echo, now)
			l.answered(rs, echo, now)
		}
		l.unstall(rs, now)
	}
	if h.flags&flagRetrans != 0 && m.Recovery.By == "" {
		m.Recovery = event.Recovery{By: "nak", Discovered: rs.discovered(seq, now)}
		l.c.RecoveredNak.Inc()
		l.noteLoss(rs, 0, 1)
		l.found(rs, m, seq, hsize)
	}
	if seq == rs.next {
		for rs.next <= rs.highest && rs.got.Has(rs.next) {
			rs.got.Clear(rs.next)
			rs.next++
		}
		rs.prune()
		if h.flags&flagRetrans != 0 && rs.pressed {
			// a repair moved our first gap while the sender waits for
			// stability: tell it soon (digestSoon)
			l.digestSoon(g)
		}
	}
	_, _ = m.Consume(hsize)
	ev.Seq, ev.Start = seq, rs.start // compose.Sequenced: what fifo orders by
	l.c.Delivered.Inc()
	l.touch(g)
	// like JGroups STABLE's max_bytes: after a quarter of a sender's buffer
	// (or of its window of messages) has arrived, tell the senders at once
	// rather than at the next round, so a fast sender is not held to
	// max_buffer per stable_interval
	g.rxMsgs++
	if g.rxBytes += int64(m.Len()); g.rxBytes >= l.cfg.MaxBuffer/4 || g.rxMsgs >= l.cfg.Window/4 {
		l.sendDigest(g, g.stable < g.next-1, false)
	}
	l.Ctx.Up(ev)
}

// announce records that the stream has messages up to seq; any not yet
// seen are lost (discovered now) and will be NAKed after nak_delay.
//
// What is believed is bounded by the window: a forged or corrupt number
// far ahead (up to 2^31) made a receiver count billions of losses; beyond
// the window nothing is NAKed anyway, and what lies there is announced
// again as next moves (by the sender's data and digests).
func (l *Layer) announce(rs *recvState, seq uint32) {
	if lim := rs.next + uint32(l.cfg.Window) - 1; seq > lim {
		seq = lim
	}
	now := l.Ctx.Now()
	at := now
	if rs.hintedAt != 0 {
		// the first announce since a stream a hint named was placed:
		// the gap it reveals (if any) is the one hinted
		at, rs.hintedAt = min(now, rs.hintedAt), 0
	}
	if seq <= rs.highest {
		return
	}
	from := rs.highest + 1
	if from < rs.next {
		from = rs.next
	}
	if seq >= from {
		l.c.LossDiscovered.Add(int64(seq - from + 1))
		if rs.epochs == nil {
			rs.epochs = make([]gapEpoch, 0, 4)
		}
		if len(rs.epochs) == maxEpochs {
			rs.dropEpoch()
		}
		rs.epochs = append(rs.epochs, gapEpoch{from: from, at: at, due: at.Add(l.firstNakAfter(rs))})
		// the new gap is due its first NAK's wait after its discovery,
		// even if the timer was set later for older gaps (a slowed retry)
		if due := max(now, rs.epochs[len(rs.epochs)-1].due); !rs.timer || rs.tm.When() > due {
			rs.timer = true
			rs.tm.ResetAt(due)
		}
	}
	rs.raise(seq)
}

// dropEpoch makes room for a gap record: it deletes one whose gaps have
// all been filled (its range joins the one before, which then covers
// nothing more that is missing), or else merges the two oldest into the
// first (its from, discovery time and NAKs are the earlier), keeping the
// earlier first NAK. At rate max a gap is found every millisecond or so
// and the records fill within a round trip while the oldest gap holds
// next: merging the oldest two at once gave the gaps NAKed since the
// older record's NAK time, due again before their answers could come (a
// retry of every gap of the last round trip, each a duplicate: 0.2
// duplicates per loss at 1%, 20 ms path). Merging into the later NAK
// time instead held the oldest gap's retry back (2 ms path, 10% loss:
// recovery p99 12.9 to 24 ms).
func (rs *recvState) dropEpoch() {
	for i := 1; i+1 < len(rs.epochs); i++ {
		lo, hi := max(rs.epochs[i].from, rs.next), rs.epochs[i+1].from
		if lo >= hi || rs.got.NextUnset(lo, hi) == hi {
			rs.epochs = append(rs.epochs[:i], rs.epochs[i+1:]...)
			return
		}
	}
	rs.epochs[0].due = min(rs.epochs[0].due, rs.epochs[1].due)
	copy(rs.epochs[1:], rs.epochs[2:])
	rs.epochs = rs.epochs[:len(rs.epochs)-1]
}

// raise moves highest up to seq (within the window of next), growing got
// to cover [next, seq].
func (rs *recvState) raise(seq uint32) {
	rs.highest = seq
	if n := seq - rs.next + 1; n > uint32(rs.got.Size()) {
		rs.got.Grow(int(n), rs.next)
	}
}

// firstNakAfter is how long a gap waits before its first NAK: NORM's NACK
// backoff (RFC 5740: a receiver's wait scales with the group's round trip,
// and its random part lets one member's repair arrive before another asks)
// over the round trip this receiver measured to the sender. Until that is
// measured, or with nak_delay_rtts=0, it is nak_delay; then a random time
// in [k, 2k) smoothed round trips (k = nak_delay_rtts), at least
// nak_delay_min and at most nak_delay. A fixed 20 ms on a path of a few
// hundred microseconds let a fast sender's 4 MB buffer fill while every gap
// waited (1% loss over loopback: 83-108k msgs/s, 117-142k with 2 ms).
//
// A gap in a stream whose sender's buffer is full (flagPressed on the cast
// that revealed it) waits only nak_delay_min, until it is certain: the
// sender's whole window waits on it, where the backoff spares at most a
// NAK and a unicast repair of a loss other members share (at rate max on a
// 20 ms path every gap waited nak_delay, 20 ms, as the round trip capped
// it; the backoff could suppress nothing there, nak_delay being less than
// the round trip).
func (l *Layer) firstNakAfter(rs *recvState) time.Duration {
	if rs.pressed && l.cfg.NakDelayRTTs > 0 {
		return min(l.cfg.NakDelay, l.cfg.NakDelayMin)
	}
	s := rs.path.SRTT()
	if s == 0 || l.cfg.NakDelayRTTs == 0 {
		return l.cfg.NakDelay
	}
	d := time.Duration(float64(s) * l.cfg.NakDelayRTTs * (1 + l.Ctx.Rand().Float64()))
	return min(l.cfg.NakDelay, max(l.cfg.NakDelayMin, d))
}

// discovered is when the loss of seq was discovered (now if unknown).
func (rs *recvState) discovered(seq uint32, now event.Time) event.Time {
	for i := len(rs.epochs) - 1; i >= 0; i-- {
		if rs.epochs[i].from <= seq {
			return rs.epochs[i].at
		}
	}
	return now
}

// prune drops gap epochs that lie wholly below next.
func (rs *recvState) prune() {
	if rs.next > rs.highest {
		rs.epochs = rs.epochs[:0]
		return
	}
	k := 0
	for k+1 < len(rs.epochs) && rs.epochs[k+1].from <= rs.next {
		k++
	}
	if k > 0 {
		n := copy(rs.epochs, rs.epochs[k:])
		rs.epochs = rs.epochs[:n]
	}
}

// nakTimer NAKs the missing messages that are due (within the window, at
// most askLimit of them in one round) and sets the timer for the next
// that will be. A gap is due firstNakAfter its discovery, then every
// retryAfter. One NAK lists at most max_nak_ranges ranges; a round that
// has more sends more NAKs: at 10% loss most gaps are single messages,
// and a round cut at one NAK's 32 left the rest (and the rest of the
// epoch it cut) waiting a whole retry interval, so a receiver recovered
// at most 32 messages per round trip while its window filled.
func (l *Layer) nakTimer(rs *recvState) {
	rs.timer = false
	if rs.next > rs.highest {
		return
	}
	now := l.Ctx.Now()
	w := uint32(l.cfg.Window)
	limit := min(rs.highest+1, rs.next+w)
	nk := &l.nak
	nk.G, nk.R = uint32(rs.g.id), nk.R[:0]
	nk.T = uint32(min(rs.path.SRTT(), l.cfg.NakSlow) / time.Microsecond)
	nk.C, nk.S = 0, stamp(now)
	if c := l.copies(rs); c > l.cfg.NakCopies {
		nk.C = uint32(c)
	}
	l.nakPressed = rs.pressed
	nextDue := event.Never
	// a retry round with nothing recovered since the last NAK backs off;
	// any recovery resets the pace to the round trip
	got := int(rs.recovered - rs.recoveredAtNak)
	if got > 0 {
		rs.stalls = 0
	}
	ask := l.askLimit(rs, got, now)
	asked, naks := 0, 0
	retry := false
	for i := range rs.epochs {
		e := &rs.epochs[i]
		lo, hi := max(e.from, rs.next), limit
		if i+1 < len(rs.epochs) {
			hi = min(hi, rs.epochs[i+1].from)
		}
		if lo >= hi {
			continue
		}
		due := e.due
		if e.tries > 0 && !e.lost {
			due = e.naked.Add(l.retryAfter(rs))
		}
		if due > now {
			nextDue = min(nextDue, due)
			continue
		}
		retry = retry || e.tries > 0
		added := false
		for seq := lo; seq < hi && asked < ask; {
			if rs.got.Has(seq) {
				seq = rs.got.NextUnset(seq, hi)
				continue
			}
			if len(nk.R) == 2*l.cfg.MaxNakRanges {
				l.sendNak(rs.from) // full: the round goes on in another
				nk.R = nk.R[:0]
				naks++
			}
			first := seq
			for seq < hi && !rs.got.Has(seq) && asked < ask {
				seq++
				asked++
			}
			nk.R = append(nk.R, first, seq-1)
			added = true
		}
		if added {
			e.naked = now
			e.tries++
			e.lost = false
		}
	}
	if len(nk.R) > 0 || naks > 0 {
		if retry && rs.recovered == rs.recoveredAtNak {
			rs.stalls++
		}
		rs.recoveredAtNak = rs.recovered
		rs.asked, rs.askedAt = asked, now
		if len(nk.R) > 0 {
			l.sendNak(rs.from)
		}
		// every epoch NAKed now is due again one retry interval on
		nextDue = min(nextDue, now.Add(l.retryAfter(rs)))
	}
	if nextDue == event.Never {
		// gaps beyond the window only: look again after a retry interval
		nextDue = now.Add(l.cfg.NakRetry)
	}
	rs.timer = true
	rs.tm.ResetAt(nextDue)
}

// lossSpan is how many messages (first copies arrived, or recovered by a
// retransmission) a stream's loss estimate is updated after.
const lossSpan = 256

// noteLoss counts first copies that arrived and messages a retransmission
// recovered on a stream and, every lossSpan of them, moves its loss
// estimate a quarter of the way to what they showed. Losses are counted
// as they are recovered, not as gaps are found: at rate max a sender's
// burst arrives shuffled by the path's jitter, and counting every gap
// when it was found, ahead of the late arrivals that fill it, measured
// about 10% on a path losing 1% (every NAK and repair then went in 2
// copies: 2 retransmissions and 1 duplicate per loss).
func (l *Layer) noteLoss(rs *recvState, rx, lost uint32) {
	rs.rx += rx
	rs.lost += lost
	if n := rs.rx + rs.lost; n >= lossSpan {
		p := uint32(uint64(rs.lost) * 1000 / uint64(n))
		rs.loss = (3*rs.loss + p) / 4
		rs.rx, rs.lost = 0, 0
	}
}

// copies is how many copies of a NAK to the stream's sender, and of the
// retransmissions answering it, to send: nak_copies, at least 2 once the
// stream's loss is at least nak_copies_loss.
func (l *Layer) copies(rs *recvState) int {
	if l.cfg.NakCopiesLoss > 0 && float64(rs.loss) >= 1000*l.cfg.NakCopiesLoss {
		return max(l.cfg.NakCopies, 2)
	}
	return max(l.cfg.NakCopies, 1)
}

// sendNak sends l.nak to a sender, nak_copies times (or l.nak.C times when
// that asks for more), and at least twice for a stream whose sender's
// buffer is full (l.nakPressed, flagPressed): its window waits on our
// gaps, and a lost NAK held it a round trip more (at rate max, 1% loss,
// 20 ms path: one NAK lost in most windows' worth of gaps, 68.7k to 74.6k
// msgs/s with the copy). The copy is a small packet; the sender answers
// one of the two (a repeat within its round trip crossed the answer), so
// the repairs are not doubled.
func (l *Layer) sendNak(to event.NodeID) {
	body := l.wc.Encode(&l.nak)
	msg := l.Ctx.NewMessage()
	msg.SetPayload(body)
	msg.Prepend(1)[0] = tNak
	n := max(l.cfg.NakCopies, int(l.nak.C))
	if l.nakPressed {
		n = max(n, 2)
	}
	for i := 1; i < n; i++ {
		l.c.NaksSent.Inc()
		l.Ctx.Down(&event.Event{Kind: event.Send, Peer: to, Control: true, Msg: msg.Clone()})
	}
	l.c.NaksSent.Inc()
	l.Ctx.Down(&event.Event{Kind: event.Send, Peer: to, Control: true, Msg: msg})
}

// minAsk is the least a NAK may ask for when asks are cut back.
const minAsk = 16

// askLimit adapts how many messages the next NAK round of a stream asks
// for to what the path brings back, additive-increase/multiplicative-
// decrease style: got of the last round's asked came back since. When
// (nearly) all did, the limit doubles up to max_nak_retrans; when not, and
// answers have had a measured round trip to come, it falls to what came
// back (at least minAsk). A NAK for thousands of messages over a narrow
// link otherwise buys a burst of retransmissions its queue drops, round
// after round (specs/spread-wan.scenario at rate max: 250 retransmissions
// per NAK, most dropped). Answers have had a round trip to come once the
// last round is that old, or once rounds have gone on for that long since
// the limit was last at its full value with everything back (askBusy):
// while rounds come more often than the round trip (a newer gap falling
// due every few milliseconds at rate max), the last round alone was never
// that old, and on that link, with the round trip measured right (300 ms
// with its queue), every round asked for max_nak_retrans (4.8
// retransmissions per loss; an estimate stuck at 14 to 46 ms had judged
// nearly every round). The first round trip of asking, and a limit that
// keeps up, are not judged: at 10% loss over UDP, where a gap falls due
// every few messages, a round judged before its answers could come sat
// the limit at minAsk and most due gaps waited a retry interval.
func (l *Layer) askLimit(rs *recvState, got int, now event.Time) int {
	if rs.ask == 0 {
		rs.ask = l.cfg.MaxNakRetrans
	}
	if rs.askBusy == 0 {
		rs.askBusy = now
	}
	if rs.asked > 0 {
		s := event.Time(rs.path.SRTT())
		if got >= rs.asked-rs.asked/8 {
			if rs.ask = min(2*rs.ask, l.cfg.MaxNakRetrans); rs.ask == l.cfg.MaxNakRetrans {
				rs.askBusy = now
			}
		} else if s == 0 || now-rs.askedAt >= s || now-rs.askBusy >= s {
			rs.ask = max(got, min(minAsk, l.cfg.MaxNakRetrans))
		}
	}
	return rs.ask
}

// maxBackoff bounds the retry interval's doubling (2^6: 64 round trips).
const maxBackoff = 6

// retryAfter is the interval before a gap of the stream is NAKed again: the
// retransmission timeout (retryRTO), doubled for every round in a row that
// brought nothing back up to nak_slow or twice the timeout (whichever is
// longer; an outage's backoff must not outlast it by seconds), and at
// least nak_slow once nak_max_tries rounds in a row brought nothing.
func (l *Layer) retryAfter(rs *recvState) time.Duration {
	rto := l.retryRTO(rs.path)
	d := min(rto<<min(rs.stalls, maxBackoff), max(l.cfg.NakSlow, 2*rto))
	if rs.stalls >= l.cfg.NakMaxTries {
		d = max(d, l.cfg.NakSlow)
	}
	return d
}

// retryRTO is the interval between NAK rounds to a sender that bring
// something back: once echoes measured the round trip (p.exact), its
// timeout srtt + 4 rttvar (RFC 6298), at least nak_retry_min (on a
// loopback or a LAN nak_retry was ten rounds of the sender's answer, and
// recovery at 10% loss held the sender's window that long); before,
// nak_retry, or a digest's answer's timeout if longer: that estimate may
// be far too short (another member's answer), and a retry before the
// answer can come only doubles the sender's repairs.
func (l *Layer) retryRTO(p *path) time.Duration {
	if p == nil || p.SRTT() == 0 {
		return l.cfg.NakRetry
	}
	if !p.exact {
		return max(l.cfg.NakRetry, p.RTO())
	}
	return max(l.cfg.NakRetryMin, p.RTO())
}

// stamp is a NAK's time stamp (nakMsg S): now in microseconds modulo
// 2^32, never 0.
func stamp(now event.Time) uint32 {
	return max(uint32(int64(now)/int64(time.Microsecond)), 1)
}

// echoRTT takes a round-trip sample from a retransmission that echoes the
// stamp of the NAK it answers (flagEcho): the time since that NAK, exact
// however many NAKs asked for the message, as TCP's timestamps make
// Karn's rule needless (RFC 7323 section 4), one per NAK (its first
// answer: later ones queued behind it). These are the estimate's only
// samples. Before, the first answer to any retry seeded it with the time
// since the latest NAK, and Karn's rule kept every later answer to a gap
// NAKed twice out: the estimate stuck below the path (44 ms on a 60 ms
// path; 14 ms on specs/spread-e2e.stack's 160 ms one; 71 µs on a 20 ms
// path, where gaps were NAKed every millisecond). The first echo replaces
// an estimate not made of echoes (a digest's answer, askRTT), and one
// showing the round trip below a quarter of the estimate restarts it (RFC
// 6298 section 5 lets an estimate likely bogus be cleared): one measured
// under load before a partition (150 ms over a 3 ms path, soak seed 7040)
// otherwise took dozens of samples to wear off while NAK rounds came 0.5
// to 1 s apart, 486 owed deliveries still missing when the 10 s drain
// ended. Not when our retry was overdue: we were not running (frozen, far
// behind), and the answer waited in our own receive buffer (taken as a
// sample, a 1.5 s freeze spaced every later NAK round of the stream 1.5
// to 2.6 s apart). An answer multicast to every member that asked echoes
// nothing and is no sample: another member's NAK may have made it, before
// ours reached the sender.
func (l *Layer) echoRTT(rs *recvState, echo uint32, now event.Time) {
	if rs.timer && rs.tm.When() < now {
		return
	}
	at := stampedAt(echo, now)
	if at <= rs.sampled || at > rs.askedAt {
		return // sampled, or not a NAK of ours (forged, or from a past run)
	}
	rs.sampled = at + event.Time(time.Microsecond) - 1
	p, r := rs.path, time.Duration(now-at)
	if !p.exact || r < p.SRTT()/4 {
		p.Estimator, p.exact = rtt.Estimator{}, true
	}
	p.Sample(r)
	if l.Ctx.Logging() {
		l.Ctx.Logf("rtt to %v: echo %v, srtt %v, rto %v", rs.from, r, p.SRTT(), l.retryRTO(p))
	}
}

// unstall ends a stream's backoff when a retransmission from its sender
// arrives: the sender hears NAKs again (ours, or another member's), so gaps
// still open are asked for one retry interval on, not after the backed-off
// interval set while it could not (a burst of loss at a quiet sender left
// its receivers silent up to nak_slow after it heard again).
func (l *Layer) unstall(rs *recvState, now event.Time) {
	if rs.stalls == 0 {
		return
	}
	rs.stalls = 0
	if due := now.Add(l.retryAfter(rs)); rs.timer && rs.tm.When() > due {
		rs.tm.ResetAt(due)
	}
}

// stampedAt is when a NAK whose stamp an answer arriving now echoes was
// sent: stamps are times in whole microseconds, so that time rounded down.
func stampedAt(echo uint32, now event.Time) event.Time {
	us := int64(now) / int64(time.Microsecond)
	return event.Time((us - int64(uint32(us)-echo)) * int64(time.Microsecond))
}

// answered takes the echo of the NAK of ours an answer arriving now
// answers, made at: the sender answers NAKs in the order they reach it,
// over the one path, so a gap NAKed well before that NAK (by the
// reordering the path shows: nak_delay_min, or rttvar if more) and still
// missing had its answer lost, or its NAK: it is asked for again at once,
// not a retransmission timeout after its NAK (RACK's rule, RFC 8985, on
// NAK stamps). At rate max NAK rounds go out every millisecond or two, so
// a lost repair is found a few milliseconds after the answer should have
// come. Each epoch is re-asked at most once per NAK answered after it,
// and an answer's evidence counts once (a NAK's first answer).
func (l *Layer) answered(rs *recvState, echo uint32, now event.Time) {
	at := stampedAt(echo, now)
	if at <= rs.answered || at > rs.askedAt {
		return // taken, or not a NAK of ours
	}
	rs.answered = at
	slack := l.cfg.NakDelayMin
	if s := rs.path.SRTT(); s > 0 {
		slack = max(slack, (rs.path.RTO()-s)/4)
	}
	limit := min(rs.highest+1, rs.next+uint32(l.cfg.Window))
	due := false
	for i := range rs.epochs {
		e := &rs.epochs[i]
		if e.tries == 0 || e.lost || e.naked.Add(slack) > at {
			continue
		}
		lo, hi := max(e.from, rs.next), limit
		if i+1 < len(rs.epochs) {
			hi = min(hi, rs.epochs[i+1].from)
		}
		if lo < hi && rs.got.NextUnset(lo, hi) < hi {
			e.lost, due = true, true
		}
	}
	if due && (!rs.timer || rs.tm.When() > now) {
		rs.timer = true
		rs.tm.ResetAt(now)
	}
}
