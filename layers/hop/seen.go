package hop

import (
	"time"

	"github.com/layercast/layercast/event"
)

// This file keeps a representative from treating what it numbered as in its
// site before a member holds it (Spread 3.3 and EVS: what a configuration
// delivers, and what it sends on, the members it goes on with can agree on).
//
// A representative takes what it numbered into its own stream (to deliver)
// and sends it on along its site's tree only once it is in the site: if it
// fails, the member that takes over has it. Ring below hands a member's own
// casts back at once, though (agreed order: nothing before them is
// missing), before any other member holds them. Taken then, a
// representative cut off or crashed right after had delivered or sent on
// numbers no survivor of its site knew:
//
//   - spread-site-soak seed 9 (n1 cut off): n1 numbered n2's cast n2#83 as
//     seq 168, stamp 328, had it back and delivered it before n6#81 (stamp
//     328, site 3); n2 never got it, took over and numbered n2#83 again (seq
//     168, stamp 343), and every other node delivered it after n6#81: 3
//     deliveries out of agreed order;
//   - seed 48 at rate max (n1 crashed): n1 sent seqs 294-301 on its links;
//     n2 had them not, numbered its casts again from 294 with later stamps,
//     and the far sites took some numbers from each: 75 owed deliveries
//     missing.
//
// So a member tells its representative (tSeen, a unicast) up to where its
// stream of its own site is contiguous, a moment after it moves (seenDelay;
// again a few times, seenRepeats, as the unicast may be lost; again to a new
// representative; and again whenever a heartbeat of its representative says
// its stream stands below that). A representative keeps what ring hands back of its
// own numbering (sitePend) until every member of its site view said it
// holds it, then takes it into its stream and sends it on. With no member
// left it takes it at once, unless it has no far site either: then it was
// cut off from everyone, its members (if alive) number on without it, and
// what it holds waits; readmitted, it drops it (void, as what it numbered
// alone: state.go) and counts it (unseen_dropped).

// seenDelay is how long a member gathers what its stream took before it
// tells its representative; seenRepeats how many times it tells it again,
// a heartbeat apart, when nothing new came.
const (
	seenDelay   = time.Millisecond
	seenRepeats = 3
)

// noteSeen: this member's stream of its own site may have moved.
func (l *Layer) noteSeen() {
	st := l.streams[l.me]
	if l.isRep || st == nil || !st.synced || st.contig <= l.seen {
		return
	}
	l.seen, l.seenLeft = st.contig, seenRepeats
	l.armSeen()
}

// armSeen schedules telling the representative soon (unless that is
// scheduled already).
func (l *Layer) armSeen() {
	if !l.seenT.Pending() || l.seenRepeat {
		l.seenRepeat = false
		l.seenT.Reset(seenDelay)
	}
}

// onSeen tells this member's representative where its stream stands.
func (l *Layer) onSeen() {
	rep := l.reps[l.me]
	if l.isRep || !l.peers || l.seen == 0 || rep == event.NoNode || rep == l.Ctx.Self() {
		return
	}
	m := l.Ctx.NewMessage()
	putSeen(m.Append(seenSize), l.seen)
	l.Ctx.Down(&event.Event{Kind: event.Send, Peer: rep, Control: true, Msg: m})
	l.c.SeenSent.Inc()
	if l.seenLeft > 0 {
		l.seenLeft--
		l.seenRepeat = true
		l.seenT.Reset(l.cfg.Heartbeat)
	}
}

// onSeenIn takes a member's tSeen.
func (l *Layer) onSeenIn(from event.NodeID, b []byte) {
	seq, err := parseSeen(b)
	if err != nil {
		l.c.Malformed.Inc()
		return
	}
	if from == l.Ctx.Self() || l.siteOf[from] != l.me {
		l.c.Foreign.Inc()
		return
	}
	if seq > l.seenBy[from] {
		l.seenBy[from] = seq
		l.releaseSite()
	}
}

