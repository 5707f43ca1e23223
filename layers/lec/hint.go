package lec

import "github.com/layercast/layercast/event"

// maxAnchorGap is how far below a lost packet hint looks for a held packet
// of the same stream to anchor the NAK layer's numbering on.
const maxAnchorGap = 64

// hint tells the layer above that k is missing (event.LossHint), as soon as
// a repair shows it and cannot rebuild it: Ricochet's NAK layer counts from
// LEC's discovery (section 4.2.7), which for the last packets a sender sends
// to a group comes long before its own gap detection. The anchor is the
// closest earlier packet of k's stream that lec holds, as it was passed up,
// so the layer above can read its own sequence number in it; everything
// between the anchor and k is missing here too.
func (l *Layer) hint(k id) {
	lr := &event.LostRange{First: k.seq, End: k.seq + 1, Bounded: true}
	var anchor *event.Message
	if st := l.streams[streamKey{k.group, k.sender}]; st != nil && st.head != nil && int32(k.seq-st.top) > 0 {
		anchor = l.Ctx.NewMessage()
		anchor.SetPayload(st.head)
		lr.First = st.top + 1
	}
	for d := uint32(1); anchor == nil && d <= maxAnchorGap && d < k.seq; d++ {
		if h := l.held[id{k.group, k.sender, k.seq - d}]; h != nil {
			anchor = l.Ctx.NewMessage()
			anchor.SetPayload(h.data)
			lr.First = k.seq - d + 1
		}
	}
	l.c.LossHints.Inc()
	l.Ctx.Up(&event.Event{Kind: event.LossHint, Group: k.group, Peer: k.sender, Lost: lr, Msg: anchor})
}

// anchorBytes is how much of a stream's newest packet is kept as its
// anchor: the headers of the layers above (reliable's is 18 bytes).
const anchorBytes = 32

// keep holds a packet of another sender that is now present (received,
// rebuilt, or found above) and makes it its stream's anchor if newest.
func (l *Layer) keep(st *stream, k id, msg *event.Message, data []byte) {
	l.hold(k, msg, data)
	if st.head == nil || int32(k.seq-st.top) > 0 {
		st.top = k.seq
		st.head = append(st.head[:0], data[:min(len(data), anchorBytes)]...)
	}
}

// onFound takes a packet the layer above got by other means (the NAK
// layer's retransmission), named in lec's numbering (event.LossHint going
// down): it is kept for XORing and marked present, so the repairs waiting
// for it decode other packets and no repair recovers it a second time.
func (l *Layer) onFound(ev *event.Event) {
	m := ev.Msg
	if m == nil || ev.Lost == nil || !ev.Lost.Bounded {
		m.Release()
		return
	}
	l.expire(l.Ctx.Now())
	k := id{group: ev.Group, sender: ev.Peer, seq: ev.Lost.First}
	st := l.track(streamKey{k.group, k.sender})
	if st == nil || st.has(k.seq) {
		m.Release()
		return
	}
	st.mark(k.seq)
	delete(l.lostAt, k)
	l.c.Found.Inc()
	l.keep(st, k, m, m.Bytes())
	m.Release()
	l.present(k)
}
