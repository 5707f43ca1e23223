package layertest

import (
	"math/rand/v2"

	"github.com/layercast/layercast/event"
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
