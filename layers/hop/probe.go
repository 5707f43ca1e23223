package hop

import (
	"time"

	"github.com/layercast/layercast/event"
)

// A link declared down (retry limit or silence) was down for good before
// (until the far site's representative changed), so a WAN link that failed
// for a while and came back was never used again: its two sites stayed
// routed around it. Now the representative that declared it down probes
// the far representative every probeEvery (a quarter of dead_after). A
// three-way exchange (ask, answer, confirm: probeHdr) tells each end that
// both directions carry; each then clears the link from its own down mask
// and from the far site's, rebuilds its trees (the link is new: fresh
// sequence numbers, and what the far site lacks is resent from what is
// kept) and says so in its next heartbeat. Heartbeats carry a site's whole
// down mask, which every site takes as it comes, so the others route over
// the link again too.
//
// The interval does not back off. A probe is one small control packet,
// but a link found late after a heal costs a great deal: while it stays
// down, everything between its two sites crosses a third site's links,
// which then carry two sites' catch-up at once on top of new traffic. It
// backed off to 8 x dead_after: in a three-way split healed 7.9 s after it
// began, the link between sites 2 and 3 came back 4.4 s after the heal
// (probes at 3 s and then 6 s), site 1's two links carried both catch-ups,
// and 5 s after sending stopped site 2 still lacked 78 of site 3's
// messages (spread-site-soak threeway seed 101 at rate max).

// probeEvery is how often a representative probes a link it declared down.
func (l *Layer) probeEvery() time.Duration { return l.cfg.DeadAfter / 4 }

// startProbing arms the probe of the link to site s (declared down).
func (l *Layer) startProbing(s event.SiteID) {
	if l.probeT[s] == nil {
		l.probeT[s] = l.Ctx.NewTimer(func() { l.onProbeTimer(s) })
	}
	l.probeT[s].Reset(l.probeEvery())
}

// onProbeTimer probes the link to s while it is down and s is live.
func (l *Layer) onProbeTimer(s event.SiteID) {
	if !l.isRep || l.downs[l.me]&(1<<s) == 0 || l.live&(1<<s) == 0 || l.reps[s] == event.NoNode {
		return
	}
	l.sendProbe(s, probeAsk)
	l.c.Probes.Inc()
	l.probeT[s].Reset(l.probeEvery())
}

func (l *Layer) sendProbe(s event.SiteID, stage byte) {
	p := probeHdr{Site: l.me, Stage: stage, Down: l.downs[l.me] & l.inView}
	m := l.Ctx.NewMessage()
	p.put(m.Append(probeSize))
	l.Ctx.Down(&event.Event{Kind: event.Send, Peer: l.reps[s], Control: true, Msg: m})
}

// onProbe takes a probe from the representative of another live site.
func (l *Layer) onProbe(from event.NodeID, b []byte) {
	p, err := parseProbe(b)
	if err != nil {
		l.c.Malformed.Inc()
		return
	}
	s := p.Site
	if !l.isRep || s == l.me || l.reps[s] != from || l.live&(1<<s) == 0 {
		l.c.Foreign.Inc()
		return
	}
	switch p.Stage {
	case probeAsk:
		if l.downs[l.me]&(1<<s) != 0 && l.me < s {
			// Both ends declared the link down and probe it: only the
			// lower site's exchange runs. With both, each end brought the
			// link up twice, and the second time restarted a link the far
			// end already numbered on: its first link seqs were taken as
			// copies of the first link's, and those messages were lost.
			return
		}
		l.sendProbe(s, probeAnswer)
	case probeAnswer:
		l.linkUp(s)
		l.sendProbe(s, probeConfirm)
	case probeConfirm:
		l.linkUp(s)
	}
}

// linkUp brings the link to s up again: both directions carry. The link
// starts afresh at both ends, even one that had not declared it down (its
// old link's numbers mean nothing to the far end's new one).
func (l *Layer) linkUp(s event.SiteID) {
	if l.downs[l.me]&(1<<s) != 0 {
		l.c.LinksUp.Inc()
		if l.Ctx.Logging() {
			l.Ctx.Logf("link to site %d (representative %v) up again: it answered a probe", s, l.reps[s])
		}
	}
	wasDown := l.downs[l.me]&(1<<s) != 0
	l.downs[l.me] &^= 1 << s
	l.downs[s] &^= 1 << l.me
	if lk := l.links[s]; lk != nil && wasDown {
		// A stale one: the far end starts afresh too. Not one this
		// node already brought up: when both ends probe, an answer or
		// a confirmation can come to an end whose link is up again
		// already, and starting it afresh once more, while the far end
		// kept the one it had, the far end took the new link's first
		// numbers as copies of the old one's and dropped them (spread-
		// site-soak threeway seed 105: site 2's 476-478 never reached
		// site 3, whose stream of site 2 stopped there for good: 5,685
		// owed deliveries missing).
		lk.close()
		l.links[s] = nil
	}
	if wasDown {
		// What was sent on the old one may never have come: a far
		// representative readmitted behind a cut was resent each stream
		// (resend, as to a new representative) on a link that was down,
		// and, up again, from its own stale ARU only; relaying that tStart
		// to a site below it that stayed live, it skipped what that site
		// lacked (splitfreeze seed 411 at rate max: site 3 skipped site
		// 1's 620-644). Resent as to a new representative.
		for src := range l.repNew {
			l.repNew[src] |= 1 << s
		}
	}
	l.rebuild()
	l.onBeat() // tell every site at once
}
