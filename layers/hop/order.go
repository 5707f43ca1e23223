package hop

import (
	"slices"

	"github.com/layercast/layercast/event"
)

// stream is one source site's sequence of messages as this node receives
// them (out of order: hop forwards before gaps are filled). Site sequence
// numbers up to contig are all in (data, or pruned away as skips); those
// up to delivered are done.
type stream struct {
	site      event.SiteID
	contig    uint32
	delivered uint32
	lastLTS   uint64 // time stamp of the message at contig
	items     []item // data items, indexed by seq & (len-1)
	skips     []skipRun
	best      struct {
		Seq uint32
		LTS uint64
	}
	// inSite (at a representative): every message up to it is in the
	// site's ring, so every member has it, or will after a failure; marks
	// say, for each message cast into the site, up to where the stream
	// was contiguous when it was (ring hands casts back in order).
	inSite uint32
	marks  []siteMark
	// synced: the stream knows where it stands (a tStart set it, or this
	// node numbers it). Until then contig means nothing, agreed delivery
	// waits on it, and what arrives is held in early (state.go).
	synced bool
	early  []kept
}

// siteMark is a message cast into the site and the stream's contig then.
type siteMark struct{ seq, contig uint32 }

// cast records that h (seq) went into the site with contig all in.
func (st *stream) cast(seq uint32) {
	if st.marks == nil {
		st.marks = make([]siteMark, len(st.items))
	}
	st.marks[seq&uint32(len(st.marks)-1)] = siteMark{seq, st.contig}
}

// returned: ring handed back the cast of seq, so everything the stream
// held without a gap when it was cast is in the site too.
func (st *stream) returned(seq uint32) {
	if st.marks == nil {
		return
	}
	if m := st.marks[seq&uint32(len(st.marks)-1)]; m.seq == seq {
		st.inSite = max(st.inSite, m.contig)
	}
}

type item struct {
	present bool
	h       dataHdr
	g       event.GroupID
	msg     *event.Message // payload, retained
	readyAt event.Time     // when it became deliverable in FIFO order
	rec     event.Recovery
}

type skipRun struct {
	first, last uint32
	lts         uint64
}

// maxSkipRuns bounds the out-of-order skip runs a stream remembers.
const maxSkipRuns = 1024

func newStream(s event.SiteID, size int) *stream {
	return &stream{site: s, items: make([]item, size)}
}

func (st *stream) close() {
	for _, k := range st.early {
		if k.msg != nil {
			k.msg.Release()
		}
	}
	st.early = nil
	for i := range st.items {
		if st.items[i].msg != nil {
			st.items[i].msg.Release()
		}
		st.items[i] = item{}
	}
}

// add keeps a data message; fresh is false for a duplicate, full when it
// was beyond what the stream may hold (dropped).
func (st *stream) add(h *dataHdr, g event.GroupID, payload *event.Message, now event.Time) (fresh, full bool) {
	if !st.synced {
		return st.hold(h, g, payload)
	}
	if h.Seq <= st.contig {
		return false, false
	}
	if h.Seq-st.delivered > uint32(len(st.items)) {
		return true, true
	}
	it := &st.items[h.Seq&uint32(len(st.items)-1)]
	if it.present {
		return false, false
	}
	for _, r := range st.skips {
		if h.Seq >= r.first && h.Seq <= r.last {
			return false, false
		}
	}
	payload.Retain()
	*it = item{present: true, h: *h, g: g, msg: payload, rec: payload.Recovery}
	st.advance(now)
	return true, false
}

// skip marks first..last as pruned away (or this node's own).
func (st *stream) skip(first, last uint32, lts uint64, now event.Time) bool {
	if !st.synced {
		fresh, _ := st.hold(&dataHdr{Type: tSkip, Site: st.site, Seq: first, Last: last, LTS: lts}, 0, nil)
		return fresh
	}
	if last <= st.contig {
		return false
	}
	for _, r := range st.skips {
		if first >= r.first && last <= r.last {
			return false
		}
	}
	if len(st.skips) >= maxSkipRuns {
		return false
	}
	st.skips = append(st.skips, skipRun{first, last, lts})
	st.advance(now)
	return true
}