// pendSite keeps what ring handed back of this representative's numbering
// until its members hold it.
func (l *Layer) pendSite(h *dataHdr, g event.GroupID, payload *event.Message) {
	if payload != nil {
		payload.Retain()
	}
	l.sitePend.Push(kept{h: *h, g: g, msg: payload, at: l.Ctx.Now()})
	l.releaseSite()
}

// siteHolds is up to where every member of this representative's site view
// holds its site's stream (by their tSeen), and whether it may take
// anything at all.
func (l *Layer) siteHolds() (uint32, bool) {
	if !l.peers {
		// No member: nobody else numbers the stream here; unless no
		// far site is in view either (cut off: it waits, state.go).
		return ^uint32(0), l.inView&^(1<<l.me) != 0
	}
	upTo, self := ^uint32(0), l.Ctx.Self()
	for n, s := range l.siteOf {
		if s == l.me && n != self {
			upTo = min(upTo, l.seenBy[n])
		}
	}
	return upTo, true
}

// releaseSite takes into this representative's stream, and sends on, what
// its members now hold of what it numbered.
func (l *Layer) releaseSite() {
	if !l.isRep || l.sitePend.Len() == 0 {
		return
	}
	upTo, ok := l.siteHolds()
	if !ok {
		return
	}
	moved := false
	for l.sitePend.Len() > 0 && l.sitePend.Front().h.end() <= upTo {
		k := l.sitePend.Pop()
		l.c.SiteWait.Add(int64(l.Ctx.Now().Sub(k.at)))
		l.takeNumbered(&k.h, k.g, k.msg)
		if k.msg != nil {
			k.msg.Release()
		}
		moved = true
	}
	if moved {
		l.checkHold()
		l.tryDeliver()
	}
}

// flushSite: this node is no longer its site's representative; what it
// kept of its numbering is in its site's ring (it had it back), so it goes
// into its stream as a member takes its representative's casts.
func (l *Layer) flushSite() {
	for l.sitePend.Len() > 0 {
		k := l.sitePend.Pop()
		l.takeNumbered(&k.h, k.g, k.msg)
		if k.msg != nil {
			k.msg.Release()
		}
	}
}

// dropSitePend drops what this node kept of its numbering, never held by a
// member, when it drops its own site's stream (readmitted: rejoined).
func (l *Layer) dropSitePend() {
	for l.sitePend.Len() > 0 {
		k := l.sitePend.Pop()
		l.c.Unseen.Inc()
		if k.msg != nil {
			k.msg.Release()
		}
	}
}

// dropUnheld forgets, when another node takes over as this site's
// representative, what this node holds of its site's stream past where it
// is contiguous. That is what the old representative numbered and ring
// handed on past a cast it lost with it (no survivor had it): ring gives
// every survivor the same, so every member stands at the same contig, and
// nothing past it went on to a far site or was delivered (the old
// representative waited for its members to hold it, and they held it not
// in order). The new representative numbers from contig on again, the
// members' casts among those included (they keep them until they see them
// numbered in order: fromSite). Kept, the new numbering and the old mixed
// at the far sites (spread-site-soak seed 490 at rate max: n1 numbered
// n2#700-#705 as 716-721 and crashed, ring lost 716; n2 numbered n2#706 as
// 716, and 33 owed deliveries were lost as late).
func (l *Layer) dropUnheld() {
	st := l.streams[l.me]
	if st == nil || !st.synced {
		return
	}
	for i := range st.items {
		it := &st.items[i]
		if !it.present || it.h.Seq <= st.contig {
			continue
		}
		if it.h.Type == tData {
			l.numbered[it.h.Origin] = min(l.numbered[it.h.Origin], it.h.Last-1)
		}
		it.msg.Release()
		*it = item{}
		l.c.Unheld.Inc()
	}
	st.skips = st.skips[:0] // every run left lies past contig
	st.best.Seq, st.best.LTS = 0, 0
	r := &l.retained[l.me]
	for i, n := 0, r.Len(); i < n; i++ {
		k := r.Pop()
		if k.h.Seq > st.contig {
			l.unkeep(k)
			continue
		}
		r.Push(k)
	}
}
