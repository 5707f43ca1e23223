package ring

import (
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/seqwin"
)

// entry is one packet a member holds: the message with its ring header in
// front, and what delivery needs from the header. An entry with lost set
// and no message marks a packet of an old ring that no member of the new
// ring has (skipped by everyone).
type entry struct {
	m      *event.Message
	g      event.GroupID
	lts    uint32
	origin event.NodeID
	// retrans says the packet came by retransmission (a loss recovered).
	retrans bool
	// site says it was cast on the site's channel: every member hands it up.
	site bool
	lost bool
}

// window is a member's packets of one ring, by link_seq: everything from
// base (the lowest not yet freed) to highest. Packets are freed once the
// ring's aru says every member has them and this member delivered them.
type window struct {
	slots seqwin.Slots[entry]
	// base is the link_seq at offset 0: every packet below it is freed.
	base uint32
	// aru: every packet up to aru is here (or marked lost).
	aru uint32
	// aruLTS is the time stamp of the packet at aru.
	aruLTS uint32
	// delivered: every packet up to it was handed up (or skipped).
	delivered uint32
	// highest is the highest link_seq known to exist.
	highest uint32
	// bytes held.
	bytes int64
}

func newWindow(max int) window {
	return window{slots: seqwin.Slots[entry]{Max: max}, base: 1}
}

// get returns the entry of seq (the zero entry if absent or freed).
func (w *window) get(seq uint32) entry {
	if seq < w.base {
		return entry{}
	}
	return w.slots.Get(int(seq - w.base))
}

// has reports whether seq is held (or skipped as lost).
func (w *window) has(seq uint32) bool {
	if seq < w.base {
		return true // freed: every member had it
	}
	e := w.slots.Get(int(seq - w.base))
	return e.m != nil || e.lost
}

// put stores e at seq; false if it is a duplicate, freed, or beyond the
// window (the caller releases the message then).
func (w *window) put(seq uint32, e entry) bool {
	if seq < w.base || !w.slots.Put(int(seq-w.base), e) {
		return false
	}
	if e.m != nil {
		w.bytes += int64(e.m.Len())
	}
	w.highest = max(w.highest, seq)
	w.advance()
	return true
}

// fits reports whether seq is within the window.
func (w *window) fits(seq uint32) bool {
	return seq >= w.base && int(seq-w.base) < w.slots.Max
}

// advance moves aru over every packet now held.
func (w *window) advance() {
	for {
		e := w.get(w.aru + 1)
		if e.m == nil && !e.lost {
			return
		}
		w.aru++
		if !e.lost {
			w.aruLTS = e.lts
		}
	}
}

// free releases every packet up to upTo that was delivered; it returns the
// bytes freed.
func (w *window) free(upTo uint32) int64 {
	var freed int64
	for w.base <= upTo && w.base <= w.delivered {
		e := w.slots.Advance()
		if e.m != nil {
			freed += int64(e.m.Len())
			e.m.Release()
		}
		w.base++
	}
	w.bytes -= freed
	return freed
}

// clear releases everything held.
func (w *window) clear() {
	w.slots.Clear(func(e entry) {
		if e.m != nil {
			e.m.Release()
		}
	})
	w.bytes = 0
}