// advance moves contig over everything now in.
func (st *stream) advance(now event.Time) {
	mask := uint32(len(st.items) - 1)
	for {
		next := st.contig + 1
		if it := &st.items[next&mask]; it.present && it.h.Seq == next {
			st.contig, st.lastLTS = next, it.h.LTS
			it.readyAt = now
			continue
		}
		moved := false
		for i := 0; i < len(st.skips); i++ {
			r := st.skips[i]
			if r.first <= next && r.last >= next {
				st.contig, st.lastLTS = r.last, r.lts
				moved = true
			}
			if r.last <= st.contig {
				st.skips[i] = st.skips[len(st.skips)-1]
				st.skips = st.skips[:len(st.skips)-1]
				i--
			}
		}
		if !moved {
			return
		}
	}
}

// truncate forgets everything past seq (its stamp lts): numbers this node
// gave alone, in a view nobody else was in (rollBackAlone).
func (st *stream) truncate(seq uint32, lts uint64) {
	if !st.synced || st.contig <= seq {
		return
	}
	for i := range st.items {
		if it := &st.items[i]; it.present && it.h.Seq > seq {
			it.msg.Release()
			*it = item{}
		}
	}
	// Every run left lies past contig (advance drops those it passed).
	st.skips = st.skips[:0]
	st.contig, st.lastLTS = seq, lts
	st.delivered = min(st.delivered, seq)
	st.inSite = min(st.inSite, seq)
	st.best.Seq, st.best.LTS = 0, 0
}

// head is the first message not yet delivered that is deliverable in FIFO
// order, or nil; it steps delivered over pruned sequence numbers.
func (st *stream) head() *item {
	mask := uint32(len(st.items) - 1)
	for st.delivered < st.contig {
		it := &st.items[(st.delivered+1)&mask]
		if it.present && it.h.Seq == st.delivered+1 {
			return it
		}
		st.delivered++
	}
	return nil
}

// beat records a heartbeat's sequence and time stamp; it reports whether
// they told anything new. A heartbeat that claims numbers past contig with
// a stamp no higher than contig's message is of a numbering the stream
// moved past (a tStart skipped it there: a representative readmitted
// numbers on below what the one before it announced), and is not taken:
// taken, agreed order waited for good on numbers nobody would send.
func (st *stream) beat(bt *beat) bool {
	if st.synced && bt.Seq > st.contig && bt.LTS <= st.lastLTS {
		return false
	}
	if bt.LTS <= st.best.LTS && bt.Seq <= st.best.Seq {
		return false
	}
	st.best.Seq, st.best.LTS = max(bt.Seq, st.best.Seq), max(bt.LTS, st.best.LTS)
	return true
}

// passed reports whether nothing this stream will still bring sorts before
// (lts, site): every message it sends later has a time stamp above p.
func (st *stream) passed(p uint64, lts uint64, site event.SiteID) bool {
	return p >= lts || p+1 == lts && st.site > site
}

// floor is the time stamp every later message of the stream exceeds.
func (st *stream) floor() uint64 {
	p := st.lastLTS
	if st.best.Seq <= st.contig && st.best.LTS > p {
		p = st.best.LTS
	}
	return p
}

// before orders two messages by (time stamp, site).
func before(a, b *item) bool {
	if a.h.LTS != b.h.LTS {
		return a.h.LTS < b.h.LTS
	}
	return a.h.Site < b.h.Site
}

