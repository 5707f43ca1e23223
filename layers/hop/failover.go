package hop

import (
	"time"

	"github.com/layercast/layercast/event"
)

// This file keeps what a change of representative or of routes needs
// (Spread 3.3: "the transport protocol at each daemon keeps a copy of all
// complete messages sent or received until they become stable across the
// entire system, and thus can provide retransmissions of messages which
// were missed during the membership change"):
//
//   - a member keeps its own casts until it sees them numbered by its
//     site's representative, and casts them again to a new representative;
//   - every node (representative or not) keeps every message of every
//     source site until the heartbeats' ARUs say every live site holds it,
//     and a representative sends a new child link (a new representative
//     far away, or a tree rebuilt) what that site does not hold yet. A
//     member keeps them too because it may become the representative: the
//     old one may have numbered casts into the site that it never got onto
//     its links before it crashed, and only the site's members still have
//     them (the far site's stream would wait on that gap for good);
//   - what a representative has and its members may not, nobody else
//     relies on: it takes a message it numbered into its own stream (to
//     deliver) and sends it on along the tree only once ring hands it back
//     from the site, and its heartbeats give, for a far site's stream, the
//     ARU of what it cast into the site and ring handed back and every
//     member says it holds (tHolds: ring hands a cast back to its sender
//     before the others have it), not of what it holds alone (far sites
//     free what every site's ARU covers).

// ownCast is a cast of this node not yet seen numbered.
type ownCast struct {
	oseq uint32
	g    event.GroupID
	msg  *event.Message // payload
}

// kept is a message (or skip run) a node keeps until stable.
type kept struct {
	h   dataHdr
	g   event.GroupID
	msg *event.Message // payload; nil for a skip run
	at  event.Time     // when kept (kept at least history: state.go)
}

// keepOwn keeps a copy of a member's unnumbered cast.
func (l *Layer) keepOwn(oseq uint32, g event.GroupID, payload []byte) {
	if l.own.Len() >= l.cfg.MaxPending {
		if o := l.own.Pop(); o.msg != nil {
			o.msg.Release()
		}
		l.c.KeepDrops.Inc()
	}
	l.own.Push(ownCast{oseq: oseq, g: g, msg: l.Ctx.MessageFrom(payload)})
}

// numberedOwn forgets own casts up to oseq: the representative numbered
// them.
func (l *Layer) numberedOwn(oseq uint32) {
	for l.own.Len() > 0 && l.own.Front().oseq <= oseq {
		l.own.Pop().msg.Release()
	}
	l.checkHold()
}

// repChanged hands a new representative the casts of this node the old one
// never numbered: numbered at once if this node is the new one, else cast
// again.
func (l *Layer) repChanged() {
	if st := l.streams[l.me]; !l.isRep && l.lastRep == l.Ctx.Self() && st != nil && st.synced {
		// This node lost the role with its own casts numbered and
		// still in its site's ring (not handed back): no member takes
		// them from it now, nor does its replay send them on
		// (rejoined). They go to the new representative as a member's
		// casts again do, before the ones it keeps already (spread-site-
		// soak seed 177: n6's cast numbered 368 was lost).
		var later []ownCast
		for l.own.Len() > 0 {
			later = append(later, l.own.Pop())
		}
		r := &l.retained[l.me]
		for i := 0; i < r.Len(); i++ {
			if k := r.At(i); k.h.Type == tData && k.h.Origin == l.Ctx.Self() && k.h.Seq > st.contig && k.msg != nil {
				l.keepOwn(k.h.Last, k.g, k.msg.Bytes())
			}
		}
		for _, o := range later {
			l.own.Push(o)
		}
	}
	for i := 0; i < l.own.Len(); i++ {
		o := l.own.At(i)
		if l.isRep {
			// Numbered as its application's casts are (originate): not
			// while it waits to learn where its site's stream stands
			// (rejoined). Numbered at once from its siteSeq of an earlier
			// life, they took numbers its members held for other casts:
			// n2, readmitted alone as a member of site 1 while n1 had
			// crashed, cast 16 in the view that readmitted it; taking over
			// from n1 it numbered them at once from its own siteSeq, of its
			// life before, and they and n3's casts again were lost at the
			// far sites (TestHopMemberTakingOverUnsyncedAsksItsMembers once
			// a readmitted node's application was let go: 74 owed
			// deliveries missing).
			h := dataHdr{Type: tData, Flags: flagRecast, Site: l.me, Origin: l.Ctx.Self(), Last: o.oseq, LTS: l.clock + 1, Mask: l.interest(o.g), View: l.viewOf(o.g)}
			l.numberOrWait(&h, o.g, o.msg)
			continue
		}
		l.castOwn(o)
	}
	l.recasting = !l.isRep
	if !l.isRep && l.seen > 0 {
		// The new representative has not heard what this node saw
		// numbered (seen.go).
		l.seenLeft = seenRepeats
		l.armSeen()
	}
	if l.isRep {
		for l.own.Len() > 0 {
			l.own.Pop().msg.Release()
		}
	}
	l.checkHold()
}

