package tokenring

import (
	"encoding/binary"
	"slices"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/ring"
	"github.com/layercast/layercast/stack"
)

// outRegion is the sender's side of one region its groups span: the
// region's sequence numbers (across every group) and the packets not yet
// ACKed.
type outRegion struct {
	id      event.RegionID
	ch      event.ChannelID
	view    uint64
	members []event.NodeID
	// vbase is the first sequence number sent in the current stretch of
	// views (reset when a view brings new members).
	vbase uint32
	next  uint32 // next sequence number to send
	// gvbase is the group sequence number (Layer.gnext) of the first
	// packet of each group sent here since the view last brought members
	// (a group absent from it: the next one sent).
	gvbase map[event.GroupID]uint32
	// sview is the region view the current stretch (from vbase) began in;
	// pview, pvbase and pgvbase are the previous stretch's (pview 0:
	// none). Packets carry them: a newcomer whose first packet came after
	// another view brought more members starts at the previous bases.
	sview, pview, pvbase uint32
	pgvbase              map[event.GroupID]uint32
	acked                uint32 // every packet up to it is ACKed
	// buf holds acked+1 .. next-1 in order.
	buf        ring.Ring[sentPkt]
	probe      *stack.Timer
	probeAcked uint32
	// rate is the fair share from the last ACK (packets/s; 0: none yet).
	rate float64
	// fresh: the numbering began anew at vbase (the region came back to
	// the sender's neighbourhood) and no view has brought members since;
	// packets say so (flagFresh).
	fresh bool
	// hist holds the region's stretches, oldest first, the current one
	// last (its g is gvbase): what floorUp answers a newcomer whose first
	// packet came two or more stretches after the one it joined in. At
	// most maxStretches; the oldest go first.
	hist []stretchRec
}

// stretchRec is one stretch of a sender's numbering in a region: the
// region view it began in, its first sequence number, and each group's
// first group sequence number in it.
type stretchRec struct {
	view, vbase uint32
	g           map[event.GroupID]uint32
}

// maxStretches bounds the stretches a sender remembers per region (so its
// state is at most maxStretches maps of the region's groups): a newcomer
// whose first packet comes more stretches after its own than that is told
// the oldest it remembers.
const maxStretches = 16

// maxResume bounds the regions whose next sequence number a sender
// remembers after they leave its neighbourhood.
const maxResume = 4096

type sentPkt struct {
	msg *event.Message
	at  event.Time
}

// castDown queues an application cast for its regions.
func (l *Layer) castDown(ev *event.Event) {
	rs := l.spans[ev.Group]
	if len(rs) == 0 && !l.readmitting(ev.Group) {
		// (A node gms removed and will readmit queues the cast: pull
		// sends it once its regions come back. Dropped here, casts the
		// application made as a member while its removal was under way
		// were lost: qsm-gms soak seed 436.)
		l.c.NoRegion.Inc()
		ev.Msg.Release()
		return
	}
	l.sendQ.Push(queued{msg: ev.Msg, g: ev.Group, n: len(rs)})
	l.setPending(len(rs))
	if (l.pending >= l.cfg.HiWmark || l.sendQ.Len() >= l.cfg.Queue) && !l.held[ev.Group] {
		l.held[ev.Group] = true
		l.c.HeldOff.Inc()
		l.Ctx.Up(&event.Event{Kind: event.HoldOff, Group: ev.Group})
	}
	l.feed.Ready()
}

// pull is the data feed: one regional packet per call, while credit lasts.
func (l *Layer) pull() bool {
	for l.sendQ.Len() > 0 {
		q := l.sendQ.Front()
		rs := l.spans[q.g]
		if len(rs) == 0 && q.sent == 0 && l.readmitting(q.g) {
			// Install readies the feed when its regions come back. A cast
			// already begun is dropped: its regions come back as new ones
			// and it would reach some members twice.
			return false
		}
		for q.next < len(rs) && slices.Contains(l.frontSent, rs[q.next]) {
			q.next++ // sent there before the neighbourhood changed
		}
		if q.next >= len(rs) {
			if q.sent == 0 {
				// The group spans no region any more (the application left
				// it, or its regions went with the node's membership): the
				// cast goes nowhere, and is counted.
				l.c.DroppedUnsent.Inc()
			}
			l.finishQueued()
			continue
		}
		if l.unacked >= l.cfg.HiWmark {
			return false // the next ACK readies the feed
		}
		if !l.rc.take() {
			return false // the rate controller readies the feed when credit returns
		}
		if q.gseq == 0 {
			q.gseq = max(1, l.gnext[q.g])
			l.gnext[q.g] = q.gseq + 1
			q.gview = uint32(l.viewOf(q.g))
		}
		o := rs[q.next]
		q.next++
		q.sent++
		l.frontSent = append(l.frontSent, o)
		// A cast numbered in an earlier view of its group does not set
		// the group's base: a member the current view brought is not owed
		// it, and fifo there waited for it (qsm-gms soak seed 76).
		l.sendRegional(o, q.g, q.gseq, q.gview, uint64(q.gview) >= l.viewOf(q.g), q.msg)
		if q.next >= len(rs) {
			l.finishQueued()
		}
		return l.sendQ.Len() > 0
	}
	return false
}

