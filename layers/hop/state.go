package hop

import (
	"cmp"
	"slices"

	"github.com/layercast/layercast/event"
)

// This file is hop's state transfer (Spread 3.3, and Totem's configuration
// change: a newcomer learns where each stream stands and gets what the
// others keep, or is told what it will not get).
//
// A stream that does not know where it stands (a node that joins a site
// after casting started, a site readmitted after a partition, the streams
// of a node that was itself out of its site) holds what arrives (stream
// early) and waits for a tStart: "from site sequence F on you get
// everything". Agreed delivery waits on it meanwhile, so nothing is
// delivered out of order, and nothing it was sent is lost.
//
// Who sends it: whoever feeds the stream. A representative, when its site
// view gains members, casts into its site, for every stream it knows, a
// tStart and then every message and skip run from that point on it still
// has (its stream's undelivered items and what it keeps, failover.go); and
// on a new child link (a far site readmitted, a new representative, a tree
// rebuilt) it sends the same from the child's ARU on. F is the first point
// from which it has everything up to where its own stream is contiguous,
// so a receiver that knew where it stood and stands below F skips to it
// and is told what it will not get (event.Lost, told_lost). A
// representative whose stream moves so passes the tStart on, into its site
// and down its tree. A representative numbers its own site's stream, so
// knows where it stands; except one readmitted after it was alone in its
// view, or a member that takes over before its own stream was told where it
// stands (rejoined): its members tell it (tellRep).
//
// What a node keeps it keeps at least history after it was numbered or
// received (kept.at), even when every live site holds it, so a site or a
// member admitted meanwhile (views reach sites tens of milliseconds apart
// across a WAN, and a sender may cast to a newcomer before the newcomer's
// feeder has installed it) still gets it.

// hold keeps a message or skip run of a stream that does not know where it
// stands yet (replayed by start); fresh is false for a copy, full when
// early holds as many as the stream may.
func (st *stream) hold(h *dataHdr, g event.GroupID, payload *event.Message) (fresh, full bool) {
	for _, k := range st.early {
		if k.h.Type == h.Type && k.h.Seq == h.Seq {
			return false, false
		}
	}
	if len(st.early) >= len(st.items) {
		return true, true
	}
	if payload != nil {
		payload.Retain()
	}
	st.early = append(st.early, kept{h: *h, g: g, msg: payload})
	return true, false
}

// start takes a tStart: everything from first on comes. A stream that did
// not know where it stood now does (and takes what it held from first on);
// one that stood below first skips to it, and lost is what it will not get
// ([lost[0], lost[1]), empty if nothing). changed is false when the stream
// already stood at or past first.
func (st *stream) start(first uint32, lts uint64, now event.Time) (changed bool, lost [2]uint32) {
	if first == 0 {
		return false, lost
	}
	if !st.synced {
		st.synced = true
		st.contig, st.delivered, st.lastLTS = first-1, first-1, lts
		early := st.early
		st.early = nil
		for i := range early {
			k := &early[i]
			switch {
			case k.h.Type == tSkip:
				if k.h.Last >= first {
					st.skip(max(k.h.Seq, first), k.h.Last, k.h.LTS, now)
				}
			case k.h.Seq >= first:
				st.add(&k.h, k.g, k.msg, now)
			}
			if k.msg != nil {
				k.msg.Release()
			}
		}
		st.advance(now)
		return true, lost
	}
	if st.contig+1 >= first {
		if st.best.Seq >= first {
			// Numbers announced from first on are of a numbering that
			// stopped (a representative whose ring never handed them
			// back, and a readmitted one numbers on from where its
			// member stands): kept, agreed order waited for good on
			// them (spread-site-soak seed 297 once a readmitted
			// representative waits for its member's word). Changed: it
			// goes on, for the site's members and the sites below.
			st.best.Seq, st.best.LTS = 0, 0
			return true, lost
		}
		return false, lost
	}
	lost = [2]uint32{st.contig + 1, first}
	st.skip(st.contig+1, first-1, lts, now)
	if st.best.Seq >= first {
		// Heartbeats announced numbers the stream skipped past: of a
		// numbering that stopped there (a representative readmitted
		// numbers on below what the one before it announced). Kept,
		// agreed order waited for good on them; forgotten, it waits
		// only for the next heartbeat.
		st.best.Seq, st.best.LTS = 0, 0
	}
	return true, lost
}

