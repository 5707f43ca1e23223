package vsync

import (
	"cmp"
	"slices"

	"github.com/layercast/layercast/event"
)

// viewUp starts, queues or skips the flush a new view asks for. A view
// that removes this node, a first view and a view that readmits it need no
// flush: there is nothing this node agreed on with the others to settle.
func (l *Layer) viewUp(v *event.ViewInfo) {
	g := l.groupFor(v.Group)
	if l.Ctx.Logging() {
		l.Ctx.Logf("view %v %d members %v joined %v left %v (flushing: %v)", v.Group, v.ID, v.Members, v.Joined, v.Left, g.target != nil)
	}
	if last := g.latest(); last != nil && v.ID <= last.ID && !readmits(last, v, l.self) {
		l.c.OldViews.Inc()
		return
	}
	switch {
	case !v.Has(l.self):
		l.abandon(g)
		l.leave(g, v)
	case g.view == nil || !g.view.Has(l.self) || slices.Contains(v.Joined, l.self):
		l.abandon(g)
		l.rejoin(g, v)
	case g.target == nil:
		l.startFlush(g, v)
	default:
		g.later = append(g.later, v)
		l.recheck(g)
	}
}

// readmits reports whether v is the view that readmits self after last,
// the view that removed it, under the same number. Told by the service
// that it was removed, gms hands up a view of its own one past the view
// it held (without self); when the service removed and readmitted the node
// in one view, that view has the same number. Dropped as old, the node
// never got a view again, and its casts waited in the layer for good (soak
// seed 488).
func readmits(last, v *event.ViewInfo, self event.NodeID) bool {
	return v.ID == last.ID && !last.Has(self) && v.Has(self)
}

// latest is the newest view the group has seen (installed or waiting).
func (g *group) latest() *event.ViewInfo {
	switch {
	case len(g.later) > 0:
		return g.later[len(g.later)-1]
	case g.target != nil:
		return g.target
	}
	return g.view
}

// abandon stops a flush without installing its view.
func (l *Layer) abandon(g *group) {
	if g.target == nil {
		return
	}
	g.target, g.later, g.cutKnown = nil, nil, false
	clear(g.cut)
	clear(g.holder)
	clear(g.resent)
	g.timer.Stop()
}

// leave installs a view without this node: its streams are dropped (what
// it delivered from each sender is remembered, to tell it what it missed
// should it come back) and its casts wait for a view with it.
func (l *Layer) leave(g *group, v *event.ViewInfo) {
	l.releaseKept(g)
	l.dropWaiting(g)
	for _, h := range g.early {
		l.hold(-h.cost)
		h.m.Release()
	}
	g.early, g.earlyBytes = nil, 0
	for _, p := range g.peers {
		p.hi = 0
	}
	clear(g.reports)
	g.prev, g.view, g.tag, g.ownHi = g.tag, v, uint32(v.ID), 0
	l.Ctx.Up(&event.Event{Kind: event.View, Group: g.id, View: v})
	l.unblock(g)
	l.holdOff(g)
}

// rejoin installs a first view, or one that readmits this node: senders
// that stayed keep what was delivered from them, so the application is told
// exactly what it missed of their streams while it was out (event.Lost).
func (l *Layer) rejoin(g *group, v *event.ViewInfo) {
	first := g.view == nil
	for id, p := range g.peers {
		if !v.Has(id) || slices.Contains(v.Joined, id) {
			delete(g.peers, id)
			continue
		}
		p.tell = !first && p.dlv != 0
	}
	g.joinTag = uint32(v.ID)
	if !slices.Contains(v.Joined, l.self) {
		// members that had us in their view count us as a survivor: say
		// we have nothing to add (our old view is not theirs)
		l.sendEmptyReport(g, v)
	}
	l.install(g, v)
}

// sendEmptyReport answers a flush to v this node takes no part in (it
// missed the view before): a report from no old view, which no cut counts,
// so that no survivor waits for it.
func (l *Layer) sendEmptyReport(g *group, v *event.ViewInfo) {
	l.castReport(g, &report{Target: v.ID})
}

