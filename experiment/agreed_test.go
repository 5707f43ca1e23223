package experiment

import (
	"reflect"
	"testing"

	"github.com/layercast/layercast/event"
)

// TestOrderLogViolations: the agreed-order checker counts a delivery that
// comes after one the reference receiver delivered later, and nothing for
// receivers that agree (missing messages are not judged).
func TestOrderLogViolations(t *testing.T) {
	cases := []struct {
		name  string
		lists map[event.NodeID][]uint64 // receiver -> indexes from sender 1
		want  int64
	}{
		{"same order", map[event.NodeID][]uint64{2: {1, 2, 3}, 3: {1, 2, 3}}, 0},
		{"a gap is no violation", map[event.NodeID][]uint64{2: {1, 2, 3, 4}, 3: {1, 3, 4}}, 0},
		{"one swapped pair", map[event.NodeID][]uint64{2: {1, 2, 3, 4}, 3: {1, 3, 2, 4}}, 1},
		{"reversed", map[event.NodeID][]uint64{2: {1, 2, 3, 4}, 3: {4, 3, 2, 1}}, 3},
	}
	for _, c := range cases {
		o := orderLogOf(c.lists)
		if got := o.violations(nil); got != c.want {
			t.Errorf("%s: violations() = %d, want %d", c.name, got, c.want)
		}
	}
	var off orderLog
	off.record(7, 2, 1, 1)
	if off.violations(nil) != 0 {
		t.Errorf("an orderLog that is off counted violations")
	}
}

// TestOrderLogCrashedReceivers: a receiver crashed at the end is judged
// against the survivors' order and is never the reference. What only it
// delivered (its own last casts, which the survivors skipped) is no
// violation; delivering what the survivors delivered in another order is.
// Before, a crashed receiver that delivered most was the reference: the
// survivors' disagreement after it crashed went unseen (0 counted), and
// its own disagreement counted once per survivor.
func TestOrderLogCrashedReceivers(t *testing.T) {
	const (
		s1  = event.NodeID(2) // survivors
		s2  = event.NodeID(3)
		c   = event.NodeID(4) // crashed
		own = 100             // c's last casts: indexes from sender c no survivor received
	)
	type d struct {
		tx event.NodeID
		i  uint64
	}
	cases := []struct {
		name  string
		lists map[event.NodeID][]d
		want  int64
	}{
		{"crashed delivered a prefix, then its own last casts", map[event.NodeID][]d{
			s1: {{1, 1}, {1, 2}, {1, 3}},
			s2: {{1, 1}, {1, 2}, {1, 3}},
			c:  {{1, 1}, {c, own}, {1, 2}, {c, own + 1}, {c, own + 2}, {c, own + 3}},
		}, 0},
		{"survivors disagree after the crash; crashed delivered most", map[event.NodeID][]d{
			s1: {{1, 1}, {1, 2}, {1, 3}},
			s2: {{1, 1}, {1, 3}, {1, 2}},
			c:  {{1, 1}, {c, own}, {c, own + 1}, {c, own + 2}, {c, own + 3}},
		}, 1},
		{"crashed delivered common messages out of order", map[event.NodeID][]d{
			s1: {{1, 1}, {1, 2}, {1, 3}},
			s2: {{1, 1}, {1, 2}, {1, 3}},
			c:  {{1, 2}, {1, 1}, {c, own}, {c, own + 1}, {c, own + 2}},
		}, 1},
		{"every receiver crashed: the one that delivered most is the reference", map[event.NodeID][]d{
			c:     {{1, 1}, {1, 2}, {1, 3}},
			c + 1: {{1, 2}, {1, 1}},
		}, 1},
		{"a duplicate is counted apart, not as out of order", map[event.NodeID][]d{
			s1: {{1, 1}, {1, 2}, {1, 3}},
			s2: {{1, 1}, {1, 2}, {1, 1}, {1, 3}},
		}, 0},
	}
	crashed := func(n event.NodeID) bool { return n >= c }
	for _, tc := range cases {
		var o orderLog
		o.on, o.seqs = true, map[[2]uint32][]uint64{}
		for rx, l := range tc.lists {
			for _, x := range l {
				o.record(7, rx, x.tx, x.i)
			}
		}
		if got := o.violations(crashed); got != tc.want {
			t.Errorf("%s: violations(crashed) = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// The checker names, per member out of order, where its order first
// differs from the reference's over the messages both delivered: a message
// the member lacks (a gap) is skipped, not taken as the difference.
func TestOrderLogExamples(t *testing.T) {
	cases := []struct {
		name  string
		lists map[event.NodeID][]uint64 // receiver -> indexes from sender 1
		want  []AgreedExample
	}{
		{"in order", map[event.NodeID][]uint64{2: {1, 2, 3}, 3: {1, 3}}, nil},
		{"one swapped pair", map[event.NodeID][]uint64{2: {1, 2, 3, 4}, 3: {1, 3, 2, 4}}, []AgreedExample{
			{Group: 7, Member: 3, Reference: 2, Position: 1, Message: MessageID{1, 3}, ReferenceMessage: MessageID{1, 2},
				MemberDelivery: 1, ReferenceDelivery: 1, Violations: 1}}},
		// n3 lacks 2 and has 9 that n2 never delivered: over {1, 3, 4, 5}
		// n3 has 1 3 5 4, n2 1 3 4 5
		{"past a gap and a message only one delivered", map[event.NodeID][]uint64{2: {1, 2, 3, 4, 5}, 3: {9, 1, 3, 5, 4}}, []AgreedExample{
			{Group: 7, Member: 3, Reference: 2, Position: 2, Message: MessageID{1, 5}, ReferenceMessage: MessageID{1, 4},
				MemberDelivery: 3, ReferenceDelivery: 3, Violations: 1}}},
		{"two members out of order, by member", map[event.NodeID][]uint64{2: {1, 2, 3, 4}, 4: {4, 3, 2, 1}, 3: {2, 1, 3, 4}}, []AgreedExample{
			{Group: 7, Member: 3, Reference: 2, Position: 0, Message: MessageID{1, 2}, ReferenceMessage: MessageID{1, 1},
				MemberDelivery: 0, ReferenceDelivery: 0, Violations: 1},
			{Group: 7, Member: 4, Reference: 2, Position: 0, Message: MessageID{1, 4}, ReferenceMessage: MessageID{1, 1},
				MemberDelivery: 0, ReferenceDelivery: 0, Violations: 3}}},
	}
	for _, c := range cases {
		o := orderLogOf(c.lists)
		n, ex := o.check(nil)
		if n != o.violations(nil) {
			t.Errorf("%s: check counts %d, violations %d", c.name, n, o.violations(nil))
		}
		if !reflect.DeepEqual(ex, c.want) {
			t.Errorf("%s: examples %+v, want %+v", c.name, ex, c.want)
		}
		var sum int64
		for _, e := range ex {
			sum += e.Violations
		}
		if sum != n {
			t.Errorf("%s: examples count %d violations, the checker %d", c.name, sum, n)
		}
	}
}

// orderLogOf is the log of group 7 when each member delivered sender n1's
// messages in the order its list gives.
func orderLogOf(lists map[event.NodeID][]uint64) *orderLog {
	o := &orderLog{on: true, seqs: map[[2]uint32][]uint64{}}
	for rx, l := range lists {
		for _, i := range l {
			o.record(7, rx, 1, i)
		}
	}
	return o
}