// castOwn casts a cast of this node not seen numbered to its site's
// representative again.
func (l *Layer) castOwn(o *ownCast) {
	h := dataHdr{Type: tData, Flags: flagRecast, Site: l.me, Origin: l.Ctx.Self(), Last: o.oseq, LTS: l.clock + 1, Mask: l.interest(o.g), View: l.viewOf(o.g)}
	m := l.Ctx.MessageFrom(o.msg.Bytes())
	h.put(m.Prepend(dataHdrSize))
	l.Ctx.Down(&event.Event{Kind: event.Cast, Group: o.g, Channel: l.siteChannel(), Msg: m})
}

// takeOver: this node became its site's representative in place of
// another. Every other member of the site casts again what it has not seen
// numbered (repChanged), but its casts still waiting below (in ring's
// queue for the token) were queued before those and reach this node first:
// numbering one of them would number that member's casts out of order, or
// skip for good the cast before it that the old representative had numbered
// and lost with its crash (spread.stack soak seed 85). So, until a member's
// first cast again arrives, only the cast right after the last one this
// node saw numbered is taken from it; the others come again, in order.
func (l *Layer) takeOver() {
	clear(l.resync)
	for n, s := range l.siteOf {
		if s == l.me && n != l.Ctx.Self() {
			l.resync[n] = true
		}
	}
}

// takeCast reports whether the representative numbers member from's
// unnumbered cast h now: each (origin, OSeq) once, in order, and no jump
// beyond what a member keeps (a forged number must not silence the member
// for long), but for a newcomer's first cast: its numbers went on in a
// life this node did not see. Refused, every cast of a member removed
// while frozen was: woken, it learnt of its removal and, alone in its own
// site, numbered its own casts at rate max (13,000 in 0.1 s, out of every
// view, owed to nobody); readmitted, it cast on from 13,487 where this node
// had numbered its 366, and was held off for good once 16 waited
// (spread-site-soak freeze seed 191 at rate max: 96 owed deliveries
// missing).
func (l *Layer) takeCast(h *dataHdr, from event.NodeID) bool {
	n := l.numbered[from]
	if l.resync[from] {
		if h.Flags&flagRecast == 0 && h.Last != n+1 {
			l.c.Resynced.Inc()
			return false // it comes again, after the casts before it
		}
		delete(l.resync, from)
	}
	if h.Last <= n {
		return false
	}
	if l.newcomers[from] {
		delete(l.newcomers, from)
		if h.Last-n > uint32(l.cfg.MaxPending) {
			l.c.NewcomerJumps.Inc()
		}
		return true
	}
	return h.Last-n <= uint32(l.cfg.MaxPending)
}

// retain keeps a message or skip run of source site h.Site, for a site or
// member that may need it: a far site whose link is new, a newcomer in my
// site, or my site after a failover (state.go). freeStable frees it.
func (l *Layer) retain(h *dataHdr, g event.GroupID, payload *event.Message) {
	r := &l.retained[h.Site]
	if r.Len() >= l.cfg.MaxPending {
		l.unkeep(r.Pop())
		l.c.KeepDrops.Inc()
	}
	if payload != nil {
		payload.Retain()
		payload = payload.Compact() // kept: in a buffer its charge accounts for, never a larger packet's
		l.hold(int64(payload.Len()))
		l.keptCost += event.HeldCost(payload.Len())
	}
	r.Push(kept{h: *h, g: g, msg: payload, at: l.Ctx.Now()})
}

// unkeep releases a kept message.
func (l *Layer) unkeep(k kept) {
	if k.msg != nil {
		l.hold(-int64(k.msg.Len()))
		l.keptCost -= event.HeldCost(k.msg.Len())
		k.msg.Release()
	}
}