// readmitting reports whether the node is out of group g though its
// application has not left it: gms removed it (frozen, cut off) and will
// readmit it, and the casts it queued meanwhile go out then. Dropping them
// lost casts the application made as a member (qsm-gms soak seed 3).
func (l *Layer) readmitting(g event.GroupID) bool {
	if l.nb == nil || l.left[g] {
		return false
	}
	_, member := slices.BinarySearch(l.nb.Groups, g)
	return !member
}

// finishQueued drops the front cast, all its regional packets sent (or its
// regions gone).
func (l *Layer) finishQueued() {
	q := l.sendQ.Pop()
	clear(l.frontSent)
	l.frontSent = l.frontSent[:0]
	q.msg.Release()
	l.setPending(q.sent - q.n)
}

// sendRegional numbers a copy of msg (cast gseq of group g, numbered in
// view gview of g) for region o (setBase: the cast may begin the group's
// stretch there, gvbase), keeps it until
// ACKed and multicasts it on the region's channel.
func (l *Layer) sendRegional(o *outRegion, g event.GroupID, gseq, gview uint32, setBase bool, msg *event.Message) {
	seq := o.next
	o.next++
	gvbase := o.gvbase[g]
	if gvbase == 0 {
		gvbase = gseq
		if setBase {
			o.gvbase[g] = gseq
		}
	}
	var pvbase, pgvbase uint32
	if o.pview != 0 {
		pvbase, pgvbase = o.pvbase, o.pgvbase[g]
		if pgvbase == 0 || pgvbase > gvbase {
			pgvbase = gvbase // none of g in the previous stretch
		}
	}
	m := msg.Clone()
	var flags byte
	if o.fresh {
		flags = flagFresh
	}
	putData(m.Prepend(dataHeaderSize), dataHeader{flags: flags, region: uint32(o.id), sender: uint32(l.self), seq: seq,
		view: uint32(o.view), vbase: o.vbase, group: uint32(g), gseq: gseq, gvbase: gvbase, gview: gview,
		pview: o.pview, pvbase: pvbase, pgvbase: pgvbase})
	now := l.Ctx.Now()
	o.buf.Push(sentPkt{msg: m, at: now})
	l.unacked++
	l.c.Sent.Inc()
	l.multicast(o, m, false)
	if r := l.own; r != nil && r.id == o.id {
		r.recordOwn(l, seq, m)
	}
	if !o.probe.Pending() {
		o.probe.Reset(l.probePeriod())
	}
}

func (l *Layer) probePeriod() time.Duration { return l.cfg.Interval * time.Duration(l.cfg.ProbeRounds) }

// multicast sends a copy of the buffered packet m on o's channel.
func (l *Layer) multicast(o *outRegion, m *event.Message, again bool) {
	c := m.Clone()
	b := c.Bytes()
	if again {
		b[1] |= flagAgain
	}
	g := event.GroupID(binary.BigEndian.Uint32(b[22:]))
	l.Ctx.Down(&event.Event{Kind: event.Cast, Group: g, Channel: o.ch, Msg: c})
}

// ackUp takes the region leader's ACK: free what it covers, and take the
// fair rate.
func (l *Layer) ackUp(ev *event.Event) {
	a, err := parseAck(ev.Msg.Bytes())
	if err != nil {
		l.drop(ev)
		return
	}
	ev.Msg.Release()
	o := l.out[event.RegionID(a.Region)]
	if o == nil || !slices.Contains(o.members, ev.Peer) {
		l.c.Foreign.Inc()
		return
	}
	l.c.AcksRecv.Inc()
	if a.Rate > 0 {
		o.rate = float64(a.Rate)
		l.rc.onAck(l)
	}
	if a.Stable >= o.next || a.Stable <= o.acked {
		return
	}
	if a.View < uint32(o.view) {
		// Computed over an older view of the region: a member the
		// sender's view brought may not have the packets yet (a leader
		// left alone in its old view ACKed what a readmitted member
		// lacked, and the sender freed it: qsm-gms soak seed 34).
		l.c.AcksStale.Inc()
		return
	}
	now := l.Ctx.Now()
	round := int64(l.cfg.Interval)
	for o.acked < a.Stable {
		p := o.buf.Pop()
		o.acked++
		d := int64(now - p.at)
		l.c.AckNs.Add(d)
		l.c.AckRoundsMilli.Add(d * 1000 / round)
		l.c.Acked.Inc()
		p.msg.Release()
		l.unacked--
		l.setPending(-1)
	}
	if l.sendQ.Len() > 0 {
		l.feed.Ready()
	}
}

