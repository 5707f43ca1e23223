package tokenring_test

import (
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/transport/sim"
)

// Pulls for packets cached in other partitions are spread over their
// members (each node pulls from its counterpart), not sent to the
// partition leaders: in a 25-node region of 5 partitions under 1% loss,
// no node answers more than twice the pulls the median node answers. Sent
// to the leaders, the busiest leader answered 27 times the median node,
// and at line rate the tokens waited in the leaders' receive queues.
func TestPullsSpreadOverPartitions(t *testing.T) {
	c := cluster(t, sim.Config{Seed: 1, Latency: time.Millisecond, Jitter: 50 * time.Microsecond, Loss: sim.Uniform{P: 0.01}}, 25, nil)
	views := []*event.ViewInfo{oneGroup(25)}
	installStatic(c, views)
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	const sender = 12
	c.CastLoop(sender, 1, 4000, 500*time.Microsecond, 100, sent)
	c.Net.Run(5 * time.Second)
	c.CheckExactlyOnce(views, sent, true)
	var pulled []int64
	for _, id := range c.All() {
		if id != sender {
			pulled = append(pulled, c.Counter("tokenring", "pulled", id))
		}
	}
	slices.Sort(pulled)
	median, most := pulled[len(pulled)/2], pulled[len(pulled)-1]
	t.Logf("packets sent for pulls per node (sender left out): %v", pulled)
	if median == 0 || most > 2*median {
		t.Errorf("pull answers per node: median %d, most %d; want the most at most twice the median (pulls spread over partitions' members)", median, most)
	}
}
