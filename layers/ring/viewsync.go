package ring

import "github.com/layercast/layercast/event"

// Views going up, in order with the messages (the paper's extended virtual
// synchrony, section 3.3: a member delivers the old configuration's
// messages before it installs the new one).
//
// A membership change makes a new ring, which first recovers the old one;
// the old ring's messages are delivered only when the new ring starts. The
// views and neighbourhood that made the change are held until then: the
// layers above (hop, which takes a numbered cast only from the site's
// representative it knows) and the application see every message of the
// old ring under the old membership, then the new views, then the new
// ring's messages. Before, the views went up at once and the old ring's
// last messages after them: hop, already knowing the new representative,
// dropped the old one's numbered casts as foreign (spread.stack soak seed
// 85: 235 owed deliveries lost).
//
// The stack runs control events before data, so held views are let go by a
// timer of their own (upT), in a step after the old ring's messages went
// up; the new ring's messages wait for that step (deliver). In site mode a
// group's View comes before the Regions event of the same update (gms), and
// only the Regions event tells whether the ring changes: every View waits
// for the next step too, and goes up with the Regions event when it does
// not start a change.

// membershipUp passes a View or Regions event up, or holds it (see above).
func (l *Layer) membershipUp(ev *event.Event) {
	switch {
	case l.old != nil:
		l.upq = append(l.upq, *ev)
	case ev.Kind == event.View && l.siteMode:
		l.upq = append(l.upq, *ev)
		l.upT.Reset(0)
	default:
		l.passHeld()
		l.Ctx.Up(ev)
	}
}

// passHeld passes the held events up, unless an old ring still has
// messages to deliver first.
func (l *Layer) passHeld() {
	if l.old != nil {
		return
	}
	for i := range l.upq {
		l.Ctx.Up(&l.upq[i])
		l.upq[i] = event.Event{}
	}
	l.upq = l.upq[:0]
}

// releaseUp is upT's timer: the old ring's messages are up, so the held
// views go, and the current ring's messages may follow.
func (l *Layer) releaseUp() {
	l.passHeld()
	l.deliver()
}

// heldViewsGo arms the release of the held views once the old ring's
// messages have gone up (the ring started, or the node left it).
func (l *Layer) heldViewsGo() {
	if len(l.upq) > 0 && l.old == nil {
		l.upT.Reset(0)
	}
}