// freeStable drops what every live site holds, by the heartbeats' ARUs,
// this node has delivered, and was kept history ago (or sooner, while
// what it keeps costs more than history_bytes).
func (l *Layer) freeStable() {
	old := l.Ctx.Now().Add(-l.cfg.History)
	for s := range l.retained {
		r := &l.retained[s]
		if r.Len() == 0 {
			continue
		}
		floor := ^uint32(0)
		for x := range l.arus {
			if l.live&(1<<x) != 0 && x != s && event.SiteID(x) != l.me {
				floor = min(floor, l.arus[x][s])
			}
		}
		if st := l.streams[s]; st != nil && st.synced {
			floor = min(floor, st.delivered)
		}
		for r.Len() > 0 && r.Front().h.end() <= floor && (r.Front().at <= old || l.keptCost > l.cfg.HistoryBytes) {
			l.unkeep(r.Pop())
		}
	}
}

// resend queues on a child link, for source site s, a tStart and what the
// child's site does not hold yet (by its ARU) of what this representative
// has (state.go). A child site that is new here (admitted, or readmitted
// after it was cut off or left the view) gets s's stream from where it
// stands now: what came before belongs to a configuration it was not in
// (Spread's extended virtual synchrony), and its ARU is of an old life.
//
// The child relays s's stream to the sites below it from what it holds,
// and a representative new to its site (readmitted, or taken over: its
// site's representative changed since this node last sent it s's stream)
// holds it only from the tStart this sends it on: what lies before, its
// members hold, and it does not. A child site that was admitted, or whose
// representative is new, is so sent s's stream from where every live site
// stands (any of them may come below it later), not from its own site's
// ARU alone; a
// representative that kept its role holds, as every node does, what a live
// site still lacks (freeStable), and feeds the sites below it itself
// (Spread 3.3: messages are kept "until they become stable across the
// entire system", and retransmitted to whoever missed them in a
// membership change).
func (l *Layer) resend(s event.SiteID, c child, admitted bool) {
	lk := l.links[c.site]
	if lk == nil {
		return
	}
	newRep := l.repNew[s]&(1<<c.site) != 0
	lower := l.arus[c.site][s] + 1
	if st := l.streams[s]; admitted && st != nil {
		lower = st.contig + 1
		if s == l.me && l.isRep {
			// And past what I numbered that my site's ring has not
			// handed back yet: numbered before the child was admitted
			// (maybe while my site was cut off), in a configuration it
			// was not in.
			lower = l.siteSeq + 1
		}
		if l.outSet[c.site] {
			// From where it left: its members' views had it back
			// before this node's, and they cast to it from then on
			// (spread-site-soak longcut seed 126: site 3's members
			// cast 74 each in the view that readmitted site 1 before
			// its representative installed that view, 861 owed
			// deliveries missing). What came while it was out it takes
			// or drops as its own start says; it is not owed there.
			lower = min(lower, l.outAt[c.site][s]+1)
		}
	}
	if admitted || newRep {
		// And from where the sites below it stand that stayed live: what
		// they lack the child relays, replayed from its own start, and it
		// tells them to skip what came before. A three-way split with
		// site 1 frozen, removed and readmitted while sites 2 and 3
		// stayed cut apart: site 1, readmitted, relayed site 2's stream
		// to site 3 from where it got it, 220, and site 3 skipped 113 to
		// 219 for good, though site 2 still kept them (site soak,
		// splitfreeze, seed 32 at rate 40, 856 owed deliveries missing).
		// And with site 3's representative n3 frozen, removed and
		// readmitted as its representative while site 3 stayed live and
		// relayed site 2's stream to site 1: site 2 sent n3 its stream
		// from site 3's ARU, 666, which n4 had given, and n3 told site 1
		// to skip 643 to 665 (splitfreeze seed 62 at rate max, 23 owed
		// deliveries missing). The child takes them from the tStart on, as
		// a node that gets a stream from before its admission does.
		//
		// Not only the sites below it now: from where every live site
		// stands, as a representative that kept its role holds what any
		// live site still lacks (freeStable). A site may come below it
		// later (a link down, the trees rebuilt), and the child relays it
		// only what it holds: n3, site 2's representative, readmitted
		// while sites 1 and 3 were cut apart, got site 1's stream from
		// its own site's ARU, 175; when the link between sites 1 and 3
		// went down, site 1's tree ran through site 2, and n3 told site 3
		// to skip 97 to 161, which sites 1 and 3 and n3's member still
		// kept (TestHopRelayGainsALaggingChild: 186 owed deliveries
		// missing).
		for x := event.SiteID(0); x <= maxSite; x++ {
			if x != c.site && x != l.me && l.live&(1<<x) != 0 && !l.outSet[x] {
				lower = min(lower, l.arus[x][s]+1)
			}
		}
	}
	sent := l.replay(s, lower, func(h *dataHdr, g event.GroupID, payload *event.Message) {
		switch {
		case h.Type == tStart:
			lk.catchStart(h)
		case payload != nil && h.Type == tData && h.Mask&c.subtree != 0:
			l.c.Resent.Inc()
			lk.catchData(h, g, payload)
		default:
			l.c.Resent.Inc()
			lk.catchSkipRun(s, h.Seq, h.end(), h.LTS)
		}
	})
	if sent {
		l.repNew[s] &^= 1 << c.site
	}
	lk.pump()
}

