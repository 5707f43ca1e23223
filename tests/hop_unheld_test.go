package tests

import "testing"

// TestHopNewRepresentativeDropsWhatItHeldPastAGap: site 1 is n1 and n2, n1
// its representative; every node casts at rate max, with 1% loss in the
// sites. n1 numbers n2's casts n2#700-#705 as 716-721 and crashes; ring's
// recovery hands n2 717-721 but not 716 (no survivor had it). n2, taking
// over, numbered its casts on from 716 while it held and sent on n1's
// 717-721 too: the far sites took some numbers from each, and dropped n1's
// as late (33 owed deliveries missing; spread-site-soak seed 490 at rate
// max). The new representative now drops what it held past the gap and
// numbers its members' casts among it again.
func TestHopNewRepresentativeDropsWhatItHeldPastAGap(t *testing.T) {
	wantAgreedNoneUnexplained(t, siteSoak{nodes: "5", sites: [3]string{"1=1-2", "2=3-4", "3=5-5"}, seed: "490", rate: "max",
		loss: "uniform:1%", faults: []string{"crash:1@3.0s"}}.run(t))
}
