package experiment

import (
	"slices"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// Whether a receiver was in the sender's view when it cast, which decides
// whether its deliveries are checked for FIFO order, is read from a member
// mask for ranks below 64 and from the view beyond: in a group of 70,
// out-of-order deliveries to members the sender's view left out (ranks 3
// and 66) are not owed and not violations on either side of 64, and those
// to members in it (ranks 1, 65 and 69) are.
func TestCollectorViewMaskPast64(t *testing.T) {
	c, _ := testCollector(t, 70, 1, 70)
	ms := c.asg.Groups[1]
	out := []event.NodeID{ms[3], ms[66]}
	in := slices.DeleteFunc(slices.Clone(ms), func(n event.NodeID) bool { return slices.Contains(out, n) })
	tx := ms[0]
	c.View(tx, &event.ViewInfo{Group: 1, ID: 1, Members: in}, 1)
	buf := make([]byte, PayloadHeader)
	c.Sent(tx, 1, 0)
	c.Sent(tx, 1, 1)
	for _, i := range []uint64{1, 0} {
		for _, rx := range []event.NodeID{out[0], out[1], ms[1], ms[65], ms[69]} {
			PutStamp(buf, Stamp{Sender: tx, Group: 1, Index: i, Sent: 2})
			c.Delivered(rx, &stack.Delivery{Group: 1, From: tx, Payload: buf}, 3)
		}
	}
	rep := c.Finish(Outcome{Spec: "x", Network: "sim", End: 4})
	if rep.NotOwed != 4 || rep.DeliveriesOfExpected != 6 || rep.DeliveriesExpected != 2*int64(len(in)-1) || rep.FIFOViolations != 3 {
		t.Errorf("not owed %d, owed delivered %d of %d, FIFO violations %d, want 4, 6 of %d, 3",
			rep.NotOwed, rep.DeliveriesOfExpected, rep.DeliveriesExpected, rep.FIFOViolations, 2*(len(in)-1))
	}
}

// testCollector is a collector for nodes nodes, each in d groups of s,
// and its scenario.
func testCollector(t *testing.T, nodes, d, s int) (*Collector, Scenario) {
	sc := Default()
	sc.Nodes, sc.GroupsPerNode, sc.GroupSize = nodes, d, s
	a, err := Assign(sc)
	if err != nil {
		t.Fatal(err)
	}
	return NewCollector(sc, a), sc
}