// tryDeliver delivers, in agreed order, every message no live site can
// still precede.
func (l *Layer) tryDeliver() {
	for {
		var best *item
		var from *stream
		for _, st := range l.streams {
			if st == nil {
				continue
			}
			if h := st.head(); h != nil && (best == nil || before(h, best)) {
				best, from = h, st
			}
		}
		if best == nil {
			return
		}
		for _, st := range l.streams {
			if st == nil || st == from || st.head() != nil {
				continue
			}
			p := st.floor()
			if st.site == l.me && l.isRep && st.contig == l.siteSeq {
				p = max(p, l.clock) // my next message gets clock+1 (none numbered is still in ring)
			}
			if !st.passed(p, best.h.LTS, best.h.Site) {
				return
			}
		}
		if l.cfg.Safe && !l.stable(best) {
			return
		}
		if l.viewBehind(best) || l.viewAhead(best) {
			return
		}
		if l.last.h.LTS != 0 && before(best, &l.last) || l.staleOld(best) {
			l.late(from, best)
			continue
		}
		if !l.outOfGroups {
			// Removed from every group, this node hands nothing up: what
			// it passes then is not agreed order's floor. Kept as the
			// floor, it dropped as late what the far sites cast in the
			// view that readmitted it: site 3's representative n3,
			// frozen while the wide area was split three ways, woke,
			// found sites 1 and 2 dead, was removed, and passed its
			// site's stream up to stamp 1171 with no far site left to
			// wait on (isolate had run before); readmitted at once, it
			// dropped sites 1's and 2's first casts of that view,
			// stamped from 938: they had not heard site 3's stamps yet
			// (site soak, splitfreeze, seed 30 at rate 40 once every
			// child was resent from its subtree's ARUs: 33 owed
			// deliveries missing; its faults with seed 3004: 66). What
			// it passed it does not deliver again (deliver: upTo).
			l.last.h.LTS, l.last.h.Site = best.h.LTS, best.h.Site
		}
		l.deliver(from, best)
	}
}

// staleOld reports whether it sorts before what this node delivered
// before isolate lowered agreed order's floor (isoTop) and was cast in a
// view older than the one that readmitted this node. The floor was lowered
// for the casts of the view that readmits it; a cast of an older view it
// was in, it did not get before it passed that cast's stamp in a
// configuration without the cast's site (found dead), and delivered now,
// it comes after messages that the members that stayed with its site
// delivered after it
// (splitfreeze seed 951 at rate max: site 1 (n1, n2) found sites 2 and 3
// dead at 9.14 s, delivered its own stream to stamp 1287, was removed,
// lowered its floor to 724 and, readmitted, delivered site 2's casts of
// view 2 from stamp 725 on, which n3 had delivered before site 1's 726).
// Once the floor passes isoTop again, last alone judges.
func (l *Layer) staleOld(it *item) bool {
	t := &l.isoTop
	if !t.set {
		return false
	}
	top := item{h: dataHdr{LTS: t.lts, Site: t.site}}
	if !before(&l.last, &top) {
		t.set, t.views = false, nil
		return false
	}
	return it.h.Type == tData && it.h.View != 0 && it.h.View < t.views[it.g] && before(it, &top)
}

// late drops a message that sorts before one this node delivered already:
// its site was out of this node's live sites when agreed order passed its
// time stamp (declared dead, cut off, or readmitted), and it was numbered
// meanwhile, in a configuration this node was not in (Spread's extended
// virtual synchrony: a message is delivered in the configuration it was
// sent in, not in a later one). Delivered now, it came after messages that
// the members that stayed with its site delivered after it (spread-site-
// soak seeds 187, 271 and 371: 16, 152 and 154 deliveries out of agreed
// order). The application is told it will not come.
func (l *Layer) late(st *stream, it *item) {
	l.c.Late.Inc()
	st.delivered = it.h.Seq
	if v := l.views[it.g]; v != nil && v.Has(l.Ctx.Self()) && it.h.Type == tData {
		l.Ctx.Up(&event.Event{Kind: event.Lost, Group: it.g, Lost: &event.LostRange{First: it.h.Seq, End: it.h.Seq + 1, Bounded: true}})
	}
	it.msg.Release()
	*it = item{}
}