// syncOwn: a representative numbers its own site's stream, so it knows
// where it stands: after what it numbered, or what it holds numbered by
// the representative before it.
func (l *Layer) syncOwn() {
	st := l.streams[l.me]
	if st == nil || st.synced {
		return
	}
	top := l.siteSeq
	for _, k := range st.early {
		top = max(top, k.h.end())
	}
	st.start(top+1, l.clock, l.Ctx.Now())
}

// replay emits, for source site s, a tStart and then, in site sequence
// order, every message and skip run from it on that this node still has:
// its stream's items not yet delivered, its skip runs, and what it keeps.
// The tStart is the first point at or after lower from which it has
// everything up to where its stream is contiguous. It reports false (and
// emits nothing) when this node's own stream of s does not know where it
// stands.
func (l *Layer) replay(s event.SiteID, lower uint32, emit func(h *dataHdr, g event.GroupID, payload *event.Message)) bool {
	st := l.streams[s]
	if st == nil || !st.synced {
		return false
	}
	lower = max(lower, 1)
	var es []kept
	r := &l.retained[s]
	for i := 0; i < r.Len(); i++ {
		if k := r.At(i); k.h.end() >= lower {
			es = append(es, *k)
		}
	}
	for i := range st.items {
		if it := &st.items[i]; it.present && it.h.Seq >= lower {
			es = append(es, kept{h: it.h, g: it.g, msg: it.msg})
		}
	}
	for _, sr := range st.skips {
		if sr.last >= lower {
			es = append(es, kept{h: dataHdr{Type: tSkip, Site: s, Seq: sr.first, Last: sr.last, LTS: sr.lts}})
		}
	}
	// Held here while emit runs: sending may pump a link, whose
	// checkHold numbers waiting casts and delivers, freeing stream items
	// and kept messages that es still names; their buffers, reused, went
	// out under these numbers with another message's bytes (spread-site-
	// soak seed 403 at rate max: n2 resent site 2's 621 and 623 with the
	// payloads of 622 and 624, 8 duplicate deliveries).
	for i := range es {
		if es[i].msg != nil {
			es[i].msg.Retain()
		}
	}
	defer func() {
		for i := range es {
			if es[i].msg != nil {
				es[i].msg.Release()
			}
		}
	}()
	slices.SortFunc(es, func(a, b kept) int {
		if c := cmp.Compare(a.h.Seq, b.h.Seq); c != 0 {
			return c
		}
		return cmp.Compare(a.h.Type, b.h.Type) // data before skip
	})
	first, next := lower, lower // next: the first seq not covered yet
	for i := range es {
		if e := min(es[i].h.Seq-1, st.contig); es[i].h.Seq > next && next <= e {
			first = e + 1 // next..e is gone here
		}
		next = max(next, es[i].h.end()+1)
	}
	if next <= st.contig {
		first = st.contig + 1
	}
	var lts uint64
	switch {
	case first == st.contig+1:
		lts = st.lastLTS
	case s == l.me && l.isRep && first == l.siteSeq+1:
		lts = l.clock // what I number next has a stamp above it
	}
	emit(&dataHdr{Type: tStart, Site: s, Seq: first, LTS: lts}, 0, nil)
	done := first // the first seq not emitted yet
	for i := range es {
		k := es[i]
		if k.h.end() < done {
			continue
		}
		if k.h.Type == tSkip {
			k.h.Seq = max(k.h.Seq, done)
			emit(&k.h, k.g, nil)
		} else {
			emit(&k.h, k.g, k.msg)
		}
		done = k.h.end() + 1
	}
	return true
}

// replaySite casts into this representative's site, for every stream that
// knows where it stands, what a newcomer needs (replay from the first
// message on: the newcomer takes what comes from the tStart on).
func (l *Layer) replaySite() {
	if !l.isRep || !l.peers {
		return
	}
	for s := range l.streams {
		l.replay(event.SiteID(s), 1, l.castReplay)
	}
}

// castReplay casts into my site, marked a replay, what replay emits.
func (l *Layer) castReplay(h *dataHdr, g event.GroupID, payload *event.Message) {
	hh := *h
	hh.Flags = flagReplay
	if hh.Type != tStart {
		l.c.Replayed.Inc()
	}
	l.castSite(&hh, g, payload)
}

