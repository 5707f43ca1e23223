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
// each member last joined its group (Layer.joinedIn).
//
// A packet carries the view its sender last joined the group in (the
// header's group join). This is the rule tokenring and the layers above
// (fifo) agree on for a sender gms removed and readmitted: fifo drops a
// sender's state, with whatever it holds, at the view that readmits it. A
// receiver that learns of the removal and readmission late, in one batch,
// may have had the readmitted sender's new casts first; handed up then,
// fifo held them under the old state and dropped them with it, and the
// region, whose caches had them, never sent them again (qsm-gms soak seeds
// 30 and 96). So a packet whose group join is past the receiver's view of
// the group is not handed up, nor recorded: the region recovers it for the
// receiver once it has the view, as reliable does with a cast from a view
// it has not installed. One whose group join is before the sender's last
// join the receiver knows of was cast in the earlier membership, and is
// not owed.
//
// A join the views do not list (Joined) is bounded from below: a member
// new since the previous view joined after it, and one present in the
// first view this node has of the group (its own (re)join) is unknown (0),
// so a receiver never takes a packet of the sender's current membership
// for an earlier one; the sender's own join is the first view it has, at
// or after the real one, so a receiver at most waits for a view.
func (l *Layer) noteViews(nb *event.Neighbourhood) {
	for g, v := range nb.Views {
		prev := l.gviews[g]
		if prev != nil && prev.ID == v.ID {
			continue
		}
		for _, m := range v.Members {
			k := groupMember{g, m}
			switch {
			case slices.Contains(v.Joined, m), m == l.self && (prev == nil || !prev.Has(m)):
				l.joinedIn[k] = v.ID
			case prev != nil && !prev.Has(m):
				l.joinedIn[k] = prev.ID + 1
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
}
