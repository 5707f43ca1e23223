package experiment

import (
	"fmt"
	"slices"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
)

// agreedOrder is the property of a stack that delivers every group's
// messages in one order at every member (layers/hop declares it).
const agreedOrder = compose.Property("agreed")

// orderLog records, per (group, receiver), the order in which the receiver
// delivered the group's messages, for the agreed-order checker. It records
// only when the run's stack promises agreed order (TrackOrder).
type orderLog struct {
	on   bool
	seqs map[[2]uint32][]uint64 // (group, receiver) -> (sender<<40 | index) in delivery order
}

// TrackOrder makes the collector record every receiver's delivery order, so
// that the report counts agreed_violations.
func (c *Collector) TrackOrder() {
	c.order.on = true
	c.order.seqs = map[[2]uint32][]uint64{}
}

func (o *orderLog) record(g event.GroupID, rx, tx event.NodeID, index uint64) {
	if o.on {
		k := [2]uint32{uint32(g), uint32(rx)}
		o.seqs[k] = append(o.seqs[k], uint64(tx)<<40|index&(1<<40-1))
	}
}

// violations counts deliveries out of agreed order. Per group the
// reference is the order of the receiver that delivered most among those
// not crashed at the end (crashed says which crashed; nil: none): the
// survivors' order. Every receiver, crashed or not, is judged against it:
// a delivery is a violation when it comes after one that the reference
// delivered later. Messages the reference did not deliver are not judged
// (a gap is no violation).
//
// A crashed receiver's deliveries must be a subsequence of the survivors'
// order up to where it stopped; what only it delivered (its own last
// casts, which no survivor received and the survivors skipped) is not
// judged. It is never the reference: a member that crashed after
// delivering more than any survivor would have made its own order the
// yardstick, so that a disagreement of its own counted once per survivor,
// and what the survivors delivered after it crashed (not in its list) was
// never compared among them at all. Only when every receiver of the group
// crashed is the one that delivered most the reference.
func (o *orderLog) violations(crashed func(event.NodeID) bool) int64 {
	n, _ := o.check(crashed)
	return n
}

// check is violations, with examples: for the first MaxExamples members
// out of order (by group, then member), where their order first differs
// from the reference's (AgreedExample).
func (o *orderLog) check(crashed func(event.NodeID) bool) (int64, []AgreedExample) {
	if !o.on {
		return 0, nil
	}
	if crashed == nil {
		crashed = func(event.NodeID) bool { return false }
	}
	type rxList struct {
		rx      event.NodeID
		crashed bool
		l       []uint64
	}
	by := map[uint32][]rxList{}
	keys := make([][2]uint32, 0, len(o.seqs))
	for k := range o.seqs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]uint32) int {
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		return int(a[1]) - int(b[1])
	})
	var groups []uint32
	for _, k := range keys {
		if len(by[k[0]]) == 0 {
			groups = append(groups, k[0])
		}
		rx := event.NodeID(k[1])
		by[k[0]] = append(by[k[0]], rxList{rx, crashed(rx), o.seqs[k]})
	}
	var n int64
	var ex []AgreedExample
	for _, g := range groups { // in order: the examples are the first ones
		lists := by[g]
		ref := -1
		for i, x := range lists {
			switch {
			case ref < 0:
				ref = i
			case x.crashed != lists[ref].crashed:
				if !x.crashed {
					ref = i // a survivor over any crashed receiver
				}
			case len(x.l) > len(lists[ref].l):
				ref = i
			}
		}
		pos := make(map[uint64]int, len(lists[ref].l))
		for i, m := range lists[ref].l {
			if _, dup := pos[m]; !dup {
				pos[m] = i // a copy delivered again (a duplicate, counted apart) keeps its first place
			}
		}
		for _, x := range lists {
			hi := -1
			var bad int64
			seen := make(map[uint64]bool, len(x.l))
			for _, m := range x.l {
				p, ok := pos[m]
				if !ok || seen[m] {
					continue // not judged, or a duplicate (counted apart)
				}
				seen[m] = true
				if p < hi {
					bad++
				}
				hi = max(hi, p)
			}
			n += bad
			if bad > 0 && len(ex) < MaxExamples {
				e := firstDifference(x.l, lists[ref].l, seen)
				e.Group, e.Member, e.Reference, e.Violations = event.GroupID(g), x.rx, lists[ref].rx, bad
				ex = append(ex, e)
			}
		}
	}
	return n, ex
}

// firstDifference is where member's delivery order first differs from
// ref's over the messages both delivered (judged: the messages of member's
// list that ref delivered), each message at its first delivery. Member
// being out of ref's order, the two orders of the same messages differ
// somewhere.
func firstDifference(member, ref []uint64, judged map[uint64]bool) AgreedExample {
	id := func(m uint64) MessageID { return MessageID{Sender: event.NodeID(m >> 40), Index: m & (1<<40 - 1)} }
	i, j := 0, 0
	seenM, seenR := map[uint64]bool{}, map[uint64]bool{}
	// next moves k to the next message of l both delivered, first time.
	next := func(l []uint64, k int, seen map[uint64]bool) int {
		for ; k < len(l); k++ {
			if m := l[k]; judged[m] && !seen[m] {
				seen[m] = true
				return k
			}
		}
		return k
	}
	for p := 0; ; p++ {
		i, j = next(member, i, seenM), next(ref, j, seenR)
		if i >= len(member) || j >= len(ref) {
			return AgreedExample{Position: -1} // the same order: not reached for a member out of order
		}
		if member[i] != ref[j] {
			return AgreedExample{Position: p, Message: id(member[i]), ReferenceMessage: id(ref[j]), MemberDelivery: i, ReferenceDelivery: j}
		}
		i, j = i+1, j+1
	}
}

// agreedBroken is the broken-promise line for agreed order, or "".
func agreedBroken(r *Report) string {
	if r.AgreedViolations > 0 && slices.Contains(r.Promises, string(agreedOrder)) {
		return fmt.Sprintf("%d deliveries out of agreed order (the stack gives agreed order)", r.AgreedViolations)
	}
	return ""
}
