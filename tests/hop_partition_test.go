package tests

import (
	"testing"

	"github.com/layercast/layercast/experiment"

	_ "github.com/layercast/layercast/layers/all"
)

// siteSoakSeed replays one run of scripts/spread-site-soak.sh: specs/spread.stack
// on three sites (the soak's WAN links), every node casting at 40/s for 6 s,
// no loss inside the sites, under the seed's faults; it checks agreed order
// and every owed delivery.
func siteSoakSeed(t *testing.T, nodes string, sites [3]string, seed string, faults ...string) {
	t.Helper()
	wantAgreedNoneUnexplained(t, siteSoakRun(t, nodes, sites, seed, faults...))
}

// siteSoakRun runs one seed of scripts/spread-site-soak.sh as siteSoakSeed
// does and returns its report.
func siteSoakRun(t *testing.T, nodes string, sites [3]string, seed string, faults ...string) *experiment.Report {
	t.Helper()
	kv := []string{"nodes", nodes, "groups-per-node", "1", "group-size", nodes, "seed", seed, "rate", "40",
		"duration", "6s", "drain", "5s", "loss", "none"}
	for _, f := range faults {
		kv = append(kv, "fault", f)
	}
	return spreadThreeSites(t, sites, kv...)
}

// TestHopSkippedNumbersNotAwaited: n1, the representative of site 1, is cut
// off alone; n2 takes over, numbers its backlog at once up to 251 and
// announces it in a heartbeat, then crashes; n1, readmitted, hears from no
// member and numbers on from 249 (its own stream; a tStart skips the far
// sites there). The far sites kept 251 from n2's heartbeat as the highest
// number announced and, with it, waited for good on 249 to 251, which
// nobody would send: agreed order stopped (seed 121: 492 owed deliveries
// missing; seed 149: 64). A tStart that skips a stream past what its
// heartbeats announced now forgets them, and a heartbeat of a numbering the
// stream moved past is not taken.
func TestHopSkippedNumbersNotAwaited(t *testing.T) {
	t.Run("seed149", func(t *testing.T) {
		siteSoakSeed(t, "6", [3]string{"1=1-2", "2=3-4", "3=5-6"}, "149",
			"crash:2@4.1s", "partition:1@2.1s", "heal@4.3s")
	})
	t.Run("seed121", func(t *testing.T) {
		siteSoakSeed(t, "9", [3]string{"1=1-2", "2=3-3", "3=4-9"}, "121",
			"crash:2@4.9s", "partition:1@2.9s", "heal@4.9s")
	})
}

// TestHopMemberBehindReadmittedRepresentative: n5, the representative of
// site 3, is cut off alone and readmitted; its member n6's views were held
// up below (ring recovers the old ring first, and n7 crashed), so n6 told
// n5 nothing within 1 s and n5 numbered on from its own stream. When n6 at
// last saw n5 as its representative it cast where it stood, which n5, no
// longer waiting, ignored: n6 waited for good on numbers n5 had dropped
// (514 owed deliveries missing). n5 now answers such a member with where
// the stream stands and what it has from there. What is left: n6's cast
// that n5 numbered alone (and delivered) reaches no other site (4 missing);
// this test checks n6's own deliveries only through the total.
func TestHopMemberBehindReadmittedRepresentative(t *testing.T) {
	rep := spreadThreeSites(t, [3]string{"1=1-1", "2=2-4", "3=5-8"},
		"nodes", "8", "groups-per-node", "1", "group-size", "8", "seed", "177", "rate", "40",
		"duration", "6s", "drain", "5s", "loss", "none",
		"fault", "crash:8@4.3s", "fault", "crash:7@2.5s", "fault", "partition:5@2.3s", "fault", "heal@4.6s")
	if rep.MissingUnexplained > 4 { // the known 4 (above); any more is a regression
		t.Errorf("%d owed deliveries missing unexplained, want at most the 4 of n6's cast n5 numbered alone", rep.MissingUnexplained)
	}
	if rep.Layers["hop"]["replayed"] == 0 {
		t.Errorf("layers.hop.replayed = 0: n5 told its member nothing")
	}
}

// TestHopReadmittedRepresentativeTakesCastsAgain: n1, the representative of
// site 1, is cut off alone; as the view left it alone its ring handed it its
// member n3's last casts, which it numbered and delivered alone. n2 took
// over and held n3's casts again until it lost the role to n1, readmitted;
// n3 cast them again to n1, which refused them as numbered already (by
// itself, alone): 64 owed deliveries missing (spread-site-soak seed 93).
// A representative readmitted after being alone now forgets what it
// numbered of its members' casts (its members' replay says what they saw
// numbered) and does not deliver again what it delivered alone.
func TestHopReadmittedRepresentativeTakesCastsAgain(t *testing.T) {
	siteSoakSeed(t, "7", [3]string{"1=1-3", "2=4-6", "3=7-7"}, "93",
		"crash:6@4.7s", "partition:1@2.7s", "heal@4.6s")
}