// startFlush begins (or, after a restart, begins again) the flush to v:
// block the application and report what this node delivered in its view.
func (l *Layer) startFlush(g *group, v *event.ViewInfo) {
	if g.target == nil {
		g.since = l.Ctx.Now()
	}
	g.moved = l.Ctx.Now()
	g.target, g.cutKnown = v, false
	clear(g.cut)
	clear(g.holder)
	clear(g.resent)
	if !g.blocked {
		g.blocked = true
		l.Ctx.Up(&event.Event{Kind: event.Block, Group: g.id})
	}
	l.holdOff(g)
	l.sendReport(g)
	if l.cfg.FlushTimeout > 0 {
		g.timer.Reset(l.cfg.FlushTimeout)
	}
	l.tryInstall(g)
}

// sendReport casts this node's flush report for the current target: how
// far it delivered every member's stream in its view, and which survivors
// it no longer counts. It reports again whenever either changed during
// the flush.
func (l *Layer) sendReport(g *group) {
	r := report{Old: g.view.ID, Target: g.target.ID, Entries: l.state(g), Gone: l.goneList(g)}
	rr := r
	g.setReport(l.self, &rr)
	g.told = l.Ctx.Now()
	l.castReport(g, &r)
}

// castReport casts a flush report as a sequenced cast: it reaches every
// member after this node's casts before it (FIFO).
func (l *Layer) castReport(g *group, r *report) {
	body := l.wc.Encode(r)
	m := l.Ctx.NewMessage()
	m.SetPayload(body)
	m.Prepend(1)[0] = tReport
	l.c.Reports.Inc()
	l.Ctx.Down(&event.Event{Kind: event.Cast, Group: g.id, Msg: m})
}

// reportUp records a member's flush report.
func (l *Layer) reportUp(g *group, from event.NodeID, r *report) {
	if v := g.latest(); v == nil || !v.Has(from) && (g.view == nil || !g.view.Has(from)) {
		l.c.NonMember.Inc() // only members' reports are kept (bounded per member)
		return
	}
	if uint32(r.Target) == g.joinTag && g.view != nil && uint64(g.joinTag) == g.view.ID {
		// a report for the view we joined in: its sender's own entry says
		// where its casts before that view end
		if p := g.peers[from]; p != nil && p.tell {
			for _, e := range r.Entries {
				if event.NodeID(e.Node) == from && e.Hi > p.dlv {
					l.tellLost(g, from, p, e.Hi+1)
				}
			}
		}
	}
	if g.view != nil && r.Target <= g.view.ID {
		// a flush this node is past (it was out of the group then, and
		// installed the view readmitting it at once). A survivor of our
		// flush still in that older flush must install every view up to
		// ours before it reports for our target: its progress there is
		// our flush's progress (overload replay seed 41: a readmitted
		// member gave its flush up while the others caught up on theirs)
		if g.target != nil && l.survivor(g, from) {
			g.moved = l.Ctx.Now()
		}
		return
	}
	if g.newest(from) > r.Target {
		return
	}
	if g.target != nil && r.Target >= g.target.ID {
		g.moved = l.Ctx.Now()
	}
	g.setReport(from, r)
	if l.Ctx.Logging() {
		l.Ctx.Logf("%v report from %v: %d->%d %v gone %v", g.id, from, r.Old, r.Target, r.Entries, r.Gone)
	}
	if g.target != nil {
		l.recheck(g)
		l.tryInstall(g)
	}
}

// goneList is, in increasing order, the survivors this node no longer
// counts in its cut (gone).
func (l *Layer) goneList(g *group) []uint32 {
	var gs []uint32
	l.survivors(g, func(s event.NodeID) bool {
		if g.gone(s) {
			gs = append(gs, uint32(s))
		}
		return true
	})
	slices.Sort(gs)
	return gs
}

// survivors calls f for every member that moves with this node from its
// view to the target: in both, not (re)joining, not this node.
func (l *Layer) survivors(g *group, f func(event.NodeID) bool) {
	for _, m := range g.view.Members {
		if l.survivor(g, m) {
			if !f(m) {
				return
			}
		}
	}
}

