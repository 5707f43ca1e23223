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
	const sender = 12
	views, sent := castOneGroup(c, 25, sender, 4000, 500*time.Microsecond, 100)
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

// A node whose counterpart in another partition crashed (a static
// membership keeps it, so only its ring neighbours learn it is gone) asks
// the partition's next member once two pulls went unanswered: every
// survivor still delivers every message. 10 nodes, 2 partitions ({n1, n3,
// n5, n7, n9} and {n2, n4, n6, n8, n10}): n4 crashes, n3's counterpart.
// Without moving on, n3 delivered 6 of the 300 casts.
func TestPullsLeaveCrashedCounterpart(t *testing.T) {
	c := cluster(t, sim.Config{Seed: 3, Latency: time.Millisecond, Jitter: 50 * time.Microsecond, Loss: sim.Uniform{P: 0.03}}, 10, nil)
	v := oneGroup(10)
	installStatic(c, []*event.ViewInfo{v})
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.CastLoop(10, 1, 300, 2*time.Millisecond, 100, sent)
	c.Net.After(100*time.Millisecond, func() { c.Net.Crash(4) })
	c.Net.Run(6 * time.Second)
	for _, rx := range c.All() {
		if rx == 4 || rx == 10 {
			continue
		}
		if got := len(c.Got[rx][1][10]); got != int(sent[1][10]) {
			t.Errorf("n%d delivered %d of n10's %d casts, want all", rx, got, sent[1][10])
		}
	}
}