// deliver hands a message up (if this node is in its group) and frees it.
func (l *Layer) deliver(st *stream, it *item) {
	now := l.Ctx.Now()
	st.delivered = it.h.Seq
	// Delivered already in an earlier life of the stream (stamps rise
	// along a stream; a site that numbers again from 1 stamps above).
	u := &l.upTo[st.site]
	again := it.h.Seq <= u.seq && it.h.LTS <= u.lts
	if st.site == l.me && it.h.Type == tData {
		// A member's casts are numbered in their order, so one at or
		// below the last delivered of its origin came before.
		again = again || it.h.Last <= l.delivered[it.h.Origin]
		l.delivered[it.h.Origin] = max(l.delivered[it.h.Origin], it.h.Last)
	}
	if again {
		l.c.Redelivery.Inc()
	} else {
		u.seq, u.lts = it.h.Seq, it.h.LTS
	}
	if v := l.views[it.g]; !again && v != nil && v.Has(l.Ctx.Self()) {
		m := l.Ctx.MessageFrom(it.msg.Bytes())
		m.Recovery = it.rec
		l.c.Delivered.Inc()
		l.c.Agreed.Inc()
		l.c.WaitNs.Add(int64(now.Sub(it.readyAt)))
		l.Ctx.Up(&event.Event{Kind: event.Cast, Group: it.g, Peer: it.h.Origin, Msg: m})
	}
	it.msg.Release()
	*it = item{}
}

// viewBehind reports whether agreed order holds at it: it was cast in a
// view of its group newer than this node's (Spread's extended virtual
// synchrony: a message belongs to the configuration it was sent in). A
// site readmitted joins agreed order at each node when its view has it;
// one member whose updates came late delivered its site's messages past
// the stamps the readmitted site's first casts got, which the others,
// with the site back, delivered after those casts, and then dropped the
// casts as late (spread-site-soak longcut seeds 178 and 240: n6's and
// n2's views 300 ms late, 3 and 2 owed deliveries missing). It holds
// until this node's view catches up, and at most dead_after (this node
// may have been removed meanwhile).
func (l *Layer) viewBehind(it *item) bool {
	v := l.views[it.g]
	if it.h.Type != tData || v == nil || uint32(v.ID) >= it.h.View {
		l.behind = false
		return false
	}
	now := l.Ctx.Now()
	if !l.behind {
		l.behind, l.behindAt = true, now
		l.c.ViewBehind.Inc()
	}
	return now.Sub(l.behindAt) < l.cfg.DeadAfter
}

// noteAhead: h came from a site not in this node's view (dropped). Cast in
// a view of its group newer than this node's, it is of a site that view
// admits (readmitted) and this node's membership update has not come yet:
// agreed order must not pass it before that view comes (viewAhead).
func (l *Layer) noteAhead(h *dataHdr, g event.GroupID) {
	v := l.views[g]
	if h.Type != tData || v == nil || uint32(v.ID) >= h.View {
		return
	}
	pos := item{h: dataHdr{LTS: h.LTS, Site: h.Site}}
	a := l.ahead[g]
	if a == nil {
		l.ahead[g] = &aheadHold{at: l.Ctx.Now(), view: h.View, pos: pos}
		l.c.ViewAhead.Inc()
		return
	}
	if before(&pos, &a.pos) {
		a.pos = pos
	}
	a.view = max(a.view, h.View)
}