// survivor reports whether m is a survivor of the flush: in this node's
// view and in the target, not (re)joining, not this node.
func (l *Layer) survivor(g *group, m event.NodeID) bool {
	return m != l.self && g.view.Has(m) && g.target.Has(m) && !slices.Contains(g.target.Joined, m)
}

// gone reports whether survivor s will never report for the target, or
// will not install it with this node: a newer view removes or readmits it
// (it is out of the group at some point after the target), or it reported
// for a newer target already without one for ours (it skipped ours).
func (g *group) gone(s event.NodeID) bool {
	if g.newest(s) > g.target.ID && g.reportFor(s) == nil {
		return true
	}
	for _, v := range g.later {
		if !v.Has(s) || slices.Contains(v.Joined, s) {
			return true
		}
	}
	return false
}

// recheck re-examines a flush after a newer view or a report: a
// survivor that will never report is no longer waited for, its report no
// longer counts in the cut, and a survivor that was to re-send a sender's
// messages and is gone is replaced by the next one that has them. The
// flush goes on to the same target: views are installed in order, none
// skipped.
func (l *Layer) recheck(g *group) { l.tryInstall(g) }

// state is what this node delivered in its view, per member (its own
// casts for itself), in the order of the view's members: what its reports
// say.
func (l *Layer) state(g *group) []entry {
	es := make([]entry, 0, g.view.Size())
	for _, m := range g.view.Members {
		es = append(es, entry{Node: uint32(m), Hi: l.hiOf(g, m)})
	}
	return es
}

// hiOf is how far this node delivered m's stream in its view (its own
// casts for itself).
func (l *Layer) hiOf(g *group, m event.NodeID) uint32 {
	if m == l.self {
		return g.ownHi
	}
	if p := g.peers[m]; p != nil {
		return p.hi
	}
	return 0
}

// sameEntries reports whether report entries a say what b says of every
// member b names.
func sameEntries(a, b []entry) bool {
	for _, e := range b {
		var hi uint32
		for _, f := range a {
			if f.Node == e.Node {
				hi = f.Hi
				break
			}
		}
		if hi != e.Hi {
			return false
		}
	}
	return true
}

// tryInstall computes the cut once every survivor still to be heard from
// has reported (again whenever a report comes or a survivor is gone),
// re-sends what this node must, delivers what waited for the cut, and
// installs the target once this node delivered up to the cut and every
// survivor not gone says (in its latest report) that it delivered exactly
// the same counting the same survivors gone, or installed the target
// already: a member told of a removal before another would otherwise
// install the view while the other still takes the removed survivor's
// report and delivers more. A survivor that re-sent a sender's messages
// does not install the view before the others have them, so should it be
// removed meanwhile (frozen, partitioned), nobody installs the view with
// more than the others. A member whose delivery or gone survivors changed
// during the flush reports again.
func (l *Layer) tryInstall(g *group) {
	if g.target == nil {
		return
	}
	if g.checking {
		g.again = true // called back from a delivery below: loop instead
		return
	}
	g.checking = true
	defer func() { g.checking = false }()
	for {
		g.again = false
		l.tryInstallOnce(g)
		if !g.again || g.target == nil {
			return
		}
	}
}

