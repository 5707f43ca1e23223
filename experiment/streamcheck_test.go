package experiment_test

import (
	"testing"

	"github.com/layercast/layercast/experiment"
)

// Issue 9 item 6: one delivery checker for the collector and the UDP
// worker. A duplicate is a second delivery of an index, ever; a FIFO
// violation a delivery below one made since the last restart; a gap given
// up (the stack skipped 2) is no violation, and a rejoin restarts order.
func TestStreamCheck(t *testing.T) {
	type step struct {
		index     uint64
		checked   bool
		restart   bool // Restart before this delivery
		dup, late bool
	}
	var s experiment.StreamCheck
	for i, st := range []step{
		{index: 0, checked: true},
		{index: 1, checked: true},
		{index: 3, checked: true},             // 2 given up: no violation
		{index: 2, checked: true, late: true}, // arrives after all
		{index: 3, checked: true, dup: true},
		{index: 9, checked: false},            // not owed: no reference
		{index: 5, checked: true},             // so 5 is in order
		{index: 4, checked: true, late: true}, // below 5
		{index: 7, checked: true, restart: true},
		{index: 6, checked: true, late: true},
		{index: 1, checked: true, restart: true, dup: true}, // delivered before the restart
		{index: 0, checked: true, restart: true, dup: true},
		{index: 8, checked: true, restart: true}, // after a rejoin, anything goes first
	} {
		if st.restart {
			s.Restart()
		}
		dup, late := s.Deliver(st.index, st.checked)
		if dup != st.dup || late != st.late {
			t.Errorf("step %d: Deliver(%d, %v) = %v, %v; want %v, %v", i, st.index, st.checked, dup, late, st.dup, st.late)
		}
	}
}