// startIn handles a tStart for stream st (from a link, or from this node's
// representative): take it, tell the application what it will not get,
// and, at a representative whose stream it moved, pass it on into the site
// and down the tree. It reports whether it moved the stream.
func (l *Layer) startIn(st *stream, h *dataHdr) bool {
	synced := st.synced
	changed, lost := st.start(h.Seq, h.LTS, l.Ctx.Now())
	if !changed {
		return false
	}
	l.clock = max(l.clock, h.LTS)
	l.c.Starts.Inc()
	if lost[1] > lost[0] {
		l.tellLost(lost)
	}
	// A stream moved (a site readmitted, a feeder's skip): the site's ARU
	// of it waits on this member's word, and a representative new to a
	// site resends it from that ARU on (resend).
	l.sendHolds(true)
	if l.isRep && h.Site != l.me {
		hh := *h
		hh.Flags = 0
		if !synced {
			// What it held meanwhile (early) it cast into its site as it
			// came only while it had members, and a newcomer's replay
			// (replaySite) skipped this stream: a member admitted then
			// stood at the tStart and waited for good on what this node
			// took from early (spread-site-soak seed 203 at rate max:
			// n4, readmitted alone, held site 1's 1068 to 1085 before n6
			// came back; 920 owed deliveries missing at n6). Its members
			// get the tStart and what it has from there, as a newcomer
			// does.
			l.replay(h.Site, h.Seq, l.castReplay)
		} else {
			l.castSite(&hh, 0, nil)
		}
		for _, c := range l.routes.children[h.Site] {
			if lk := l.links[c.site]; lk != nil {
				lk.queueStart(&hh)
			}
		}
	}
	l.checkHold() // casts waiting for the far streams' stamps (numberOrWait)
	l.tryDeliver()
	return true
}

// tellLost tells the application, in each of its groups, that site
// sequence numbers lost[0] up to lost[1] of a stream will not come
// (those of them that were its group's).
func (l *Layer) tellLost(lost [2]uint32) {
	l.c.ToldLost.Add(int64(lost[1] - lost[0]))
	for _, g := range l.myGroups() {
		l.Ctx.Up(&event.Event{Kind: event.Lost, Group: g, Lost: &event.LostRange{First: lost[0], End: lost[1], Bounded: true}})
	}
}