// tryInstallOnce is one pass of tryInstall.
func (l *Layer) tryInstallOnce(g *group) {
	if !g.cutKnown {
		ready := true
		l.survivors(g, func(s event.NodeID) bool {
			ready = g.reportFor(s) != nil || g.gone(s)
			return ready
		})
		if !ready {
			return
		}
		l.sameOld(g, func(event.NodeID, *report) {}) // counts reports from another old view, once
		g.cutKnown = true
	}
	l.computeCut(g)
	if g.target == nil || g.again {
		return
	}
	for _, m := range g.view.Members {
		if m != l.self && l.hiOf(g, m) < g.cut[m] {
			return // a survivor not gone has them and re-sends them
		}
	}
	my, myGone := l.state(g), l.goneList(g)
	if own := g.reportFor(l.self); own == nil || !sameEntries(own.Entries, my) || !slices.Equal(own.Gone, myGone) {
		l.sendReport(g)
		g.again = true // it may make this node the one to re-send
		return
	}
	agreed := true
	l.survivors(g, func(s event.NodeID) bool {
		if g.gone(s) {
			return true
		}
		r := g.reportFor(s)
		agreed = r != nil && (r.Old != g.view.ID || sameEntries(r.Entries, my) && (slices.Equal(r.Gone, myGone) || g.installed(s)))
		return agreed
	})
	if !agreed {
		if l.Ctx.Logging() {
			l.Ctx.Logf("%v flush %d: delivered up to the cut %v, waiting for survivors to agree", g.id, g.target.ID, g.cut)
		}
		return
	}
	t := g.target
	l.c.Flushes.Inc()
	l.c.FlushNs.Add(int64(l.Ctx.Now().Sub(g.since)))
	l.settle(g)
	g.target, g.cutKnown = nil, false
	g.timer.Stop()
	l.install(g, t)
}

// settle tells the application of what it will not get up to the cut
// (after flush_timeout: nobody re-sent it).
func (l *Layer) settle(g *group) {
	for _, m := range g.view.Members {
		if p := g.peers[m]; p != nil && m != l.self && g.cutKnown && p.dlv < g.cut[m] {
			l.c.CutShort.Add(int64(g.cut[m] - p.dlv))
			l.tellLost(g, m, p, g.cut[m]+1)
		}
	}
}

// sameOld calls f with every report for the target from a survivor with
// our old view that is not gone; a survivor gone since (a newer view
// removes it) will not install the target with us, so what only it
// delivered is not part of the cut.
func (l *Layer) sameOld(g *group, f func(from event.NodeID, r *report)) {
	l.survivors(g, func(s event.NodeID) bool {
		if r := g.reportFor(s); r != nil && !g.gone(s) {
			if r.Old == g.view.ID {
				f(s, r)
			} else if !g.cutKnown {
				l.c.OtherOld.Inc()
			}
		}
		return true
	})
}

// computeCut sets, per sender of the old view, the cut: the most this
// node or any survivor not gone with the same old view delivered (in its
// latest report). For each sender some member delivered less of, the
// lowest-numbered of them that has the cut sends the difference again
// (from whoever has it, not only the sender). What waited for the cut is
// delivered up to it.
func (l *Layer) computeCut(g *group) {
	for _, m := range g.view.Members {
		h := l.hiOf(g, m)
		g.cut[m], g.low[m] = h, h
	}
	l.sameOld(g, func(_ event.NodeID, r *report) {
		for _, e := range r.Entries {
			n := event.NodeID(e.Node)
			if c, ok := g.cut[n]; ok {
				g.cut[n], g.low[n] = max(c, e.Hi), min(g.low[n], e.Hi)
			}
		}
	})
	if l.Ctx.Logging() {
		l.Ctx.Logf("%v cut %v: %v low %v waiting %d", g.id, g.target.ID, g.cut, g.low, len(g.waiting))
	}
	for _, m := range g.view.Members {
		l.pickHolder(g, m)
	}
	l.drainWaiting(g)
}

// drainWaiting delivers, in each sender's order, the old-view arrivals
// held during the flush that are next in their stream and within the cut;
// the rest wait (a later cut may take them) until the view is installed.
func (l *Layer) drainWaiting(g *group) {
	if len(g.waiting) == 0 || g.target == nil {
		return
	}
	w := g.waiting
	g.waiting = nil
	slices.SortStableFunc(w, func(a, b held) int {
		return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.seq, b.seq))
	})
	for _, h := range w {
		l.hold(-h.cost)
		h.cost = 0
		if g.target == nil {
			h.m.Release()
			continue
		}
		l.arrive(g, h)
	}
}

