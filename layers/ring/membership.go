package ring

import (
	"slices"

	"github.com/layercast/layercast/event"
)

// setMembers makes the ring of these members (sorted) in this epoch (see
// ringID), if it is not the current one.
func (l *Layer) setMembers(members []event.NodeID, epoch uint64) {
	idx, in := slices.BinarySearch(members, l.self)
	if !in || len(members) > maxMembers {
		l.leaveRing()
		return
	}
	id := ringID(members, epoch)
	if l.cur != nil && l.cur.id == id && slices.Equal(l.cur.members, members) {
		return
	}
	now := l.Ctx.Now()
	// A ring that never started (its first regular token had not come)
	// is replaced without a recovery to speak of.
	replaced := l.cur != nil && (!l.cur.recovering || l.cur.replaced)
	if l.cur != nil {
		if l.cur.recovering {
			if l.cur.win.highest > 0 {
				// Another change before the ring started, with messages of
				// the ring that others started: deliver what the old ring
				// has and recover this one instead.
				l.finishOld()
				l.old = l.cur
			} else {
				l.cur.win.clear()
			}
		} else {
			l.finishOld()
			l.old = l.cur
		}
	}
	l.cur = &ringState{id: id, members: slices.Clone(members), idx: idx, win: newWindow(l.cfg.Window),
		recovering: true, since: now, replaced: replaced}
	if l.old != nil {
		l.cur.siteLTS = l.old.siteLTS
	}
	l.c.Rings.Inc()
	l.lastSent, l.lastBacklog = 0, 0
	l.lastVisit = 0
	l.holding = false
	l.hold.Stop()
	l.loss.Stop()
	l.rtx.Stop()
	l.last = token{Rtr: l.last.Rtr[:0], Age: l.last.Age[:0], Lost: l.last.Lost[:0], Old: l.last.Old[:0]}
	if l.Ctx.Logging() {
		l.Ctx.Logf("ring %08x: members %v", id, members)
	}
	switch {
	case l.cur.leader() == l.self:
		l.tok = token{Ring: id, Type: tokRecovery, Seq: 1, Busy: true, Rtr: l.tok.Rtr[:0], Age: l.tok.Age[:0], Lost: l.tok.Lost[:0], Old: l.tok.Old[:0]}
		l.handleToken(true)
	case l.hasStash && l.stash.Ring == id && l.stashFrom == l.cur.prev():
		l.hasStash = false
		l.stash.copyTo(&l.tok)
		l.handleToken(false)
	}
	l.setBuf()
}

// leaveRing: the node is in no ring any more (it left its groups, or its
// site view does not hold it). It delivers what it can and drops the rest.
func (l *Layer) leaveRing() {
	if l.cur == nil {
		return
	}
	l.finishOld()
	if !l.cur.recovering {
		l.old = l.cur
		l.finishOld()
	} else {
		l.cur.win.clear()
	}
	l.cur = nil
	l.hold.Stop()
	l.loss.Stop()
	l.rtx.Stop()
	l.holding = false
	l.setBuf()
	l.heldViewsGo()
}

// finishOld delivers the old ring's messages still held, in order (what is
// missing is skipped and counted as lost), and drops the old ring.
func (l *Layer) finishOld() {
	o := l.old
	if o == nil {
		return
	}
	l.deliverUpTo(&o.win, o.win.highest)
	o.win.clear()
	l.old = nil
	l.setBuf()
}

// startRing: the first regular token of a new ring. The old ring's
// messages go up first; then the new ring's.
func (l *Layer) startRing() {
	r := l.cur
	l.finishOld()
	l.heldViewsGo()
	r.recovering = false
	if r.replaced {
		d := int64(l.Ctx.Now().Sub(r.since))
		l.c.Recoveries.Inc()
		l.c.RecoveryNs.Add(d)
		l.c.RecoveryMax.Max(d)
	}
}

// recoveryStep is a member's work on a recovery token: for the old ring it
// comes from, raise the highest link_seq, mark what the token says is lost,
// answer the requests it can, and ask for what it misses; for every other
// request, count that it passed one more member that lacks it, and declare
// it lost when every other member has.
func (l *Layer) recoveryStep() {
	r, tok, o := l.cur, &l.tok, l.old
	others := uint32(len(r.members) - 1)
	if o != nil {
		tok.SiteLTS = max(tok.SiteLTS, o.siteLTS)
		if !slices.ContainsFunc(tok.Old, func(x oldRing) bool { return x.Ring == o.id }) && len(tok.Old) < maxOldRings {
			tok.Old = append(tok.Old, oldRing{Ring: o.id, High: o.win.highest})
			tok.Changed = true
		}
	}
	sent := 0
	for i := range tok.Old {
		e := &tok.Old[i]
		mine := o != nil && e.Ring == o.id
		if mine {
			w := &o.win
			if w.highest > e.High {
				e.High, tok.Changed = w.highest, true
			}
			w.highest = e.High
			for _, s := range e.Lost {
				if !w.has(s) && w.fits(s) {
					w.put(s, entry{lost: true})
				}
			}
		}
		keep := e.Rtr[:0]
		for _, q := range e.Rtr {
			if q.Passed > others {
				// Lost (no member of the new ring has it), but e.Lost
				// was full: the request goes round once more as lost, so
				// every member of the old ring that lacks it skips it.
				// Dropped, it was asked again for good and the recovery
				// looped once more than max_rtr packets were lost.
				if mine && !o.win.has(q.Seq) && o.win.fits(q.Seq) {
					o.win.put(q.Seq, entry{lost: true})
				}
				if q.Passed++; q.Passed <= 2*others+1 {
					keep = append(keep, q)
				}
				tok.Changed = true
				continue
			}
			if mine {
				if x := o.win.get(q.Seq); x.m != nil {
					if sent < l.cfg.MemberLimit {
						l.sendPacket(x.m, x.g, flagRecovery)
						sent++
						continue
					}
					// Answered on a later visit; this member holds it, so
					// it is not lost whoever passes it next.
					q.Passed = 0
					keep = append(keep, q)
					continue
				}
			}
			q.Passed++
			if q.Passed > others && l.lose(e, q.Seq, mine) { // every member in a row lacked it
				continue
			}
			keep = append(keep, q)
		}
		e.Rtr = keep
		if !mine {
			continue
		}
		w := &o.win
		for s := w.aru + 1; s <= e.High && len(e.Rtr) < l.cfg.MaxRtr; s++ {
			if w.has(s) || slices.ContainsFunc(e.Rtr, func(q rtrReq) bool { return q.Seq == s }) {
				continue
			}
			tok.Changed = true
			if others == 0 {
				l.lose(e, s, true)
				continue
			}
			e.Rtr = append(e.Rtr, rtrReq{Seq: s, Passed: 1})
		}
		if w.aru < e.High {
			tok.Busy = true
		}
		if !l.cfg.Safe {
			l.deliverUpTo(w, w.aru)
		}
	}
	l.c.RecoveryRetrans.Add(int64(sent))
	l.setBuf()
}

// lose records on the recovery entry e that seq is lost (no member of the
// new ring has it), and marks it so at this member if it came from that
// ring. It reports whether e.Lost holds seq (false: the list was full).
func (l *Layer) lose(e *oldRing, seq uint32, mine bool) bool {
	l.tok.Changed = true
	listed := contains(e.Lost, seq)
	if !listed && len(e.Lost) < l.cfg.MaxRtr {
		e.Lost = append(e.Lost, seq)
		listed = true
	}
	if mine && !l.old.win.has(seq) && l.old.win.fits(seq) {
		l.old.win.put(seq, entry{lost: true})
	}
	return listed
}