// rejoined runs before a new neighbourhood is acted on (prev: my site's
// members before, prevInView: the sites in view before, prevRep: my
// site's representative before). A representative that was alone in
// the view (cut off from its site and every far site) and is readmitted
// with members again drops its own stream: what it numbered alone was of
// a configuration only it was in, and its members numbered the site's
// stream on meanwhile (those numbers are the ones the far sites hold). A
// member that sees a representative new to its site casts it its own
// site's stream (a replay, then a tStart at where it is contiguous).
func (l *Layer) rejoined(prev map[event.NodeID]bool, prevInView uint64, prevRep event.NodeID) {
	rep := l.reps[l.me]
	self := l.Ctx.Self()
	if l.awaitRep != rep {
		l.awaitRep = event.NoNode // its answer will not come
	}
	if rep != prevRep {
		l.toldRep = event.NoNode
	}
	far := ^uint64(1 << l.me)
	if prevInView&far != 0 && l.inView&far == 0 {
		l.alone = true // cut off from every far site
		l.isolate()
	}
	if rep == self && prevRep == self && l.alone && len(prev) <= 1 && l.inView&far != 0 && l.peers {
		l.alone = false
		l.restoreLast()
		l.aloneMark.set = false // its whole stream goes
		l.voidOwnStream()
		// What it numbered of its members' casts alone is void too: a
		// member's cast again must be taken (the member never saw it
		// numbered by anyone the far sites heard; refused, it was lost
		// for good: spread-site-soak seeds 93 and 177). Its members'
		// replay says what they saw numbered (memberReplay); what this
		// node delivered alone it does not deliver again (delivered).
		for n := range l.numbered {
			if n != self {
				delete(l.numbered, n)
			}
		}
		// And its members' casts queued below before they saw it as
		// their representative come first, out of order with the ones
		// they cast again (a member's cast it never saw numbered came
		// after later ones, and was refused as taken: spread-site-soak
		// seed 177, 4 owed deliveries missing): as at a take-over.
		l.takeOver()
		l.rejoin, l.ringUp, l.voidLTS = true, false, l.clock
		return
	}
	if rep != self && rep != event.NoNode && prevRep == self && l.alone && len(prev) <= 1 && l.inView&far != 0 && l.peers {
		// Readmitted alone as a member: what it numbered alone is void
		// as a readmitted representative's is (above), and its stream
		// stood past the numbers its representative gives (each member
		// of a site split into nodes alone numbered its own casts there):
		// it took them as copies and waited for good (spread-site-soak
		// seed 111, 12 owed deliveries missing). It waits for its
		// representative's tStart (replaySite, or castStart once a
		// readmitted one knows where the stream stands); what it
		// delivered before it does not deliver again (delivered, upTo).
		// Nor does it take its representative's numbers before that
		// tStart (awaitRep): a representative cut off with its site
		// and readmitted sends, in the new ring, what it numbered in
		// the old one and numbers again; held as early, those void
		// numbers took the new ones' place (spread-site-soak seed 27
		// at rate max, 2 owed deliveries missing).
		l.alone, l.rejoin, l.awaitRep = false, false, rep
		if l.aloneMark.set {
			// Its whole stream goes, not back to the mark (rollBackAlone).
			l.restoreLast()
			l.aloneMark.set = false
			l.c.RolledBack.Inc()
		}
		l.voidOwnStream()
		return
	}
	if l.inView&far != 0 {
		l.alone = false
	}
	if l.rejoin && rep == self && prevRep == self && l.inView&far != 0 {
		// Still waiting for a member (a member that crashed left the
		// view, or one joined): its word comes once the new ring carries
		// casts. With no member left it never comes (rejoinWaits).
		l.ringUp = false
		return
	}
	if rep == self && prevRep != self && prevRep != event.NoNode && l.inView&far != 0 {
		if st := l.streams[l.me]; st != nil && !st.synced {
			// Taking over without knowing where its site's stream
			// stands: readmitted alone as a member, it waited for its
			// representative's tStart, which never came (that one
			// failed). Numbered on from its own siteSeq, of its life
			// before, it gave again numbers the failed one had given
			// and its members and the far sites held, and the far sites
			// dropped its casts as copies (spread-site-soak seed 945:
			// n2, readmitted at 4.7 s, took over site 1 from crashed n1
			// at 6.6 s and numbered from 317 where n3 held n1's 317 to
			// 347: 46 owed deliveries missing). It waits for a member's
			// word as a readmitted representative does; its members
			// give it when its heartbeats say it does not know
			// (tellRep). With no member left (site 1 was n1 and n2),
			// the far sites hold where the stream stands: it waits for
			// their heartbeats and numbers on past them (rejoinWaits,
			// endRejoin). Numbered on from its siteSeq, n2 gave its
			// casts of view 4 n1's 600 to 610, which the far sites held,
			// and they dropped them as copies (spread-site-soak seed 445
			// at rate max: 33 owed deliveries missing).
			l.rejoin, l.ringUp, l.voidLTS = true, false, l.clock
			return
		}
	}
	l.rejoin = false
	l.rollBackAlone(rep)
	if rep == self || rep == event.NoNode || prev[rep] || prevInView&far == 0 || !l.peers {
		return
	}
	l.tellRep()
}

// tellRep casts this member's stream of its own site to its representative
// (a replay, then a tStart at where it is contiguous, addressed to it), which
// does not know where the site's stream stands: new to the site (rejoined),
// or its heartbeats say so (receive). Once per representative (toldRep).
func (l *Layer) tellRep() {
	rep := l.reps[l.me]
	st := l.streams[l.me]
	if rep == l.Ctx.Self() || rep == event.NoNode || rep == l.toldRep || st == nil || !st.synced || !l.peers {
		return
	}
	emit := func(h *dataHdr, g event.GroupID, payload *event.Message) {
		if h.Type == tStart && h.Seq != st.contig+1 {
			return // only the closing one: where the stream stands
		}
		if h.Type != tStart && h.Seq > st.contig {
			// Numbered by this node as the representative and not
			// handed back by its ring: in no member's stream, and the
			// new one numbers from the closing tStart on. Sent on, a
			// far site held this number for another message than the
			// one the new representative gives it (its own casts among
			// them this node casts again: repChanged).
			return
		}
		hh := *h
		hh.Flags = flagReplay
		if hh.Type == tStart {
			// The representative numbers on above every stamp this
			// node delivered, not only its site's: else what it numbers
			// next sorts before far messages this node delivered while
			// it was the representative (late, spread-site-soak seed 215).
			hh.LTS = max(hh.LTS, l.clock)
			// Addressed: only rep takes it as this member's word
			// (memberReplay).
			hh.Origin = rep
		}
		l.castSite(&hh, g, payload)
	}
	if l.replay(l.me, 1, emit) {
		emit(&dataHdr{Type: tStart, Site: l.me, Seq: st.contig + 1, LTS: st.lastLTS}, 0, nil)
		l.awaitRep, l.toldRep = rep, rep
	}
}