// pickHolder chooses who re-sends m's messages up to the cut: the
// lowest-numbered of this node and the survivors not gone whose first
// report for the target reaches the cut (every member has those, so every
// member picks the same one, and it stays while it lives however the
// others report again), else whose latest report does. If that is this
// node, it re-sends what it did not re-send yet in this flush.
func (l *Layer) pickHolder(g *group, m event.NodeID) {
	old := g.holder[m]
	g.holder[m] = event.NoNode
	if g.low[m] >= g.cut[m] {
		return // every reporter has everything
	}
	for _, latest := range []bool{false, true} {
		consider := func(from event.NodeID, r *report) {
			if !latest && r.first != nil {
				r = r.first
			}
			for _, e := range r.Entries {
				if event.NodeID(e.Node) == m && e.Hi == g.cut[m] && (g.holder[m] == event.NoNode || from < g.holder[m]) {
					g.holder[m] = from
				}
			}
		}
		if own := g.reportFor(l.self); own != nil {
			consider(l.self, own)
		}
		l.sameOld(g, consider)
		if g.holder[m] != event.NoNode {
			break
		}
	}
	if old != event.NoNode && old != g.holder[m] && old != l.self && g.gone(old) {
		l.c.Restarts.Inc()
		if l.Ctx.Logging() {
			l.Ctx.Logf("holder %v of %v gone, now %v", old, m, g.holder[m])
		}
	}
	if g.holder[m] == l.self && g.resent[m] < g.cut[m] {
		l.resend(g, m, max(g.low[m], g.resent[m]), g.cut[m])
		g.resent[m] = g.cut[m]
	}
}

// resend casts again from's messages after lo up to hi (lo 0: every one
// kept), from what this node kept.
func (l *Layer) resend(g *group, from event.NodeID, lo, hi uint32) {
	// what every member has delivered was let go (stability): nobody
	// needs it again
	lo = max(lo, g.released[from])
	if lo >= hi {
		return
	}
	if l.Ctx.Logging() {
		l.Ctx.Logf("%v re-send %v's (%d,%d] for view %d", g.id, from, lo, hi, g.target.ID)
	}
	q := g.kept[from]
	if q == nil {
		l.c.ResendMissing.Add(int64(hi - lo))
		return
	}
	if lo > 0 && (q.Len() == 0 || q.At(0).seq > lo+1) {
		l.c.ResendMissing.Inc() // let go past max_bytes: the flush times out
	}
	for i := range q.Len() {
		k := q.At(i)
		if k.seq <= lo || k.seq > hi {
			continue
		}
		m := l.Ctx.MessageFrom(k.b)
		putResend(m.Prepend(resendHeaderSize), from, g.tag, k.seq)
		l.c.Resent.Inc()
		l.Ctx.Down(&event.Event{Kind: event.Cast, Group: g.id, Msg: m})
	}
}

// install passes view v up: what was kept of the old view is let go, the
// casts of v that came early are delivered, and a view that arrived
// meanwhile is flushed to next; otherwise the application is unblocked.
func (l *Layer) install(g *group, v *event.ViewInfo) {
	l.releaseKept(g)
	l.dropWaiting(g)
	clear(g.cut)
	clear(g.holder)
	clear(g.resent)
	for id, p := range g.peers {
		if !v.Has(id) || slices.Contains(v.Joined, id) {
			delete(g.peers, id)
			continue
		}
		p.hi = 0
	}
	for id, rs := range g.reports {
		rs = slices.DeleteFunc(rs, func(r *report) bool { return r.Target <= v.ID })
		if len(rs) == 0 {
			delete(g.reports, id)
		} else {
			g.reports[id] = rs
		}
	}
	if l.Ctx.Logging() {
		l.Ctx.Logf("install %v %d", v.Group, v.ID)
	}
	g.prev, g.view, g.tag, g.ownHi = g.tag, v, uint32(v.ID), 0
	clear(g.stab)
	// The stack hands the application the top layer's events in the order
	// they go up: the View after the old view's last deliveries.
	l.Ctx.Up(&event.Event{Kind: event.View, Group: g.id, View: g.view})
	// casts of the view (or of views this node skipped) that came early
	early := g.early
	g.early, g.earlyBytes = nil, 0
	for _, h := range early {
		l.hold(-h.cost)
		h.cost = 0
		l.arrive(g, h)
	}
	if len(g.later) > 0 {
		next := g.later[0]
		g.later = g.later[1:]
		if len(g.later) == 0 {
			g.later = nil
		}
		l.startFlush(g, next)
	} else {
		l.unblock(g)
		l.sendQueued(g)
	}
}