// TestHopOwnCastsKeptOnLosingTheRole: site 1 (n1, n2) is cut off whole
// and readmitted; the two come back in separate views, n2 readmitted first
// as the site's only member and so its representative. It held its own
// casts back (the far streams did not know yet where they stood), and lost
// the role to n1 100 ms later: it dropped what it held back, its members'
// casts (they cast them again) and its own, which nobody else had (24 owed
// deliveries missing, spread-site-soak seed 151). Its own now go to the new
// representative as a member's casts again do.
func TestHopOwnCastsKeptOnLosingTheRole(t *testing.T) {
	siteSoakSeed(t, "9", [3]string{"1=1-2", "2=3-4", "3=5-9"}, "151",
		"crash:5@2.9s", "partition:1,2@1.9s", "heal@4.6s")
}

// TestHopRejoinGivesUpWaitingForMembers: n1, the representative of the
// two-node site 1, is cut off alone for 2.2 s and removed; its only member
// n2, which numbered the site's stream meanwhile, crashes before n1 is
// readmitted. A representative readmitted after being alone numbers
// nothing until a member tells it where its site's stream stands; no
// member is left to tell n1, so after 1 s it numbers on from its own
// stream and tells its child links where the stream stands. Without that,
// n1's casts after its readmission never reach the far sites (and agreed
// order waits on site 1 for good at every far site).
func TestHopRejoinGivesUpWaitingForMembers(t *testing.T) {
	rep := hopStateRun(t, "149", "crash:2@4.1s", "partition:1@2.1s", "heal@4.3s")
	if rep.Layers["hop"]["rejoin_gave_up"] == 0 {
		t.Errorf("layers.hop.rejoin_gave_up = 0: n1 did not number on after waiting 1 s for a member")
	}
	if rep.DeliveriesOfExpected < 4000 {
		t.Errorf("%d owed deliveries made, want nearly all of the 4,216 owed", rep.DeliveriesOfExpected)
	}
}

// TestHopReadmittedRepresentativeSendsNotWhatItNumberedAlone: n4, the
// representative of site 3 (n4, n5), is cut off alone and readmitted; n5
// took over meanwhile and numbered its own cast 116 as site sequence 216.
// Readmitted, n4 learnt from n5 where the stream stands, but its site's
// ring then handed it back its own cast it had numbered 216 alone, and n4
// sent it on: the far sites took it before n5's 216 and dropped n5's as a
// copy (1 owed delivery missing, spread-site-soak seed 145). What a
// readmitted representative numbered before its readmission is no longer
// sent on when the ring hands it back (counter void_dropped).
func TestHopReadmittedRepresentativeSendsNotWhatItNumberedAlone(t *testing.T) {
	siteSoakSeed(t, "5", [3]string{"1=1-1", "2=2-3", "3=4-5"}, "145",
		"crash:1@4.5s", "crash:2@2.5s", "partition:4@2.5s", "heal@4.5s")
}

// TestHopRejoinNumbersPastWhatTheMemberAnnounced: n6, the representative of
// site 3 (n6, n7, n8), is cut off alone; n7 takes over, numbers on to 320
// and announces it, but the far sites turn back to n6, readmitted, while
// n7's numbers from 305 on are still in flight (they drop them: n7 is no
// longer the representative they link to). n7's views are held up below
// (n8 crashed: its ring recovers first), so it tells n6 nothing, and n6,
// after its second, numbered on from 293, its own stream: the far sites
// waited for good on 305 to 320, which n7 had announced (2,452 owed
// deliveries missing, spread-site-soak seed 297). A representative that
// gives up waiting now numbers on past what the far sites hold and what a
// member can have had in flight, and the far sites skip to it.
func TestHopRejoinNumbersPastWhatTheMemberAnnounced(t *testing.T) {
	siteSoakSeed(t, "8", [3]string{"1=1-2", "2=3-5", "3=6-8"}, "297",
		"crash:8@4.3s", "partition:6@2.3s", "heal@4.4s")
}

// TestHopTakeOverReplaysWhatItNumberedAlone: in site 3 (n4, n5, n6) the
// representative n4 crashes while n5 is cut off alone. n5, in a view of its
// own, numbered its backlog straight into its stream (no member, no ring);
// readmitted, it took over from n4 and went on from there, and what it had
// numbered alone reached the far sites on its new links but never its site:
// n6 waited for good on those numbers (602 owed deliveries missing,
// spread-site-soak seed 369). A representative that takes over after
// numbering alone now casts its site what it holds of each stream, as it
// does for a newcomer.
func TestHopTakeOverReplaysWhatItNumberedAlone(t *testing.T) {
	siteSoakSeed(t, "6", [3]string{"1=1-1", "2=2-3", "3=4-6"}, "369",
		"crash:4@4.1s", "crash:4@2.5s", "partition:5@2.1s", "heal@4.1s")
}