// rollBackAlone: this node numbered its site's stream in a view with
// neither a member nor a far site (cut off, or removed and not yet
// readmitted), and now rep, another node, numbers it: those numbers
// (this node's own casts, delivered nowhere else) its site gave on
// meanwhile. Kept, the stream stood past what rep sends, took the site's
// messages under those numbers as copies and let agreed order pass them,
// so this node delivered them after far messages that every other member
// delivered after them (spread-site-soak seeds 229 and 357). The stream
// goes back to where it stood before, and takes the site's numbers from
// rep: its casts, its replay to a newcomer (replaySite), to a member's
// replay (memberReplay) or after it gave up waiting for one (endRejoin).
// Once its far sites are back with this node still numbering, what it
// numbered is the site's stream, and stays.
func (l *Layer) rollBackAlone(rep event.NodeID) {
	if !l.aloneMark.set {
		return
	}
	self := l.Ctx.Self()
	if rep == self {
		if l.inView&^(1<<l.me) != 0 {
			l.aloneMark.set = false
		}
		return
	}
	if rep == event.NoNode {
		return
	}
	l.restoreLast()
	l.aloneMark.set = false
	mark := l.aloneMark.seq
	if st := l.streams[l.me]; st != nil {
		st.truncate(mark, l.aloneMark.lts)
	}
	l.siteSeq = mark
	r := &l.retained[l.me]
	for n := r.Len(); n > 0; n-- {
		k := r.Pop()
		if k.h.Seq > mark {
			l.unkeep(k)
			continue
		}
		if k.h.Type == tSkip {
			k.h.Last = min(k.h.Last, mark)
		}
		r.Push(k)
	}
	l.c.RolledBack.Inc()
}

// isolate: this node's view has no far site any more. If it was removed
// (it is in no group), agreed order's floor goes back to where it stood
// when its live sites lost every far site (isoMark): what it delivered
// since, it delivered in a configuration without them, with stamps they
// never heard of (its site numbered on alone), and kept as the floor
// those stamps made it drop as late the messages the far sites number for
// the view that readmits it, which every other member of that view
// delivers (a three-way split, site 2 removed and readmitted: n4 had
// delivered its site's stream up to stamp 1464 before the removal, n3 of
// the same site only to 1424, and n4 dropped site 3's casts stamped 1449
// to 1463, cast in the view that readmitted both: 15 owed deliveries
// missing). A node that stays in its groups keeps its floor: the far
// sites come back readmitted, and their casts wait until they hear this
// side (syncWaitEnd). What it delivered it does not deliver again
// (deliver: delivered, upTo).
func (l *Layer) isolate() {
	m := &l.isoMark
	if !m.set || len(l.myGroups()) > 0 {
		return
	}
	lts, site := l.last.h.LTS, l.last.h.Site
	if !l.lowerFloor(m.lts, m.site) {
		return
	}
	l.c.FloorRestored.Inc()
	// Lowered for the casts of the view that readmits this node only:
	// what the far sites cast in a view it was in, and it had not got
	// when it passed their stamps, stays late (staleOld).
	t := &l.isoTop
	if !t.set || t.lts < lts || t.lts == lts && t.site < site {
		t.lts, t.site = lts, site
	}
	t.set, t.views = true, map[event.GroupID]uint32{} // install fills it
}

// lowerFloor sets agreed order's floor (last) back to (lts, site) if it
// stands above it, and reports whether it did.
func (l *Layer) lowerFloor(lts uint64, site event.SiteID) bool {
	if l.last.h.LTS > lts || l.last.h.LTS == lts && l.last.h.Site > site {
		l.last.h.LTS, l.last.h.Site = lts, site
		return true
	}
	return false
}

// restoreLast sets agreed order's floor (last) back to where it stood when
// this node first numbered alone (aloneMark), when what it numbered alone
// is void. It delivered those in a configuration only it was in, with
// stamps no other node heard of; kept as the floor, they made this node
// drop as late the messages that far sites numbered for the configuration
// it is readmitted to, which every other member of it delivers (spread-
// site-soak seed 327: n3, alone, delivered its members' casts up to stamp
// 1008; readmitted, it dropped n1's casts stamped 965 to 979, cast in the
// view n3 had joined: 7 owed deliveries missing). What it delivered alone
// it does not deliver again (deliver: delivered, upTo).
func (l *Layer) restoreLast() {
	m := &l.aloneMark
	if !m.set {
		return
	}
	l.lowerFloor(m.last.lts, m.last.site)
}

