package tokenring

import (
	"slices"

	"github.com/layercast/layercast/event"
)

// groupMember names a member of a group.
type groupMember struct {
	g event.GroupID
	n event.NodeID
}

// noteViews records, for the group views that changed, the view in which
// each member last joined its group (Layer.joinedIn), and returns the
// nodes that joined or rejoined one of the node's groups in them: others,
// and the node itself if readmitted to a group it had a view of.
//
// A packet carries its sender's view of the group when it numbered the
// cast (the header's group view). This is the rule tokenring and the layers above
// (fifo) agree on for a sender gms removed and readmitted: fifo drops a
// sender's state, with whatever it holds, at the view that readmits it. A
// receiver that learns of the removal and readmission late, in one batch,
// may have had the readmitted sender's new casts first; handed up then,
// fifo held them under the old state and dropped them with it, and the
// region, whose caches had them, never sent them again (qsm-gms soak seeds
// 30 and 96). So a packet of a view past the receiver's view of the group
// is not handed up, nor recorded: the region recovers it for the receiver
// once it has the view, as reliable does with a cast from a view it has
// not installed. One of a view before the sender's last (re)join, or the
// receiver's own, was cast in an earlier membership, and is not owed: a
// receiver readmitted to a region made anew (same id, same view id) took
// a peer's packet still in flight, numbered before the readmission, for
// the start of the peer's stream, and fifo waited for casts it was never
// owed (qsm-gms soak seed 162).
//
// A join the views do not list (Joined) is bounded from below: a member
// new since the previous view joined after it, and one present in the
// first view this node has of the group (its own (re)join) is unknown (0),
// so a receiver never takes a packet of the sender's current membership
// for an earlier one; the sender's own join is the first view it has, at
// or after the real one, so a receiver at most waits for a view.
//
// A sender treats a member of a region that (re)joined one of its groups
// as a newcomer to the region (install), as if the region's view had
// brought it; readmitted itself, it begins a new stretch in every region,
// as fifo above every member starts its stream afresh at the view that
// readmits it, from the first cast numbered in that view.
func (l *Layer) noteViews(nb *event.Neighbourhood) map[event.NodeID]bool {
	var joined map[event.NodeID]bool
	for g, v := range nb.Views {
		prev := l.gviews[g]
		if prev != nil && prev.ID == v.ID {
			continue
		}
		for _, m := range v.Members {
			k := groupMember{g, m}
			was := l.joinedIn[k]
			switch {
			case slices.Contains(v.Joined, m), m == l.self && (prev == nil || !prev.Has(m)):
				l.joinedIn[k] = v.ID
			case prev != nil && !prev.Has(m):
				l.joinedIn[k] = prev.ID + 1
			}
			if l.joinedIn[k] != was && prev != nil {
				if joined == nil {
					joined = map[event.NodeID]bool{}
				}
				joined[m] = true
			}
		}
		if prev != nil {
			for _, m := range prev.Members {
				if !v.Has(m) {
					delete(l.joinedIn, groupMember{g, m})
				}
			}
		}
		l.gviews[g] = v
	}
	for g, prev := range l.gviews {
		if nb.Views[g] == nil {
			for _, m := range prev.Members {
				delete(l.joinedIn, groupMember{g, m})
			}
			delete(l.gviews, g)
		}
	}
	return joined
}

// viewOf is the id of the node's view of g (0: none).
func (l *Layer) viewOf(g event.GroupID) uint64 {
	if l.nb == nil {
		return 0
	}
	if v := l.nb.Views[g]; v != nil {
		return v.ID
	}
	return 0
}

// owed reports whether a cast of group g from s, numbered in view gview,
// is owed to this node: it was cast after both last joined g.
func (l *Layer) owed(g event.GroupID, s event.NodeID, gview uint32) bool {
	v := uint64(gview)
	return v >= l.joinedIn[groupMember{g, s}] && v >= l.joinedIn[groupMember{g, l.self}]
}
