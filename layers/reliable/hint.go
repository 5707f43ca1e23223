package reliable

import "github.com/layercast/layercast/event"

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
		l.c.hintsUnmapped.Inc()
		return
	}
	if mb.rs == nil {
		// nothing heard from it in the group yet: its first casts were
		// lost, and only its digest would place its stream for us
		l.c.hintsUnmapped.Inc()
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
		l.c.hintsUnmapped.Inc()
		return
	}
	last := r.End - 1 + rs.lecOff
	if last < rs.next || last >= maxSeq {
		return // delivered already, or not a number of ours
	}
	if last > rs.highest {
		l.c.lossHinted.Add(int64(min(last-rs.highest, uint32(l.cfg.Window))))
	}
	l.announce(rs, last)
}

// found hands the layer below that hinted this stream's losses a
// retransmission we got (event.LossHint going down, in its numbering, with
// our header as the original carried it), so it can decode other repairs
// with it and never rebuild it again.
func (l *Layer) found(rs *recvState, m *event.Message, seq uint32) {
	if !rs.lecKnown {
		return
	}
	c := l.Ctx.NewMessage()
	c.SetPayload(m.Bytes())
	c.Bytes()[1] &^= flagRetrans
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
// place the stream (those not owed to us are dropped as before_join).
type unplacedAsk struct {
	g   event.GroupID
	n   event.NodeID
	due event.Time
}

// askLater queues an ask for (g, n) unless one is queued.
func (l *Layer) askLater(g event.GroupID, n event.NodeID) {
	k := unplacedAsk{g: g, n: n}
	if _, ok := l.askQueued[k]; ok {
		return
	}
	if l.askQueued == nil {
		l.askQueued = map[unplacedAsk]struct{}{}
	}
	l.askQueued[k] = struct{}{}
	k.due = l.Ctx.Now().Add(l.cfg.NakDelay)
	l.asks = append(l.asks, k)
	if !l.askTm.Pending() {
		l.askTm.ResetAt(k.due)
	}
}

// askTimer sends the asks that are due: a NAK for everything from 1 on,
// which the sender answers with what it holds (at most max_nak_retrans).
func (l *Layer) askTimer() {
	now := l.Ctx.Now()
	i := 0
	for ; i < len(l.asks) && l.asks[i].due <= now; i++ {
		a := l.asks[i]
		delete(l.askQueued, unplacedAsk{g: a.g, n: a.n})
		if _, mb := l.lookup(a.g, a.n); mb == nil || mb.rs != nil {
			continue // gone, or placed meanwhile
		}
		nk := &l.nak
		nk.G, nk.R, nk.T = uint32(a.g), append(nk.R[:0], 1, maxSeq), 0
		l.c.unplacedAsks.Inc()
		l.sendNak(a.n)
	}
	n := copy(l.asks, l.asks[i:])
	l.asks = l.asks[:n]
	if n > 0 {
		l.askTm.ResetAt(l.asks[0].due)
	}
}
