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
	if g == nil || g.view == nil || mb == nil || mb.rs == nil {
		l.c.hintsUnmapped.Inc()
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
