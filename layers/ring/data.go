package ring

import (
	"github.com/layercast/layercast/event"
)

// dataUp takes an ordered message from the network.
func (l *Layer) dataUp(ev *event.Event) {
	b, _ := ev.Msg.Peek(dataHeaderSize)
	h, err := parseData(b)
	if err != nil {
		l.drop(ev)
		return
	}
	r := l.cur
	switch {
	case r != nil && h.ring == r.id && r.inRing(ev.Peer) && r.inRing(h.origin):
		if !l.store(r, ev, h) {
			return
		}
		l.deliver()
	case l.old != nil && h.ring == l.old.id && h.flags&flagRecovery != 0 && l.old.inRing(h.origin) && r != nil && r.inRing(ev.Peer):
		o := l.old
		if !l.store(o, ev, h) {
			return
		}
		if !l.cfg.Safe {
			l.deliverUpTo(&o.win, o.win.aru)
		}
		l.setBuf()
	default:
		l.c.Foreign.Inc()
		ev.Msg.Release()
	}
}

// store keeps a received packet in r's window; false (the message
// released) if it is a duplicate or beyond the window.
func (l *Layer) store(r *ringState, ev *event.Event, h dataHeader) bool {
	w := &r.win
	switch {
	case w.has(h.seq):
		l.c.DupData.Inc()
	case !w.fits(h.seq):
		l.c.OutOfWindow.Inc()
	default:
		if r == l.cur {
			l.noteMissing(r, h.seq)
		}
		m := ev.Msg.Compact()
		retrans := h.flags&(flagRetrans|flagRecovery) != 0
		if t, ok := r.found[h.seq]; ok {
			m.Recovery.Discovered = t
			delete(r.found, h.seq)
		}
		if w.put(h.seq, entry{m: m, g: ev.Group, lts: h.lts, origin: h.origin, retrans: retrans, site: h.flags&flagSite != 0}) {
			if retrans {
				l.c.Recovered.Inc()
			}
			return true
		}
		ev.Msg = m
		l.c.DupData.Inc()
	}
	ev.Msg.Release()
	return false
}

// noteMissing records when the packets missing below upTo were first
// noticed missing (at most window of them at once).
func (l *Layer) noteMissing(r *ringState, upTo uint32) {
	w := &r.win
	for s := max(w.aru, r.noted) + 1; s < upTo && len(r.found) < l.cfg.Window; s++ {
		if !w.has(s) {
			if r.found == nil {
				r.found = map[uint32]event.Time{}
			}
			r.found[s] = l.Ctx.Now()
		}
		r.noted = s
	}
}