// castOpened tells this representative's members that it opened site s's
// stream (s is live in its view: readmitted), in each group whose view has
// a member of s: a tStart with no sequence, View its view of the group.
// Cast into the site in order with everything this node casts there after
// (ring is FIFO), so a member whose view of the group is older holds agreed
// order from it on (noteOpened): its own view has no stream of s, and past
// it, it delivered far messages with stamps above the first ones s casts
// in the view that readmits it, which this node and the members whose
// views came in time deliver after them, and then dropped s's as late
// (spread-site-soak threeway seed 18 at rate max: n6's view 4, which
// readmitted n1, came 285 ms after n3's; before any of n1's casts reached
// it, n6 delivered site 2's and 3's stamps 2063 to 2079, and dropped n1's
// 1008 to 1023, stamped 2063 to 2078: 16 owed deliveries missing).
func (l *Layer) castOpened(s event.SiteID) {
	if !l.peers {
		return
	}
	gs := make([]event.GroupID, 0, len(l.views))
	for g := range l.views {
		gs = append(gs, g)
	}
	slices.Sort(gs) // the same casts in the same order on every run
	for _, g := range gs {
		v := l.views[g]
		if v == nil {
			continue
		}
		for _, n := range v.Members {
			if l.siteOf[n] == s {
				l.castSite(&dataHdr{Type: tStart, Site: s, View: uint32(v.ID)}, g, nil)
				break
			}
		}
	}
}

// noteOpened: this member's representative opened h.Site's stream in its
// view h.View of g (castOpened). If this node's view of g is older, the
// site is readmitted and this node's update has not come: agreed order
// holds at every message (the site's first stamps are not known here)
// until its view of g catches up (then the stream, opened, holds it until
// its tStart comes) or dead_after (viewAhead). So too when this node still
// has a stream of the site, from a view before the one that removed it: its
// views behind, n8 (a member of site 3) still had sites 1 and 2 of view 1
// when n3 readmitted them in view 3; it got view 2 (sites 1 and 2 out) and
// view 3 at once, 275 ms after n3 got view 3, and at view 2 delivered site 3's casts that
// n3 had numbered meanwhile, stamped past sites 1's and 2's first casts of
// view 3 (from 360429; n3 had taken their clock), then dropped those as
// late (splitfreeze seed 1502 at rate max: 82 owed deliveries missing).
func (l *Layer) noteOpened(h *dataHdr, g event.GroupID) {
	v := l.views[g]
	if v == nil || uint32(v.ID) >= h.View {
		return
	}
	if a := l.ahead[g]; a != nil {
		a.pos = item{}
		a.view = max(a.view, h.View)
		return
	}
	l.ahead[g] = &aheadHold{at: l.Ctx.Now(), view: h.View}
	l.c.ViewAhead.Inc()
}

// aheadHold is where agreed order holds for one group (noteAhead).
type aheadHold struct {
	at   event.Time
	view uint32
	pos  item // (time stamp, site) of the first message held for (zero: all, noteOpened)
}

// viewAhead reports whether agreed order holds at it: a message this node
// dropped, its site not in this node's view, was cast in a newer view of
// its group and sorts at or before it (noteAhead). Virtual synchrony: what
// a readmitted site casts in the view that readmits it every member of that
// view delivers. The view's messages reach a member before its view does
// when its membership update comes late; passed meanwhile with the sites of
// its old view only, agreed order dropped them as late once the view came
// and the site's stream was replayed (spread-site-soak freeze seed 142 at
// rate max: n7's view 4 came 250 ms after the others', when it had
// delivered site 2's and 3's stamps past n1's first casts in view 4; 9 owed
// deliveries missing). It holds until this node's view of the group
// catches up, and at most dead_after (this node may be removed meanwhile).
func (l *Layer) viewAhead(it *item) bool {
	if len(l.ahead) == 0 {
		return false
	}
	held := false
	for g, a := range l.ahead {
		if v := l.views[g]; v == nil || uint32(v.ID) >= a.view || l.Ctx.Now().Sub(a.at) >= l.cfg.DeadAfter {
			delete(l.ahead, g)
			continue
		}
		held = held || !before(it, &a.pos)
	}
	return held
}
