package tests

import (
	"cmp"
	"testing"

	"github.com/layercast/layercast/experiment"

	_ "github.com/layercast/layercast/layers/all"
)

// siteSoak is one run of scripts/spread-site-soak.sh: specs/spread.stack
// with nodes nodes on three sites as sites says (spreadThreeSites: the
// soak's WAN links), all in one group, every node casting at rate per
// second ("max": as fast as the stack takes it) for 6 s and then drain,
// with loss inside the sites, under the seed's faults. The zero rate, drain
// and loss are the soak's: 40, 5s and none.
type siteSoak struct {
	nodes  string
	sites  [3]string
	seed   string
	rate   string
	dur    string // default 6s (the longcut mode: 12s)
	drain  string
	loss   string
	faults []string
}

// run runs the soak's seed and returns its report.
func (s siteSoak) run(t *testing.T) *experiment.Report {
	t.Helper()
	kv := []string{"nodes", s.nodes, "groups-per-node", "1", "group-size", s.nodes, "seed", s.seed,
		"rate", cmp.Or(s.rate, "40"), "duration", cmp.Or(s.dur, "6s"), "drain", cmp.Or(s.drain, "5s"), "loss", cmp.Or(s.loss, "none")}
	for _, f := range s.faults {
		kv = append(kv, "fault", f)
	}
	return spreadThreeSites(t, s.sites, kv...)
}

// siteSoakSeed replays one run of scripts/spread-site-soak.sh at the soak's
// defaults (siteSoak) and checks agreed order and every owed delivery.
func siteSoakSeed(t *testing.T, nodes string, sites [3]string, seed string, faults ...string) {
	t.Helper()
	wantAgreedNoneUnexplained(t, siteSoakRun(t, nodes, sites, seed, faults...))
}