// unblock ends a Block.
func (l *Layer) unblock(g *group) {
	if g.blocked {
		g.blocked = false
		l.Ctx.Up(&event.Event{Kind: event.Unblock, Group: g.id})
	}
}

// dropWaiting discards old-view casts still waiting for a cut.
func (l *Layer) dropWaiting(g *group) {
	for _, h := range g.waiting {
		l.hold(-h.cost)
		l.c.BeyondCut.Inc()
		h.m.Release()
	}
	g.waiting = nil
}

// flushTimeout gives a flush up once it made no progress for
// flush_timeout: the target is installed with what this node has. It
// bounds how long the group can stay blocked if a member stops answering
// without being removed. A flush that still moves is not given up: a
// survivor recovering a stream at the capacity left by overload reports
// late, and giving up on it broke view synchrony (the replay in
// tests.TestVsyncFlushCatchingUpUnderOverload).
func (l *Layer) flushTimeout(g *group) {
	if g.target == nil {
		return
	}
	if at := g.moved.Add(l.cfg.FlushTimeout); at > l.Ctx.Now() {
		// the flush moved since the timer was set: a survivor is catching
		// up (reports and old-view casts still arrive), not stuck
		g.timer.ResetAt(at)
		return
	}
	l.c.Timeouts.Inc()
	if l.Ctx.Logging() {
		l.Ctx.Logf("%v flush %d->%d timed out: cutKnown %v cut %v mine %v gone %v", g.id, g.view.ID, g.target.ID, g.cutKnown, g.cut, l.state(g), l.goneList(g))
		l.survivors(g, func(s event.NodeID) bool {
			r := g.reportFor(s)
			if r == nil {
				l.Ctx.Logf("  survivor %v: no report (gone %v, newest %d)", s, g.gone(s), g.newest(s))
			} else {
				l.Ctx.Logf("  survivor %v: gone %v old %d entries %v gone %v installed %v", s, g.gone(s), r.Old, r.Entries, r.Gone, g.installed(s))
			}
			return true
		})
	}
	l.settle(g)
	t := g.target
	l.c.FlushNs.Add(int64(l.Ctx.Now().Sub(g.since)))
	g.target, g.cutKnown = nil, false
	l.install(g, t)
}

// maxPending bounds the reports kept per member (for views not installed
// yet); past it the oldest is let go.
const maxPending = 8

// setReport keeps r, a member's report for a target no older than any it
// sent before: one for the same target replaces the earlier (it delivered
// more since), one for a newer target is kept beside it (a member that
// installed our target reports for the next one too, and both are needed).
func (g *group) setReport(from event.NodeID, r *report) {
	rs := g.reports[from]
	if n := len(rs); n > 0 && rs[n-1].Target == r.Target {
		r.first = cmp.Or(rs[n-1].first, rs[n-1])
		rs[n-1] = r
		return
	}
	rs = append(rs, r)
	if len(rs) > maxPending {
		rs = slices.Delete(rs, 0, len(rs)-maxPending)
	}
	g.reports[from] = rs
}

// reportFor is from's report for the current target, or nil.
func (g *group) reportFor(from event.NodeID) *report {
	for _, r := range g.reports[from] {
		if r.Target == g.target.ID {
			return r
		}
	}
	return nil
}

// installed reports whether from installed the target: it reported from
// it (or a newer view) since. Its latest report for the target was then
// its last (FIFO) and says what it delivered for good, whatever survivors
// it counted.
func (g *group) installed(from event.NodeID) bool {
	rs := g.reports[from]
	return len(rs) > 0 && rs[len(rs)-1].Old >= g.target.ID
}

// newest is the target of from's latest report (0: none).
func (g *group) newest(from event.NodeID) uint64 {
	if rs := g.reports[from]; len(rs) > 0 {
		return rs[len(rs)-1].Target
	}
	return 0
}