// numberOrWait numbers member from's cast h now, or, while this
// representative's links or its site's ring hold a quarter of max_queue
// (or casts wait already, which go first), keeps it to number once they
// are short again. Members are held off by their own unnumbered casts
// (checkHold), so holding theirs back here holds them back too; numbered
// at once, every member's casts went onto links that could not carry
// them, and the link queues overflowed (queue_drops).
//
// Casts also wait (at most maxSyncWait) while a far site's stream here does
// not know where it stands (a site admitted, or this one readmitted, state.go):
// numbered before this node has the far streams' time stamps, they would
// carry stamps below what the other sites delivered while this site was
// out, and sort before those where the stream is known and after them
// where it was not (agreed order broken).
func (l *Layer) numberOrWait(h *dataHdr, g event.GroupID, m *event.Message) {
	if l.waiting.Len() == 0 && !l.congested() && !l.unsyncedFar() {
		l.number(h, g, m)
		return
	}
	l.numbered[h.Origin] = max(l.numbered[h.Origin], h.Last) // taken: not again
	m.Retain()
	l.waiting.Push(kept{h: *h, g: g, msg: m, at: l.Ctx.Now()})
	l.armWait()
}

// maxSyncWait bounds how long casts wait for far streams to learn where
// they stand (their feeders send it within a round trip).
const maxSyncWait = time.Second

// unsyncedFar reports whether a live far site's stream here does not know
// where it stands yet, or a link to a live far site has not brought its
// heartbeat yet (its clock: a site readmitted delivered, while it was
// out, messages stamped past what this node has heard of; a
// representative that took over numbered its members' casts below them at
// once, and that site dropped them as late though they were cast in a
// view it was in: spread-site-soak seeds 171 and 303 at rate max, 16 owed
// deliveries missing, once a link's catch-up no longer held the casts
// back until its heartbeats had come).
func (l *Layer) unsyncedFar() bool {
	for s, st := range l.streams {
		if st != nil && !st.synced && (event.SiteID(s) != l.me || l.rejoin) && l.live&(1<<s) != 0 {
			return true
		}
	}
	return l.silentLink()
}

// armWait arms the timer that numbers waiting casts once maxSyncWait has
// passed for the first of them, should nothing else drain them.
func (l *Layer) armWait() {
	switch {
	case l.waitT.Pending():
	case l.rejoinWaits():
		if l.ringUp { // else armed when the ring carries a cast
			l.waitT.Reset(max(time.Millisecond, maxSyncWait-l.Ctx.Now().Sub(l.rejoinAt)))
		}
	case l.waiting.Len() > 0:
		l.waitT.Reset(max(time.Millisecond, l.syncWaitEnd().Sub(l.Ctx.Now())))
	}
}

