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
