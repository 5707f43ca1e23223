package tests

import "testing"

// TestHopCastsWaitForARejoiningSitesStamps: site 3 (n3-n5) is cut off from
// 1.5 s to 4.4 s and delivers its own casts meanwhile, with stamps up to
// 716; n1 (site 1) crashes. When site 3 is readmitted, n2 (site 2, alone)
// holds its casts until site 3's stream here knows where it stands, but
// n3, site 3's representative, waits as long for its members' word: n2
// gave up first and numbered n2#184 and #185 with stamps of 499 and 500,
// and n3 and n4 dropped them as late though they were cast in a view they
// were in (4 owed deliveries missing; spread-site-soak seed 655). A cast
// now waits on while the far site's heartbeats say it is rejoining.
func TestHopCastsWaitForARejoiningSitesStamps(t *testing.T) {
	siteSoakSeed(t, "5", [3]string{"1=1-1", "2=2-2", "3=3-5"}, "655",
		"crash:1@2.5s", "partition:3,4,5@1.5s", "heal@4.4s")
}

// TestHopCastsWaitForARejoiningSitesStampsAtRateMax: the same race at rate
// max. Site 3 (n5, n6) is cut off from 1.1 s to 4.4 s; n4 and n3 of site 2
// crash. n1 (site 1, alone) waited the full second for site 3's stream to
// learn where it stands and numbered casts n1#1050-#1065 just as n5, site
// 3's readmitted representative, gave up waiting for its member and jumped
// its stream ahead: with stamps below what n5 and n6 had delivered while
// cut off, they dropped them as late (64 owed deliveries missing;
// spread-site-soak seed 739 at rate max).
func TestHopCastsWaitForARejoiningSitesStampsAtRateMax(t *testing.T) {
	siteSoakSeedMax(t, "6", [3]string{"1=1-1", "2=2-4", "3=5-6"}, "739",
		"crash:4@2.1s", "crash:3@2.5s", "partition:5,6@1.1s", "heal@4.4s")
}

// TestHopMemberTakingOverUnsyncedAsksItsMembers: site 1 is n1 to n3, n1 its
// representative. n2 is cut off at 2.5 s and removed at 4.6 s; n1 crashes
// as n2 heals; n2 is readmitted alone as a member at 4.7 s and waits for
// n1's tStart, which never comes. When membership removes n1 (6.6 s), n2
// (the smallest id) takes over not knowing where site 1's stream stands:
// it numbered on from 317, of its life before, where n3 held n1's 317 to
// 347 and the far sites 317 and 318. The far sites never got n1's 319 to
// 347 and dropped n2's 317 and 318 as copies (46 owed deliveries missing;
// spread-site-soak seed 945). It now waits for its member's word, which
// its heartbeats ask for.
func TestHopMemberTakingOverUnsyncedAsksItsMembers(t *testing.T) {
	siteSoakSeed(t, "5", [3]string{"1=1-3", "2=4-4", "3=5-5"}, "945",
		"crash:1@4.5s", "partition:2@2.5s", "heal@4.5s")
}