// memberReplay takes, at a readmitted representative (rejoin), a member's
// replay of the site's stream (its closing tStart addressed to this node:
// Origin): its messages are kept, and go on along the
// tree with the closing tStart (resendOwn, from what each child's site
// holds: a far site may lack the last ones the member numbered alone, its
// link closed with them in flight), which tells where the stream stands,
// from which this node numbers on. Sent on as they came as well, each went
// twice onto the links, and the links' queues held the site's members off
// for a second and more (TestHopReadmittedSiteGetsOwed, seed 4, once n3
// was readmitted after n4).
func (l *Layer) memberReplay(h *dataHdr, g event.GroupID, payload *event.Message) {
	st := l.streams[l.me]
	if h.Type != tStart {
		if h.Type == tData {
			l.numbered[h.Origin] = max(l.numbered[h.Origin], h.Last)
		}
		l.retain(h, g, payload)
		return
	}
	if h.Seq == 0 || st == nil || st.synced || h.Origin != l.Ctx.Self() {
		// Not a member's word to this node (rejoined addresses it): a
		// tStart a member cast as the site's representative, which its
		// ring carried to this node after it lost the role. Taken, it
		// ended the wait before that member's replay came, and this node
		// numbered on with none of what the member held: the far sites
		// were told those numbers lost (spread-site-soak seed 177 at rate
		// max: n6's views, held up below while crashed n8 stayed in its
		// ring, came in a burst; n6 took over from n5 and cast its
		// streams' tStarts, lost the role to n5 readmitted, and told it
		// where the stream stands after that: 27 owed deliveries
		// missing).
		return
	}
	st.start(h.Seq, h.LTS, l.Ctx.Now())
	l.siteSeq = h.Seq - 1
	l.clock = max(l.clock, h.LTS)
	st.inSite = st.contig
	l.rejoin = false
	l.c.Starts.Inc()
	// A member that forgot what it numbered alone (rollBackAlone) stands
	// below the stream the replaying member had, and gets from no one
	// else what lies between: what this node now has of it goes into the
	// site too (spread-site-soak seed 31); then where it stands, for a
	// member readmitted after numbering alone (seed 111).
	l.answerReplay(1)
	l.castStart()
	l.resendOwn()
	l.drainWaiting()
	l.checkHold()
	l.tryDeliver()
}

// castStart casts into my site where my site's stream stands (a tStart):
// a readmitted representative learnt it (memberReplay, endRejoin), and
// members readmitted alone wait on it (rejoined); the others stand there.
func (l *Layer) castStart() {
	if st := l.streams[l.me]; st != nil && st.synced {
		l.castSite(&dataHdr{Type: tStart, Site: l.me, Seq: st.contig + 1, LTS: st.lastLTS}, 0, nil)
	}
}

// answerReplay: a member told this representative, which is not waiting
// for it (it numbers its site's stream already), that its stream of the
// site stands at first (it saw this node become its representative, so
// casts it where it stands: rejoined). A member behind this node's stream
// would wait for good on numbers this node will not send (it was readmitted
// and numbered on from its own stream, the 1 s fallback, while the member's
// views were held up below): tell it where the stream stands, and what this
// node has of it from there, as a newcomer is told (replaySite).
func (l *Layer) answerReplay(first uint32) {
	st := l.streams[l.me]
	if !l.peers || st == nil || !st.synced || first == 0 {
		return
	}
	// Always answered, so the member ends its wait (awaitRep); from where
	// this node's stream stands at most, with what it numbered and its
	// ring has not handed back yet (kept), which the member dropped
	// while it waited.
	l.replay(l.me, min(first, st.contig+1), func(h *dataHdr, g event.GroupID, payload *event.Message) {
		hh := *h
		hh.Flags = flagReplay
		if hh.Type != tStart {
			l.c.Replayed.Inc()
		}
		l.castSite(&hh, g, payload)
	})
}

// voidOwnStream drops what this node holds of its own site's stream, what
// its site's ring has pending and what it keeps of it, and starts the
// stream afresh: what it numbered alone is void once it is readmitted.
func (l *Layer) voidOwnStream() {
	l.dropSitePend()
	if st := l.streams[l.me]; st != nil {
		st.close()
	}
	l.streams[l.me] = newStream(l.me, l.cfg.MaxPending)
	l.seen = 0
	for l.retained[l.me].Len() > 0 {
		l.unkeep(l.retained[l.me].Pop())
	}
}
