package tests

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	_ "github.com/layercast/layercast/layers/all"
	"github.com/layercast/layercast/transport/sim"
)

// triangle joins sites 1..n pairwise by WAN links of 30-80 ms with loss.
func wanMesh(n int, loss string) map[[2]int]sim.Link {
	out := map[[2]int]sim.Link{}
	lat := []time.Duration{30, 80, 55, 40, 65, 70}
	i := 0
	for a := 1; a <= n; a++ {
		for b := a + 1; b <= n; b++ {
			l := sim.Link{Latency: lat[i%len(lat)] * time.Millisecond, Bandwidth: 500e3, Queue: 128e3}
			if loss != "" {
				m, err := sim.ParseLoss(loss)
				if err != nil {
					panic(err)
				}
				l.Loss = m
			}
			out[[2]int{a, b}] = l
			i++
		}
	}
	return out
}

// TestHopPruning: four sites, one node each, three groups that each leave
// a site out. The network delivers no data packet of a group to a site
// without a member of it (skip records keep the site streams whole), and
// every member delivers every message of its groups, under WAN loss.
func TestHopPruning(t *testing.T) {
	sites := map[event.NodeID]event.SiteID{1: 1, 2: 2, 3: 3, 4: 4}
	groups := map[event.GroupID][]event.NodeID{1: {1, 2, 3}, 2: {1, 4}, 3: {2, 3, 4}}
	h := newHopNet(t, "hop(link_rate=400KB)", 3, sites, wanMesh(4, "uniform:1%"), groups)
	h.castEvery(1, 1, sec(0.1), sec(3), 10*time.Millisecond)
	h.castEvery(1, 2, sec(0.105), sec(3), 10*time.Millisecond)
	h.castEvery(4, 3, sec(0.1), sec(3), 10*time.Millisecond)
	h.castEvery(2, 1, sec(0.1), sec(3), 20*time.Millisecond)
	h.net.RunUntil(sec(8))

	for g, ms := range groups {
		in := map[event.NodeID]bool{}
		for _, m := range ms {
			in[m] = true
		}
		for n := event.NodeID(1); n <= 4; n++ {
			if !in[n] && h.dataIn[n][g] != 0 {
				t.Errorf("node %v (no member of %v in its site) received %d data packets of %v", n, g, h.dataIn[n][g], g)
			}
		}
	}
	// Every member delivered every message of its groups' senders, in order.
	h.checkAll(1, []event.NodeID{1, 2}, groups[1])
	h.checkAll(2, []event.NodeID{1}, groups[2])
	h.checkAll(3, []event.NodeID{4}, groups[3])
	pruned := h.counter("pruned", 1, 2, 3, 4)
	unwanted := h.counter("data_unwanted", 1, 2, 3, 4)
	t.Logf("pruned %d, skips %d, retransmissions %d, unwanted %d", pruned, h.counter("skips_sent", 1, 2, 3, 4), h.counter("retransmissions", 1, 2, 3, 4), unwanted)
	if pruned == 0 || unwanted != 0 {
		t.Errorf("pruned %d, data_unwanted %d: want pruning and no unwanted data", pruned, unwanted)
	}
}
