package sim

import (
	"testing"

	"github.com/layercast/layercast/event"
)

// TestDropHookSeesEveryDrop: the drop hook is told of each drop the
// network counts, with the packet's bytes and the reason.
func TestDropHookSeesEveryDrop(t *testing.T) {
	n := New(Config{Seed: 1, Loss: Uniform{P: 0.5}})
	a := n.AddNode(1)
	n.AddNode(2)
	got := map[string]int64{}
	n.SetDropHook(func(from, to event.NodeID, g event.GroupID, pkt []byte, reason string) {
		if from != 1 || to != 2 || len(pkt) != 3 || pkt[1] != 7 {
			t.Errorf("drop %v->%v %v %s", from, to, pkt, reason)
		}
		got[reason]++
	})
	for i := 0; i < 200; i++ {
		a.Send(2, []byte{0, 7, 0})
	}
	n.Partition([]event.NodeID{1}, []event.NodeID{2})
	for i := 0; i < 10; i++ {
		a.Send(2, []byte{0, 7, 0})
	}
	n.Run(0)
	st := n.Stats()
	if got[DropLoss] != st.Dropped || st.Dropped == 0 || got[DropPartition] != st.PartitionDrops || st.PartitionDrops != 10 {
		t.Errorf("hook saw %v, stats dropped %d by loss, %d by partition", got, st.Dropped, st.PartitionDrops)
	}
}
