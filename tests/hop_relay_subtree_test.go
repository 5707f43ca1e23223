package tests

import "testing"

// TestHopRelayGainsALaggingChild: n3, site 2's representative, freezes from
// 1 s to 3.5 s; n4 takes over, membership removes n3 at 3.1 s and readmits
// it at 3.7 s as site 2's representative again. Sites 1 and 3 are cut
// apart from 1.2 s (both still reach site 2): site 3's stream of site 1
// stood at 96 from then on. Readmitted, n3 got site 1's stream from 175,
// where its own site stood (site 3 was not below it then). When the link
// between sites 1 and 3 went down at 4.4 s, site 1's tree ran through site
// 2, and n3, asked for site 3's lack from 97 on, held site 1's stream only
// from 162: it told site 3 to skip 97 to 161 (and site 1 to skip site 3's
// 97 to 124), though sites 1 and 3 and n3's member n4 still kept them (186
// owed deliveries missing). A representative new to its site (or a site
// admitted) is now sent a stream from where every live site stands, as a
// representative that kept its role holds it (freeStable): any of them may
// come below it later.
func TestHopRelayGainsALaggingChild(t *testing.T) {
	rep := siteSoak{nodes: "6", sites: [3]string{"1=1-2", "2=3-4", "3=5-6"}, seed: "3", dur: "10s",
		faults: []string{"freeze:3@1.0s+2.5s", "cut:1,2|5,6@1.2s", "heal@9s"}}.run(t)
	wantAgreedNoneUnexplained(t, rep)
}

// TestHopRemovedNodeHeldOff: n5, a member of site 2, freezes from 3.5 s to
// 7 s and is removed at 5.6 s (site soak, freeze mode, seed 191 at rate
// max). Woken, it is in none of its groups' views until it is readmitted at
// 7.2 s, and hop held its application off only through the groups whose
// view holds it: none, so it cast 13,120 times at rate max, alone, owed to
// nobody (its origin numbers ran from 367 to 13,486 in 0.1 s; readmitted,
// its representative refused them as a jump past max_pending until
// 36c7ae4 took a newcomer's first cast whatever its number: 96 owed
// deliveries missing). Out of every view the application is now held off
// too; readmitted, n5 casts on from 367 and every owed delivery is made.
func TestHopRemovedNodeHeldOff(t *testing.T) {
	rep := siteSoak{nodes: "9", sites: [3]string{"1=1-2", "2=3-5", "3=6-9"}, seed: "191", rate: "max", dur: "8s",
		faults: []string{"freeze:3@2.9s+1.6s", "freeze:5@3.5s+3.5s"}}.run(t)
	wantAgreedNoneUnexplained(t, rep)
	// A few casts may come before hop holds the application off: those
	// it queued below already, and one per group it was held in.
	if n := rep.Layers["hop"]["out_of_view_casts"]; n > 64 {
		t.Errorf("hop.out_of_view_casts = %d: the application cast on out of every view", n)
	}
}