// nakUp retransmits, on the region's channel, what a partition lost as a
// whole (at most max_retrans packets per NAK).
func (l *Layer) nakUp(ev *event.Event) {
	m, err := l.decodeRanges(ev)
	if err != nil || m.S != uint32(l.self) {
		l.c.Malformed.Inc()
		return
	}
	o := l.out[event.RegionID(m.R)]
	if o == nil || !slices.Contains(o.members, ev.Peer) {
		l.c.Foreign.Inc()
		return
	}
	l.c.NaksRecv.Inc()
	l.retransmit(o, &m)
}

// decodeRanges reads a range list (a collective NAK or a pull) after its
// type byte and checks it; the packet is released either way.
func (l *Layer) decodeRanges(ev *event.Event) (rangeMsg, error) {
	var m rangeMsg
	err := l.wc.Decode(ev.Msg.Bytes()[1:], &m)
	ev.Msg.Release()
	if err == nil {
		err = m.check(l.cfg.MaxRanges)
	}
	return m, err
}

// retransmit multicasts again what a collective NAK names (at most
// max_retrans packets).
func (l *Layer) retransmit(o *outRegion, m *rangeMsg) {
	n := 0
	eachIn(m.G, m.Mod, m.Part, o.next-1, func(x uint32) bool {
		if x <= o.acked {
			return true
		}
		m := o.buf.At(int(x - o.acked - 1)).msg
		l.multicast(o, m, true)
		l.c.Retransmissions.Inc()
		if r := l.own; r != nil && r.id == o.id {
			r.cacheOwn(l, x, m) // the multicast does not loop back
		}
		n++
		return n < l.cfg.MaxRetrans
	})
}

// probeFire re-sends the last packet when ACKs have not moved for
// probe_rounds intervals: receivers that lost a whole tail learn that it
// exists (the cutoff only grows with what some node received).
func (l *Layer) probeFire(o *outRegion) {
	if o.buf.Len() == 0 {
		return
	}
	if o.acked == o.probeAcked {
		l.multicast(o, o.buf.At(o.buf.Len()-1).msg, true)
		l.c.Probes.Inc()
	}
	o.probeAcked = o.acked
	o.probe.Reset(l.probePeriod())
}

// handOver sends the packets region o (gone from the node's
// neighbourhood) holds unACKed to the regions its members are in now:
// they moved (their groups changed) before the sender learned it, and the
// old region's channel no longer reaches them. The packets keep their
// group sequence numbers, so a member that had one already (fifo orders by
// them) drops the copy.
func (l *Layer) handOver(o *outRegion) {
	for i := 0; i < o.buf.Len(); i++ {
		m := o.buf.At(i).msg
		h, err := parseData(m.Bytes())
		if err != nil {
			continue // our own header: cannot happen
		}
		g := event.GroupID(h.group)
		for _, b := range l.spans[g] {
			if b == o || !slices.ContainsFunc(o.members, b.has) {
				continue
			}
			c := m.Clone()
			_, _ = c.Consume(dataHeaderSize)
			l.sendRegional(b, g, h.gseq, h.gview, true, c)
			c.Release()
			l.setPending(1) // the new copy waits for its ACK
		}
	}
}

// has reports whether n is a member of the sender's view of the region.
func (o *outRegion) has(n event.NodeID) bool {
	_, ok := slices.BinarySearch(o.members, n)
	return ok
}

// release frees everything the region holds; the next sequence number is
// remembered, so that the region, if it comes back, is numbered on from it.
func (o *outRegion) release(l *Layer) {
	if len(l.resume) >= maxResume {
		clear(l.resume)
	}
	l.resume[o.id] = o.next
	o.probe.Stop()
	n := o.buf.Len()
	for o.buf.Len() > 0 {
		p := o.buf.Pop()
		p.msg.Release()
	}
	l.unacked -= n
	l.setPending(-n)
}
