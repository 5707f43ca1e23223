package layertest

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// RandomView is the next view of one of groups 1 to 4, picked by rng, for
// tests that check a layer's state through a random run of view changes:
// each of nodes 1 to 12 is a member with chance 2/3 (node 1 with chance
// 13/15, so it is removed and re-admitted now and then), and each member is
// listed as newly joined with chance 1/6. ids holds each group's last view
// id and is advanced.
func RandomView(rng *rand.Rand, ids map[event.GroupID]uint64) *event.ViewInfo {
	grp := event.GroupID(1 + rng.IntN(4))
	ids[grp]++
	v := &event.ViewInfo{Group: grp, ID: ids[grp]}
	for n := event.NodeID(1); n <= 12; n++ {
		if rng.IntN(3) > 0 || (n == 1 && rng.IntN(5) > 0) {
			v.Members = append(v.Members, n)
		}
	}
	for _, n := range v.Members {
		if rng.IntN(6) == 0 {
			v.Joined = append(v.Joined, n)
		}
	}
	return v
}

// RandomViews is the index test fifo and reliable share: for seeds 1 to 20,
// a one-node cluster (stack from mk) goes through 60 random views
// (RandomView); after each, cast (if set) may feed the node packets, the
// network runs 1 ms, and check must hold for every (group, node) pair of
// groups 0 to 5 and nodes 0 to 13 (a layer's per-packet index against its
// maps, say). mk is called once per seed, before its run.
func RandomViews(t *testing.T, mk func() []stack.Entry, cast func(c *Cluster, v *event.ViewInfo), check func(g event.GroupID, n event.NodeID) error) {
	t.Helper()
	for seed := uint64(1); seed <= 20; seed++ {
		c := New(t, sim.Config{Seed: seed, Latency: time.Millisecond}, 1, mk)
		c.Lax = true
		rng := rand.New(rand.NewPCG(seed, 7))
		ids := map[event.GroupID]uint64{}
		for step := 0; step < 60; step++ {
			v := RandomView(rng, ids)
			c.Stacks[1].InstallView(v)
			if cast != nil {
				cast(c, v)
			}
			c.Net.Run(time.Millisecond)
			for g := event.GroupID(0); g <= 5; g++ {
				for n := event.NodeID(0); n <= 13; n++ {
					if err := check(g, n); err != nil {
						t.Fatalf("seed %d step %d: (%v, %v): %v", seed, step, g, n, err)
					}
				}
			}
		}
	}
}
