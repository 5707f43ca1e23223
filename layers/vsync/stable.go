package vsync

import (
	"github.com/layercast/layercast/event"
)

// Stability (JGroups STABLE): while this node keeps delivered messages,
// it gossips every stable_interval how far it delivered every member's
// stream in the current view; a kept message every member has delivered
// cannot be asked for in a flush and is let go.

// gossipTick sends this node's gossip and re-arms while something is kept
// here, or was delivered since the last gossip (its sender keeps it).
func (l *Layer) gossipTick(g *group) {
	if g.view == nil || !g.view.Has(l.self) || len(g.kept) == 0 && !g.dirty {
		g.gossiping = false
		return
	}
	g.dirty = false
	s := stable{View: g.view.ID, Entries: make([]entry, 0, g.view.Size())}
	for _, m := range g.view.Members {
		hi := g.ownSeq
		if m != l.self {
			hi = 0
			if p := g.peers[m]; p != nil {
				hi = p.dlv
			}
		}
		s.Entries = append(s.Entries, entry{Node: uint32(m), Hi: hi})
	}
	body := l.wc.Encode(&s)
	msg := l.Ctx.NewMessage()
	msg.SetPayload(body)
	msg.Prepend(1)[0] = tStable
	l.c.Gossips.Inc()
	l.Ctx.Down(&event.Event{Kind: event.Cast, Group: g.id, Control: true, Msg: msg})
	g.gossip.Reset(l.cfg.StableInterval)
}

// stableUp records a member's gossip for the current view and lets go of
// what every member has delivered.
func (l *Layer) stableUp(g *group, from event.NodeID, s *stable) {
	if g.view == nil || s.View != g.view.ID || !g.view.Has(from) || from == l.self {
		return
	}
	if g.stab == nil {
		g.stab = map[event.NodeID][]entry{}
	}
	g.stab[from] = s.Entries
	for sender, q := range g.kept {
		low := ^uint32(0)
		for _, m := range g.view.Members {
			if m == sender {
				continue
			}
			var hi uint32
			switch m {
			case l.self:
				if p := g.peers[sender]; p != nil {
					hi = p.dlv
				}
			default:
				for _, e := range g.stab[m] {
					if event.NodeID(e.Node) == sender {
						hi = e.Hi
						break
					}
				}
			}
			low = min(low, hi)
		}
		g.released[sender] = max(g.released[sender], low)
		for q.Len() > 0 && q.At(0).seq <= low {
			l.unkeep(q)
			l.c.Stable.Inc()
		}
	}
}
