package tests

import (
	"testing"

	_ "github.com/layercast/layercast/layers/all"
)

// siteSoakSeedMax replays one run of scripts/spread-site-soak.sh at rate
// max (every node casting as fast as the stack takes it): specs/spread.stack
// on three sites, 6 s of sending, no loss inside the sites, under the
// seed's faults; it checks agreed order and every owed delivery.
func siteSoakSeedMax(t *testing.T, nodes string, sites [3]string, seed string, faults ...string) {
	t.Helper()
	kv := []string{"nodes", nodes, "groups-per-node", "1", "group-size", nodes, "seed", seed, "rate", "max",
		"duration", "6s", "drain", "5s", "loss", "none"}
	for _, f := range faults {
		kv = append(kv, "fault", f)
	}
	wantAgreedNoneUnexplained(t, spreadThreeSites(t, sites, kv...))
}

// TestHopVoidNumbersOfReadmittedRepresentativeDropped: site 2 (n4, n5) is
// cut off whole. n4, its representative, numbers 1220 to 1235 of the site's
// stream in their ring, but they wait in the ring's queue for the token when
// membership removes both. Each comes back alone, n5 first; when n4 is
// readmitted its ring sends those casts in the new ring, after n5 has
// installed the view where n4 represents the site again. n4 drops them as
// void and numbers 1220 on again from n5's word, but n5 had taken the void
// ones and took n4's new ones as copies (14 owed deliveries missing at n5).
// A member that told a representative new to its site where the stream
// stands now takes none of that representative's numbers of the stream
// until its answer.
func TestHopVoidNumbersOfReadmittedRepresentativeDropped(t *testing.T) {
	siteSoakSeedMax(t, "6", [3]string{"1=1-3", "2=4-5", "3=6-6"}, "59",
		"crash:6@2.1s", "partition:4,5@1.1s", "heal@4.2s")
}
