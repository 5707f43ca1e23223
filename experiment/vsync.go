package experiment

import (
	"fmt"
	"slices"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
)

// viewSynchrony is the property of a stack whose members, when they
// install the same two consecutive views of a group, delivered the same
// messages in the first (layers/vsync declares it).
const viewSynchrony = compose.Property("view-synchrony")

// vset is what a node delivered in one view of a group: per sender (by
// rank in the group), how many messages and a hash of which. Delivery is
// FIFO per sender, so a count and an order-free hash of the indexes name
// the set; memory is one pair per member per view, whatever the traffic.
type vset struct {
	e []vcount // by sender rank
}

// vcount is what a node delivered of one sender in one view: n messages
// whose mixed indexes sum to h, the last of them (the highest, in FIFO
// order) index last, its low 32 bits: in the struct's padding, to name the
// messages in a report's example. Kept together, one delivery touches one
// line.
type vcount struct {
	h    uint64
	n    uint32
	last uint32
}

// lastIndex is the last index delivered (its low 32 bits), nil if none.
func (a vcount) lastIndex() *uint64 {
	if a.n == 0 {
		return nil
	}
	l := uint64(a.last)
	return &l
}

// same reports whether two counts name the same set of messages.
func (a vcount) same(b vcount) bool { return a.h == b.h && a.n == b.n }

// vsyncLog records, per (group, node) slot, a vset per view the node's
// application saw (nil for a view without the node), parallel to
// Collector.views.
type vsyncLog struct {
	sets [][]*vset
	// cur is, per slot, the counts of the slot's last view (nil if none
	// or the node is not in it): a delivery reaches them in two loads
	// rather than through the view history.
	cur [][]vcount
}

// vsyncAlways makes Finish count vsync_violations whatever the stack
// promises (tests show the checker failing a stack without flush).
var vsyncAlways bool

// viewSeen records that node slot k's application saw view v.
func (l *vsyncLog) viewSeen(k, size int, in bool) {
	if l.sets == nil {
		return
	}
	var s *vset
	l.cur[k] = nil
	if in {
		s = &vset{e: make([]vcount, size)}
		l.cur[k] = s.e
	}
	l.sets[k] = append(l.sets[k], s)
}

// delivered records a delivery at node slot k of message index from the
// sender of rank tr, in the view the node's application has.
func (l *vsyncLog) delivered(k, tr int, index uint64) {
	if l.cur == nil || l.cur[k] == nil {
		return
	}
	e := &l.cur[k][tr]
	e.n++
	e.h += mix64(index)
	e.last = uint32(index)
}

// mix64 is splitmix64's finaliser: a sum of mixed indexes tells sets of
// indexes apart.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// vsyncViolations counts, per group, the (pair of members, pair of
// consecutive views both installed, each with the member in it) where the
// two delivered different sets of messages in the first view. A member's
// own casts are not compared (a node does not deliver its own): for the
// pair (a, b), every sender but a and b.
func (c *Collector) vsyncViolations() (n int64, first string) {
	n, first, _ = c.vsyncCheck()
	return n, first
}

// vsyncCheck is vsyncViolations with the first MaxExamples violations.
func (c *Collector) vsyncCheck() (n int64, first string, ex []VsyncExample) {
	type key struct{ from, to uint64 }
	type at struct {
		node event.NodeID
		set  *vset
	}
	for gi, ms := range c.groups {
		by := map[key][]at{}
		var keys []key
		for r, node := range ms {
			k := c.moff[gi] + r
			hist, sets := c.views[k], c.vsync.sets[k]
			for i := 0; i+1 < len(hist) && i+1 < len(sets); i++ {
				if sets[i] == nil || sets[i+1] == nil {
					continue
				}
				kk := key{hist[i].v.ID, hist[i+1].v.ID}
				if _, ok := by[kk]; !ok {
					keys = append(keys, kk)
				}
				by[kk] = append(by[kk], at{node, sets[i]})
			}
		}
		slices.SortFunc(keys, func(a, b key) int {
			if a.from != b.from {
				return int(a.from - b.from)
			}
			return int(a.to - b.to)
		})
		for _, kk := range keys {
			list := by[kk]
			for i := range list {
				for j := i + 1; j < len(list); j++ {
					a, b := list[i], list[j]
					for t, tx := range ms {
						if tx == a.node || tx == b.node {
							continue
						}
						if ca, cb := a.set.e[t], b.set.e[t]; !ca.same(cb) {
							n++
							if first == "" {
								first = fmt.Sprintf("%v and %v moved together from view %d to %d of g%d but delivered %d and %d of %v's messages in view %d",
									a.node, b.node, kk.from, kk.to, gi+1, ca.n, cb.n, tx, kk.from)
							}
							if len(ex) < MaxExamples {
								ex = append(ex, VsyncExample{Group: event.GroupID(gi + 1), Member: a.node, Other: b.node,
									FromView: kk.from, ToView: kk.to, Sender: tx,
									MemberDelivered: int64(ca.n), OtherDelivered: int64(cb.n), MemberLast: ca.lastIndex(), OtherLast: cb.lastIndex()})
							}
							break
						}
					}
				}
			}
		}
	}
	return n, first, ex
}

// finishVsync sets the report's vsync_violations where the stack promises
// view synchrony (0 otherwise: not checked).
func (c *Collector) finishVsync(rep *Report) {
	if !vsyncAlways && !slices.Contains(rep.Promises, string(viewSynchrony)) {
		return
	}
	n, first, ex := c.vsyncCheck()
	rep.VsyncViolations, rep.VsyncViolationExamples = n, ex
	if n > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d view-synchrony violations; first: %s", n, first))
	}
}

// vsyncBroken is the broken-promise line for view synchrony, or "".
func vsyncBroken(r *Report) string {
	if r.VsyncViolations > 0 && slices.Contains(r.Promises, string(viewSynchrony)) {
		return fmt.Sprintf("%d pairs of members delivered different messages in a view they both moved on from (the stack gives view synchrony)", r.VsyncViolations)
	}
	return ""
}
