package reliable

import (
	"slices"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/wirecodec"
)

// lossHint acts on a layer below reporting a missing message
// (event.LossHint: lec read a repair naming it and could not rebuild it).
// The hint numbers messages in the lower layer's sequence; its anchor, a
// message of the same stream as it passed it up, carries our header, so
// our number minus its number maps one onto the other for the stream (both
// number the same casts, in order: we pass retransmissions down marked,
// and they take no number below). Everything up to the hinted message is
// then announced: discovered now and NAKed after nak_delay, without
// waiting for the sender's next cast or digest (Ricochet section 4.2.7).
func (l *Layer) lossHint(ev *event.Event) {
	anchor := ev.Msg
	defer anchor.Release()
	r := ev.Lost
	if r == nil || !r.Bounded || r.End == r.First {
		return
	}
	g, mb := l.lookup(ev.Group, ev.Peer)
	if g == nil || g.view == nil || mb == nil {
		l.c.HintsUnmapped.Inc()
		return
	}
	if mb.rs == nil {
		// nothing heard from it in the group yet: its first casts were
		// lost, and only its digest would place its stream for us
		l.c.HintsUnmapped.Inc()
		l.askLater(g.id, mb.id)
		return
	}
	rs := mb.rs
	if anchor != nil {
		if b, err := anchor.Peek(dataHeaderSize); err == nil {
			if h, err := parseData(b); err == nil && h.view >= mb.since && h.view <= g.tag {
				rs.lecOff, rs.lecKnown = h.seq-(r.First-1), true
			}
		}
	}
	if !rs.lecKnown {
		l.c.HintsUnmapped.Inc()
		return
	}
	last := r.End - 1 + rs.lecOff
	if last < rs.next || last >= wirecodec.MaxSeq {
		return // delivered already, or not a number of ours
	}
	if last > rs.highest {
		l.c.LossHinted.Add(int64(min(last-rs.highest, uint32(l.cfg.Window))))
	}
	l.announce(rs, last)
}

// found hands the layer below that hinted this stream's losses a
// retransmission we got (event.LossHint going down, in its numbering, with
// our header as the original carried it), so it can decode other repairs
// with it and never rebuild it again. m still has our header, of hsize
// bytes (an echo included): the original had neither the echo nor the
// retransmission's flags, and lec's repairs were made of its bytes.
func (l *Layer) found(rs *recvState, m *event.Message, seq uint32, hsize int) {
	if !rs.lecKnown {
		return
	}
	c := l.Ctx.NewMessage()
	b := m.Bytes()
	c.SetPayload(b[hsize:])
	h := c.Prepend(dataHeaderSize)
	copy(h, b[:dataHeaderSize])
	h[1] &^= flagRetrans | flagUnasked | flagEcho
	x := seq - rs.lecOff
	l.Ctx.Down(&event.Event{Kind: event.LossHint, Group: rs.g.id, Peer: rs.from, Msg: c,
		Lost: &event.LostRange{First: x, End: x + 1, Bounded: true}})
}

// An unplaced ask is a sender a hint named before we heard anything from it
// in the group (its first casts lost): we cannot name what we lack in its
// numbers, and the sender's digest that would place its stream may be lost
// too (at 20% loss, runs of them: first casts recovered only after 700 ms).
// nak_delay after the hint, if the stream is still unplaced, we ask the
// sender for everything it still holds: the answers carry the headers that
// place the stream (those not owed to us are dropped as before_join). As
// any NAK (and as SRM's requests), the ask is repeated until it is
// answered: every retry interval (the sender's round-trip timeout, or
// nak_retry before one is measured), doubling for each ask in a row, up to
// nak_slow, at most nak_max_tries times (each ask can cost the sender
// max_nak_retrans retransmissions; after that its digest places the
// stream). Before, one lost ask (or its answer) left the first cast to the
// sender's next cast or digest (Figure 8's set-up at 20% loss: 340 ms).
type unplacedAsk struct {
	g     event.GroupID
	n     event.NodeID
	due   event.Time
	tries int
}

// askKey names an unplaced stream: a (group, sender) pair.
type askKey struct {
	g event.GroupID
	n event.NodeID
}

// askLater queues an ask for (g, n) unless one is queued, noting when the
// loss was first hinted: when the stream is placed, the gap that places it
// was discovered then (hintedAt), not at placement.
func (l *Layer) askLater(g event.GroupID, n event.NodeID) {
	k := askKey{g: g, n: n}
	if _, ok := l.askQueued[k]; ok {
		return
	}
	if l.askQueued == nil {
		l.askQueued = map[askKey]event.Time{}
	}
	now := l.Ctx.Now()
	l.askQueued[k] = now
	l.queueAsk(unplacedAsk{g: g, n: n, due: now.Add(l.cfg.NakDelay)})
}

// queueAsk inserts an ask in due order and keeps the timer on the first.
func (l *Layer) queueAsk(a unplacedAsk) {
	i := len(l.asks)
	for i > 0 && l.asks[i-1].due > a.due {
		i--
	}
	l.asks = slices.Insert(l.asks, i, a)
	if !l.askTm.Pending() || l.askTm.When() > l.asks[0].due {
		l.askTm.ResetAt(l.asks[0].due)
	}
}

// placedAfterHint is called when a stream is placed: it returns when a hint
// first named it unplaced (0: none did) and ends the asks for it.
func (l *Layer) placedAfterHint(g event.GroupID, n event.NodeID) event.Time {
	k := askKey{g: g, n: n}
	at, ok := l.askQueued[k]
	if !ok {
		return 0
	}
	delete(l.askQueued, k)
	return at
}

// askTimer sends the asks that are due: a NAK for everything from 1 on,
// which the sender answers with what it holds (at most max_nak_retrans),
// and queues each again one retry interval on while its stream is
// unplaced.
func (l *Layer) askTimer() {
	now := l.Ctx.Now()
	i := 0
	var again []unplacedAsk
	for ; i < len(l.asks) && l.asks[i].due <= now; i++ {
		a := l.asks[i]
		k := askKey{g: a.g, n: a.n}
		if _, ok := l.askQueued[k]; !ok {
			continue // placed meanwhile
		}
		if _, mb := l.lookup(a.g, a.n); mb == nil || mb.rs != nil {
			delete(l.askQueued, k) // gone, or placed meanwhile
			continue
		}
		nk := &l.nak
		p := l.paths[a.n]
		nk.G, nk.R, nk.T, nk.C, nk.S = uint32(a.g), append(nk.R[:0], 1, wirecodec.MaxSeq), 0, 0, 0
		rto := l.retryRTO(p)
		if p != nil && p.SRTT() > 0 {
			nk.T = uint32(min(p.SRTT(), l.cfg.NakSlow) / time.Microsecond)
		}
		l.c.UnplacedAsks.Inc()
		l.sendNak(a.n)
		a.due = now.Add(min(rto<<min(a.tries, maxBackoff), max(l.cfg.NakSlow, 2*rto)))
		a.tries++
		if a.tries >= l.cfg.NakMaxTries {
			delete(l.askQueued, k) // the sender's digest will place it
			continue
		}
		again = append(again, a)
	}
	n := copy(l.asks, l.asks[i:])
	l.asks = l.asks[:n]
	for _, a := range again {
		l.queueAsk(a)
	}
	if len(l.asks) > 0 && (!l.askTm.Pending() || l.askTm.When() > l.asks[0].due) {
		l.askTm.ResetAt(l.asks[0].due)
	}
}