// syncWaitEnd is when the first waiting cast stops waiting for the far
// streams to learn where they stand: maxSyncWait after it came, or later
// while a far site whose stream here is not synced says its representative
// is readmitted and waits for its own members (rejoinWaits there, up to
// maxSyncWait too; its tStart, with its stamps, comes after). Numbered when
// the two waits ran out together, a cast took a stamp below what that
// site's members had delivered while it was cut off, and they dropped it
// as late though it was cast in a view they were in (spread-site-soak seed
// 655: 4 owed deliveries missing). At most rejoinSyncWaits maxSyncWaits.
func (l *Layer) syncWaitEnd() event.Time {
	first := l.waiting.Front().at
	end := first.Add(maxSyncWait)
	for s, st := range l.streams {
		if st != nil && !st.synced && event.SiteID(s) != l.me && l.live&(1<<s) != 0 && l.rejoinBeat[s] >= first {
			end = max(end, l.rejoinBeat[s].Add(rejoinBeatGrace*l.cfg.Heartbeat))
		}
	}
	end = min(end, first.Add(rejoinSyncWaits*maxSyncWait))
	if l.silentLink() {
		// A live far site not heard on its link yet (new, and maybe cut
		// off): numbered now, the casts take stamps below what it
		// delivered meanwhile, and it drops them as late. They wait until
		// it is heard, or its link is found down and the site, no path
		// reaching it, dead (dead_after twice at most), looked at again
		// every heartbeat. A node readmitted while its site was still cut
		// off from a far one numbered its casts after maxSyncWait, and the
		// far site dropped them as late once the cut healed (spread-site-
		// soak longcut seed 27, 80 owed deliveries missing).
		end = max(end, l.Ctx.Now().Add(l.cfg.Heartbeat))
	}
	return end
}

// silentLink reports whether a link to a live far site has not brought
// the far end's heartbeat since it was opened.
func (l *Layer) silentLink() bool {
	for s, lk := range l.links {
		if lk != nil && !lk.beaten && l.live&(1<<s) != 0 {
			return true
		}
	}
	return false
}

// rejoinBeatGrace is how many heartbeats a far site's word that it is
// rejoining holds casts waiting (an unchanged beat goes again every 10
// heartbeats, and one may be lost on the WAN); rejoinSyncWaits bounds the
// whole wait, in maxSyncWaits.
const (
	rejoinBeatGrace = 25
	rejoinSyncWaits = 3
)

// congested reports whether a link's live queue, or what this
// representative numbered and its site's ring has not handed back yet, is
// at a quarter of max_queue. A link's catch-up queue (resend) is not
// counted: what a far site lacks (its link new, or its representative)
// held every cast of this site while it drained, though only that far
// site's agreed order waits on it (TestHopCatchUpHoldsNoLiveCasts: a
// member's casts reached the sites not caught up 774 ms late, now 214 ms;
// spread-site-soak seed 517 at rate max: the sites not caught up had max
// latency 5.6 s, now 5.3 s, and their last delivery at 10.2 s, now 8.3 s;
// the site caught up waits on it for agreed order, 5.6 s then, 5.9 s now).
func (l *Layer) congested() bool {
	longest := l.inRing()
	for _, lk := range l.links {
		if lk != nil {
			longest = max(longest, lk.pend.Len())
		}
	}
	return longest >= l.cfg.MaxQueue/4
}

// inRing is how many messages this representative numbered that its
// site's ring has not handed back yet (they go onto the links then).
func (l *Layer) inRing() int {
	if st := l.streams[l.me]; st != nil && l.isRep && l.peers && l.siteSeq > st.contig {
		return int(l.siteSeq - st.contig)
	}
	return 0
}

// drainWaiting numbers the waiting casts while the links and the ring are
// short; a node no longer the representative drops them (their members
// cast them again to the new one: they never saw them numbered).
func (l *Layer) drainWaiting() {
	if l.draining {
		return
	}
	l.draining = true
	defer func() { l.draining = false }()
	if l.rejoin && l.isRep && !l.rejoinWaits() {
		l.endRejoin()
	}
	for l.waiting.Len() > 0 && (!l.isRep || !l.congested() && !l.rejoinWaits() && (!l.unsyncedFar() || l.Ctx.Now() >= l.syncWaitEnd())) {
		w := l.waiting.Pop()
		if l.isRep {
			l.number(&w.h, w.g, w.msg)
			w.msg.Release()
			continue
		}
		if n, ok := l.numbered[w.h.Origin]; ok && n >= w.h.Last {
			// Never numbered: if this node is the representative again,
			// the member's cast again must be taken.
			l.numbered[w.h.Origin] = w.h.Last - 1
		}
		if w.h.Origin == l.Ctx.Self() {
			// This node's own cast, taken while it was the
			// representative: nobody else has it, so it goes to the
			// new one as a member's cast again does (dropped, it was
			// lost for good: spread-site-soak seed 151, 24 missing).
			l.keepOwn(w.h.Last, w.g, w.msg.Bytes())
			l.castOwn(l.own.At(l.own.Len() - 1))
		}
		w.msg.Release()
	}
	if l.isRep {
		l.armWait()
	}
}