// siteSoakRun runs one seed of scripts/spread-site-soak.sh as siteSoakSeed
// does and returns its report.
func siteSoakRun(t *testing.T, nodes string, sites [3]string, seed string, faults ...string) *experiment.Report {
	t.Helper()
	return siteSoak{nodes: nodes, sites: sites, seed: seed, faults: faults}.run(t)
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
// n5 nothing within 1 s of the readmission and n5 numbered on from its own
// stream. When n6 at last saw n5 as its representative it cast where it
// stood, which n5, no longer waiting, ignored: n6 waited for good on
// numbers n5 had dropped (514 owed deliveries missing). n5 then answered
// such a member with where the stream stands and what it has from there,
// which left n6's cast that n5 numbered alone reaching no other site (4
// missing). n5 now waits for its member's word while the member still acts
// as the site's representative (its heartbeats), and takes the member's
// replay: nothing is missing, and n5 never gives up waiting.
func TestHopMemberBehindReadmittedRepresentative(t *testing.T) {
	rep := siteSoakRun(t, "8", [3]string{"1=1-1", "2=2-4", "3=5-8"}, "177",
		"crash:8@4.3s", "crash:7@2.5s", "partition:5@2.3s", "heal@4.6s")
	wantAgreedNoneUnexplained(t, rep)
	if n := rep.Layers["hop"]["rejoin_gave_up"]; n != 0 {
		t.Errorf("layers.hop.rejoin_gave_up = %d: n5 numbered on without its member's word", n)
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

// TestHopRejoinWaitsForHeldUpMember: n1, the representative of site 1 (n1,
// n2, n3), is cut off alone and readmitted; n2 took over meanwhile and
// numbered its own casts 117 to 132 as site sequence 349 to 364, which
// reached site 2 but not site 3 (it turned back to n1 with them still
// queued on n2's link). n3 crashed, so n2's views were held up below (its
// new ring recovers the old one first, until membership removes n3) and it
// went on acting as the representative for 2 s; n1 waited 1 s from its
// readmission, heard nothing, and numbered on past 364: site 3 skipped
// n2's 16 casts for good (80 owed deliveries missing, spread-site-soak
// seed 21). n1 now waits while its site's ring carries nothing and while a
// member still acts as the representative, and takes n2's replay.
func TestHopRejoinWaitsForHeldUpMember(t *testing.T) {
	siteSoakSeed(t, "9", [3]string{"1=1-3", "2=4-4", "3=5-9"}, "21",
		"crash:3@4.9s", "partition:1@2.9s", "heal@4.9s")
}

// TestHopMemberReadmittedAloneTakesTheStream: site 3 (n3 to n9) is cut off
// from sites 1 and 2, whose nodes crash; membership removes every node of
// site 3, each comes back first in a view of its own (the representative
// of a site of one), numbers its own casts there up to 970, and is then
// readmitted with the others, n3 the representative. n3 learnt from a
// member that the stream stands at 967 and numbered on from there, but the
// members readmitted alone stood at 970 by their own numbers: they took
// n3's 967 to 970 as copies (12 owed deliveries missing, spread-site-soak
// seed 111). A member readmitted alone now drops what it numbered alone,
// as a readmitted representative does, and takes where the stream stands
// from its representative (a tStart it casts once it knows).
func TestHopMemberReadmittedAloneTakesTheStream(t *testing.T) {
	siteSoakSeed(t, "9", [3]string{"1=1-1", "2=2-2", "3=3-9"}, "111",
		"crash:1@2.9s", "crash:2@2.5s", "partition:3,4,5,6,7,8,9@1.9s", "heal@4.0s")
}

// TestHopRejoinAnnouncesNoStamp: n2, the representative of site 2 (n2, n3,
// n4), is cut off alone and readmitted while n3, which took over, numbers
// n4's casts as 269 to 276 (stamps 369 to 376); n4 crashed, so n3's views
// are held up and n2 waits 2 s for its word. Meanwhile n2's heartbeats
// announced its siteSeq and clock of what it numbered alone (268, past
// 500): site 3, whose stream of site 2 stood at 268, took the stamp as
// passed and delivered site 1's messages stamped up to 500 before n4's
// (8 deliveries out of agreed order, spread-site-soak seed 69). A
// representative waiting to learn where its stream stands now announces no
// number and no stamp for it.
func TestHopRejoinAnnouncesNoStamp(t *testing.T) {
	siteSoakSeed(t, "6", [3]string{"1=1-1", "2=2-4", "3=5-6"}, "69",
		"crash:4@4.1s", "crash:5@2.5s", "partition:2@2.1s", "heal@4.1s")
}

// TestHopTakeOverTellsMembersWhereStreamsStand: n6, a member of site 2 (n4,
// n5, n6), is cut off alone, removed, and readmitted, its streams waiting
// for a tStart; n4, the representative, crashed before it told n6, and
// n5, which took over when membership removed n4, told it nothing: n6
// waited for good (325 owed deliveries missing, spread-site-soak seed
// 317). A representative that takes over now casts its site where each
// stream stands and what it holds past there (a tStart and the messages it
// got out of order, before the member was in its ring).
func TestHopTakeOverTellsMembersWhereStreamsStand(t *testing.T) {
	siteSoakSeed(t, "8", [3]string{"1=1-3", "2=4-6", "3=7-8"}, "317",
		"crash:4@4.3s", "partition:6@2.3s", "heal@4.2s")
}

// TestHopOwnCastsInRingKeptOnLosingTheRole: n1, the representative of site
// 1 (n1, n2, n3), is cut off alone; n2 takes over and, at n1's
// readmission, has just numbered its own backlog as 423 to 438 into its
// ring when it loses the role to n1. n1 learnt from n2's replay that the
// stream stands at 423 and numbered on from there; n2's 16 casts, numbered
// in its ring and never handed back, nobody took or cast again (48 owed
// deliveries missing, spread-site-soak seed 209). A node losing the role
// now casts again its own casts still in its ring, as it does those it
// held back, and its replay stops where its ring handed the stream back.
func TestHopOwnCastsInRingKeptOnLosingTheRole(t *testing.T) {
	siteSoakSeed(t, "6", [3]string{"1=1-3", "2=4-5", "3=6-6"}, "209",
		"crash:6@4.1s", "partition:1@2.1s", "heal@4.7s")
}

// TestHopReadmittedAloneDeliversTheNewViewsCasts: site 3 is cut off whole
// and its nodes removed; n3 learns it first and, in a view of its own,
// numbers and delivers its members' casts alone (seed 327: up to stamp
// 1008). Readmitted as the site's representative, it took its members'
// numbering of the stream again (stamps up to 959), and n1 (seed 331: n2)
// cast into the view n3 had joined with stamps from there; n3 kept what
// it delivered alone as agreed order's floor and dropped those casts as
// late, which every other member delivered (7 and 4 owed deliveries
// missing, spread-site-soak seeds 327 and 331). What a node delivered
// alone no longer holds agreed order back once its numbers are void.
func TestHopReadmittedAloneDeliversTheNewViewsCasts(t *testing.T) {
	t.Run("seed327", func(t *testing.T) {
		siteSoakSeed(t, "8", [3]string{"1=1-1", "2=2-2", "3=3-8"}, "327",
			"crash:2@2.3s", "crash:2@2.5s", "partition:3,4,5,6,7,8@1.3s", "heal@4.1s")
	})
	t.Run("seed331", func(t *testing.T) {
		siteSoakSeed(t, "9", [3]string{"1=1-1", "2=2-2", "3=3-9"}, "331",
			"crash:1@2.9s", "crash:1@2.5s", "partition:3,4,5,6,7,8,9@1.9s", "heal@4.8s")
	})
}
