package tests

import (
	"testing"

	_ "github.com/layercast/layercast/layers/all"
)

// TestHopCutOffRepresentativeDeliversNotWhatOnlyItHeld: n1, the
// representative of site 1 (n1, n2), is cut off alone at 2.1 s. It had just
// numbered n2's cast n2#83 (seq 168, stamp 328), and its site's ring handed
// the cast back to it at once (ring delivers a member's own casts as soon as
// nothing before them is missing), before n2 had it. n1 took it as in its
// site and delivered it before n6#81 (stamp 328, site 3). n2 never saw it
// numbered; it took over when membership removed n1 and numbered n2#83 again
// (seq 168, stamp 343), and every other member delivered it after n6#81: 3
// deliveries out of agreed order (spread-site-soak seed 9). A
// representative now takes what it numbered into its stream, and sends it
// on, only once every member of its site says it holds it (tSeen); n1, cut
// off, never hears it, and drops it when it is readmitted.
func TestHopCutOffRepresentativeDeliversNotWhatOnlyItHeld(t *testing.T) {
	wantReplayReaches(t, siteSoak{nodes: "6", sites: [3]string{"1=1-2", "2=3-3", "3=4-6"}, seed: "9",
		faults: []string{"crash:2@4.1s", "partition:1@2.1s", "heal@4.7s"}}, "unseen_dropped",
		"n1 dropped nothing it held alone of its numbering (the run no longer cuts n1 off right after it numbered)")
}

// TestHopCrashedRepresentativeSentNotWhatOnlyItHeld: n1, the representative
// of site 1 (n1, n2), crashes at 1.2 s with every node casting as fast as
// the stack takes it. Had it sent on its links what its ring handed back
// before n2 held it (numbers 294 to 301 in one timing of this run), the far
// sites would hold numbers n2 never knew; n2, taking over, numbers its casts
// again from 294 with later stamps, and the far sites take some numbers
// from each (75 owed deliveries missing, dropped as late or as copies: so it
// went while a representative waited for its members only before delivering
// what it numbered, not before sending it on). What a representative
// numbered goes onto its links only once its members hold it.
func TestHopCrashedRepresentativeSentNotWhatOnlyItHeld(t *testing.T) {
	rep := siteSoak{nodes: "7", sites: [3]string{"1=1-2", "2=3-4", "3=5-7"}, seed: "48", rate: "max", loss: "uniform:1%",
		faults: []string{"crash:1@1.2s"}}.run(t)
	wantAgreedNoneUnexplained(t, rep)
}