// rejoinWaits reports whether this readmitted representative still waits for
// a member to tell it where its site's stream stands (rejoined): with no
// member in its view, only until every link to a live far site has brought a
// heartbeat (silentLink), whose ARUs endRejoin numbers past (the ARUs it had
// are of its life before, and a representative that failed meanwhile
// numbered on past them: spread-site-soak seed 445); else until its site's
// ring has carried a cast (ringUp) and then maxSyncWait has passed with no
// sign of a member that still acts as the representative (rejoinHeard). Its
// members' casts, and its own, wait meanwhile. Timed from the readmission,
// the wait ran out while a member's views were still held up below (a member
// crashed, and the member's new ring recovers the old one first, until
// membership removes the crashed one), the member still numbering and
// announcing as the representative: this node numbered on past the numbers
// the member had given, which some far sites never got (they had turned to
// this node) and skipped (spread-site-soak seed 21, 80 owed deliveries
// missing).
func (l *Layer) rejoinWaits() bool {
	if !l.rejoin || !l.isRep {
		return false
	}
	if !l.peers {
		return l.silentLink()
	}
	return !l.ringUp || l.Ctx.Now().Sub(l.rejoinAt) < maxSyncWait
}

// rejoinHeard (re)starts a readmitted representative's wait for its
// members: its site's ring carries casts, or a member's views are still
// held up below (its heartbeat or numbered cast as the site's
// representative): that member's word is still to come.
func (l *Layer) rejoinHeard() {
	l.ringUp, l.rejoinAt = true, l.Ctx.Now()
	l.armWait()
}

// releaseKept frees everything kept (Close).
func (l *Layer) releaseKept() {
	for l.waiting.Len() > 0 {
		l.waiting.Pop().msg.Release()
	}
	for l.sitePend.Len() > 0 {
		if k := l.sitePend.Pop(); k.msg != nil {
			k.msg.Release()
		}
	}
	for l.own.Len() > 0 {
		l.own.Pop().msg.Release()
	}
	for s := range l.retained {
		for l.retained[s].Len() > 0 {
			l.unkeep(l.retained[s].Pop())
		}
	}
}

// endRejoin: no member told this readmitted representative where its
// site's stream stands in time (maxSyncWait; the member may have died
// meanwhile, or its views are held up below): it numbers on past what it
// numbered, what the far sites hold, and what a member that took over can
// have had in flight, and tells its child links where the stream stands.
func (l *Layer) endRejoin() {
	l.rejoin = false
	l.c.GaveUp.Inc()
	// A member that took over meanwhile may have numbered past both what
	// this node numbered and what the far sites' heartbeats say they hold
	// (what it had in flight, queued or in its ring when the far sites
	// turned to this node: its heartbeats announced those numbers, and the
	// far sites waited on them for good: spread-site-soak seed 297, 2,452
	// owed deliveries missing). Number on past all it can have given; the
	// far sites skip to it (tStart) and are told what they will not get.
	for x := range l.arus {
		if l.live&(1<<x) != 0 && event.SiteID(x) != l.me {
			l.siteSeq = max(l.siteSeq, l.arus[x][l.me])
		}
	}
	l.siteSeq += uint32(l.cfg.Window + l.cfg.MaxQueue)
	l.syncOwn()
	if st := l.streams[l.me]; st != nil {
		l.siteSeq = max(l.siteSeq, st.contig)
	}
	l.castStart()
	l.resendOwn()
	if st := l.streams[l.me]; st != nil {
		// And its members: one that forgot what it numbered alone
		// (rollBackAlone) waited for good on the numbers skipped
		// (spread-site-soak seed 279, 288 owed deliveries missing).
		l.castSite(&dataHdr{Type: tStart, Site: l.me, Seq: l.siteSeq + 1, LTS: l.clock}, 0, nil)
	}
	l.tryDeliver()
}

// resendOwn sends every child link of my site's tree where my site's
// stream stands now and what of it the child's site lacks (a readmitted
// representative's stream moved: the far sites skip to it).
func (l *Layer) resendOwn() {
	for _, c := range l.routes.children[l.me] {
		l.resend(l.me, c, false)
	}
}
