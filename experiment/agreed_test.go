package experiment

import (
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
		var o orderLog
		o.on, o.seqs = true, map[[2]uint32][]uint64{}
		for rx, l := range c.lists {
			for _, i := range l {
				o.record(7, rx, 1, i)
			}
		}
		if got := o.violations(); got != c.want {
			t.Errorf("%s: violations() = %d, want %d", c.name, got, c.want)
		}
	}
	var off orderLog
	off.record(7, 2, 1, 1)
	if off.violations() != 0 {
		t.Errorf("an orderLog that is off counted violations")
	}
}
