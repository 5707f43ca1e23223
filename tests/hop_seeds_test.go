package tests

import (
	"testing"

	_ "github.com/layercast/layercast/layers/all"
)

// TestHopSoakSeeds replays seeds of scripts/spread-site-soak.sh that once
// failed, each in a subtest named for what it broke (the row's comment says
// how, and what fixed it), and checks agreed order and every owed delivery:
// replay is siteSoakSeed (the soak's rate, 40/s) or siteSoakSeedMax (rate
// max). A seed whose fix needs a check of its own (a counter, a removal)
// has a test of its own.
func TestHopSoakSeeds(t *testing.T) {
	for _, s := range []struct {
		name   string
		replay func(t *testing.T, nodes string, sites [3]string, seed string, faults ...string)
		nodes  string
		sites  [3]string
		seed   string
		faults []string
	}{
		// SkippedNumbersNotAwaited: n1, the representative of site 1, is cut off
		// alone; n2 takes over, numbers its backlog at once up to 251 and
		// announces it in a heartbeat, then crashes; n1, readmitted, hears from no
		// member and numbers on from 249 (its own stream; a tStart skips the far
		// sites there). The far sites kept 251 from n2's heartbeat as the highest
		// number announced and, with it, waited for good on 249 to 251, which
		// nobody would send: agreed order stopped (seed 121: 492 owed deliveries
		// missing; seed 149: 64). A tStart that skips a stream past what its
		// heartbeats announced now forgets them, and a heartbeat of a numbering
		// the stream moved past is not taken.
		{"SkippedNumbersNotAwaited/seed149", siteSoakSeed, "6", [3]string{"1=1-2", "2=3-4", "3=5-6"}, "149",
			[]string{"crash:2@4.1s", "partition:1@2.1s", "heal@4.3s"}},
		{"SkippedNumbersNotAwaited/seed121", siteSoakSeed, "9", [3]string{"1=1-2", "2=3-3", "3=4-9"}, "121",
			[]string{"crash:2@4.9s", "partition:1@2.9s", "heal@4.9s"}},
		// ReadmittedRepresentativeTakesCastsAgain: n1, the representative of site
		// 1, is cut off alone; as the view left it alone its ring handed it its
		// member n3's last casts, which it numbered and delivered alone. n2 took
		// over and held n3's casts again until it lost the role to n1, readmitted;
		// n3 cast them again to n1, which refused them as numbered already (by
		// itself, alone): 64 owed deliveries missing (spread-site-soak seed 93). A
		// representative readmitted after being alone now forgets what it numbered
		// of its members' casts (its members' replay says what they saw numbered)
		// and does not deliver again what it delivered alone.
		{"ReadmittedRepresentativeTakesCastsAgain", siteSoakSeed, "7", [3]string{"1=1-3", "2=4-6", "3=7-7"}, "93",
			[]string{"crash:6@4.7s", "partition:1@2.7s", "heal@4.6s"}},
		// OwnCastsKeptOnLosingTheRole: site 1 (n1, n2) is cut off whole and
		// readmitted; the two come back in separate views, n2 readmitted first as
		// the site's only member and so its representative. It held its own casts
		// back (the far streams did not know yet where they stood), and lost the
		// role to n1 100 ms later: it dropped what it held back, its members'
		// casts (they cast them again) and its own, which nobody else had (24 owed
		// deliveries missing, spread-site-soak seed 151). Its own now go to the
		// new representative as a member's casts again do.
		{"OwnCastsKeptOnLosingTheRole", siteSoakSeed, "9", [3]string{"1=1-2", "2=3-4", "3=5-9"}, "151",
			[]string{"crash:5@2.9s", "partition:1,2@1.9s", "heal@4.6s"}},
		// ReadmittedRepresentativeSendsNotWhatItNumberedAlone: n4, the
		// representative of site 3 (n4, n5), is cut off alone and readmitted; n5
		// took over meanwhile and numbered its own cast 116 as site sequence 216.
		// Readmitted, n4 learnt from n5 where the stream stands, but its site's
		// ring then handed it back its own cast it had numbered 216 alone, and n4
		// sent it on: the far sites took it before n5's 216 and dropped n5's as a
		// copy (1 owed delivery missing, spread-site-soak seed 145). What a
		// readmitted representative numbered before its readmission is no longer
		// sent on when the ring hands it back (counter void_dropped).
		{"ReadmittedRepresentativeSendsNotWhatItNumberedAlone", siteSoakSeed, "5", [3]string{"1=1-1", "2=2-3", "3=4-5"}, "145",
			[]string{"crash:1@4.5s", "crash:2@2.5s", "partition:4@2.5s", "heal@4.5s"}},
		// RejoinNumbersPastWhatTheMemberAnnounced: n6, the representative of site
		// 3 (n6, n7, n8), is cut off alone; n7 takes over, numbers on to 320 and
		// announces it, but the far sites turn back to n6, readmitted, while n7's
		// numbers from 305 on are still in flight (they drop them: n7 is no longer
		// the representative they link to). n7's views are held up below (n8
		// crashed: its ring recovers first), so it tells n6 nothing, and n6, after
		// its second, numbered on from 293, its own stream: the far sites waited
		// for good on 305 to 320, which n7 had announced (2,452 owed deliveries
		// missing, spread-site-soak seed 297). A representative that gives up
		// waiting now numbers on past what the far sites hold and what a member
		// can have had in flight, and the far sites skip to it.
		{"RejoinNumbersPastWhatTheMemberAnnounced", siteSoakSeed, "8", [3]string{"1=1-2", "2=3-5", "3=6-8"}, "297",
			[]string{"crash:8@4.3s", "partition:6@2.3s", "heal@4.4s"}},
		// TakeOverReplaysWhatItNumberedAlone: in site 3 (n4, n5, n6) the
		// representative n4 crashes while n5 is cut off alone. n5, in a view of
		// its own, numbered its backlog straight into its stream (no member, no
		// ring); readmitted, it took over from n4 and went on from there, and what
		// it had numbered alone reached the far sites on its new links but never
		// its site: n6 waited for good on those numbers (602 owed deliveries
		// missing, spread-site-soak seed 369). A representative that takes over
		// after numbering alone now casts its site what it holds of each stream,
		// as it does for a newcomer.
		{"TakeOverReplaysWhatItNumberedAlone", siteSoakSeed, "6", [3]string{"1=1-1", "2=2-3", "3=4-6"}, "369",
			[]string{"crash:4@4.1s", "crash:4@2.5s", "partition:5@2.1s", "heal@4.1s"}},
		// RejoinWaitsForHeldUpMember: n1, the representative of site 1 (n1, n2,
		// n3), is cut off alone and readmitted; n2 took over meanwhile and
		// numbered its own casts 117 to 132 as site sequence 349 to 364, which
		// reached site 2 but not site 3 (it turned back to n1 with them still
		// queued on n2's link). n3 crashed, so n2's views were held up below (its
		// new ring recovers the old one first, until membership removes n3) and it
		// went on acting as the representative for 2 s; n1 waited 1 s from its
		// readmission, heard nothing, and numbered on past 364: site 3 skipped
		// n2's 16 casts for good (80 owed deliveries missing, spread-site-soak
		// seed 21). n1 now waits while its site's ring carries nothing and while a
		// member still acts as the representative, and takes n2's replay.
		{"RejoinWaitsForHeldUpMember", siteSoakSeed, "9", [3]string{"1=1-3", "2=4-4", "3=5-9"}, "21",
			[]string{"crash:3@4.9s", "partition:1@2.9s", "heal@4.9s"}},
		// MemberReadmittedAloneTakesTheStream: site 3 (n3 to n9) is cut off from
		// sites 1 and 2, whose nodes crash; membership removes every node of site
		// 3, each comes back first in a view of its own (the representative of a
		// site of one), numbers its own casts there up to 970, and is then
		// readmitted with the others, n3 the representative. n3 learnt from a
		// member that the stream stands at 967 and numbered on from there, but the
		// members readmitted alone stood at 970 by their own numbers: they took
		// n3's 967 to 970 as copies (12 owed deliveries missing, spread-site-soak
		// seed 111). A member readmitted alone now drops what it numbered alone,
		// as a readmitted representative does, and takes where the stream stands
		// from its representative (a tStart it casts once it knows).
		{"MemberReadmittedAloneTakesTheStream", siteSoakSeed, "9", [3]string{"1=1-1", "2=2-2", "3=3-9"}, "111",
			[]string{"crash:1@2.9s", "crash:2@2.5s", "partition:3,4,5,6,7,8,9@1.9s", "heal@4.0s"}},
		// RejoinAnnouncesNoStamp: n2, the representative of site 2 (n2, n3, n4),
		// is cut off alone and readmitted while n3, which took over, numbers n4's
		// casts as 269 to 276 (stamps 369 to 376); n4 crashed, so n3's views are
		// held up and n2 waits 2 s for its word. Meanwhile n2's heartbeats
		// announced its siteSeq and clock of what it numbered alone (268, past
		// 500): site 3, whose stream of site 2 stood at 268, took the stamp as
		// passed and delivered site 1's messages stamped up to 500 before n4's (8
		// deliveries out of agreed order, spread-site-soak seed 69). A
		// representative waiting to learn where its stream stands now announces no
		// number and no stamp for it.
		{"RejoinAnnouncesNoStamp", siteSoakSeed, "6", [3]string{"1=1-1", "2=2-4", "3=5-6"}, "69",
			[]string{"crash:4@4.1s", "crash:5@2.5s", "partition:2@2.1s", "heal@4.1s"}},
		// TakeOverTellsMembersWhereStreamsStand: n6, a member of site 2 (n4, n5,
		// n6), is cut off alone, removed, and readmitted, its streams waiting for
		// a tStart; n4, the representative, crashed before it told n6, and n5,
		// which took over when membership removed n4, told it nothing: n6 waited
		// for good (325 owed deliveries missing, spread-site-soak seed 317). A
		// representative that takes over now casts its site where each stream
		// stands and what it holds past there (a tStart and the messages it got
		// out of order, before the member was in its ring).
		{"TakeOverTellsMembersWhereStreamsStand", siteSoakSeed, "8", [3]string{"1=1-3", "2=4-6", "3=7-8"}, "317",
			[]string{"crash:4@4.3s", "partition:6@2.3s", "heal@4.2s"}},
		// OwnCastsInRingKeptOnLosingTheRole: n1, the representative of site 1 (n1,
		// n2, n3), is cut off alone; n2 takes over and, at n1's readmission, has
		// just numbered its own backlog as 423 to 438 into its ring when it loses
		// the role to n1. n1 learnt from n2's replay that the stream stands at 423
		// and numbered on from there; n2's 16 casts, numbered in its ring and
		// never handed back, nobody took or cast again (48 owed deliveries
		// missing, spread-site-soak seed 209). A node losing the role now casts
		// again its own casts still in its ring, as it does those it held back,
		// and its replay stops where its ring handed the stream back.
		{"OwnCastsInRingKeptOnLosingTheRole", siteSoakSeed, "6", [3]string{"1=1-3", "2=4-5", "3=6-6"}, "209",
			[]string{"crash:6@4.1s", "partition:1@2.1s", "heal@4.7s"}},
		// ReadmittedAloneDeliversTheNewViewsCasts: site 3 is cut off whole and its
		// nodes removed; n3 learns it first and, in a view of its own, numbers and
		// delivers its members' casts alone (seed 327: up to stamp 1008).
		// Readmitted as the site's representative, it took its members' numbering
		// of the stream again (stamps up to 959), and n1 (seed 331: n2) cast into
		// the view n3 had joined with stamps from there; n3 kept what it delivered
		// alone as agreed order's floor and dropped those casts as late, which
		// every other member delivered (7 and 4 owed deliveries missing,
		// spread-site-soak seeds 327 and 331). What a node delivered alone no
		// longer holds agreed order back once its numbers are void.
		{"ReadmittedAloneDeliversTheNewViewsCasts/seed327", siteSoakSeed, "8", [3]string{"1=1-1", "2=2-2", "3=3-8"}, "327",
			[]string{"crash:2@2.3s", "crash:2@2.5s", "partition:3,4,5,6,7,8@1.3s", "heal@4.1s"}},
		{"ReadmittedAloneDeliversTheNewViewsCasts/seed331", siteSoakSeed, "9", [3]string{"1=1-1", "2=2-2", "3=3-9"}, "331",
			[]string{"crash:1@2.9s", "crash:1@2.5s", "partition:3,4,5,6,7,8,9@1.9s", "heal@4.8s"}},
		// ReadmittedSiteStampsAfterOthers: site 2 (n4 alone) is cut off for 3.3 s,
		// removed and admitted again, and site 1's representative crashes
		// meanwhile. n4's clock stood still while it was out, so its first casts
		// after readmission carried time stamps below what sites 1 and 3 had
		// delivered without it: a node that already had site 2's stream ordered
		// them first, one that had not yet admitted it after (8 deliveries out of
		// agreed order). A representative now numbers nothing while a far site's
		// stream does not know where it stands; the start records carry the far
		// sites' stamps, and its next casts sort after them everywhere.
		{"ReadmittedSiteStampsAfterOthers", siteSoakSeed, "5", [3]string{"1=1-3", "2=4-4", "3=5-5"}, "15",
			[]string{"crash:1@2.5s", "partition:4@1.5s", "heal@4.8s"}},
		// ReadmittedSiteOldNumbersNotSent: site 1 (n1, n2) is cut off for 2.8 s
		// and n2 crashes meanwhile, so site 1's ring held n1's numbered casts
		// until n1's ring formed again, after site 1 was readmitted. n1 then sent
		// them on to sites 2 and 3 with the stamps of the partition, and they were
		// delivered there after what those sites had delivered without site 1 at
		// some nodes and before it at others (16 deliveries out of agreed order).
		// A child site admitted now gets the representative's own stream from past
		// everything it numbered before.
		{"ReadmittedSiteOldNumbersNotSent", siteSoakSeed, "7", [3]string{"1=1-2", "2=3-3", "3=4-7"}, "3",
			[]string{"crash:2@2.7s", "partition:1,2@1.7s", "heal@4.5s"}},
		// CastsWaitForARejoiningSitesStamps: site 3 (n3-n5) is cut off from 1.5 s
		// to 4.4 s and delivers its own casts meanwhile, with stamps up to 716; n1
		// (site 1) crashes. When site 3 is readmitted, n2 (site 2, alone) holds
		// its casts until site 3's stream here knows where it stands, but n3, site
		// 3's representative, waits as long for its members' word: n2 gave up
		// first and numbered n2#184 and #185 with stamps of 499 and 500, and n3
		// and n4 dropped them as late though they were cast in a view they were in
		// (4 owed deliveries missing; spread-site-soak seed 655). A cast now waits
		// on while the far site's heartbeats say it is rejoining.
		{"CastsWaitForARejoiningSitesStamps", siteSoakSeed, "5", [3]string{"1=1-1", "2=2-2", "3=3-5"}, "655",
			[]string{"crash:1@2.5s", "partition:3,4,5@1.5s", "heal@4.4s"}},
		// CastsWaitForARejoiningSitesStampsAtRateMax: the same race at rate max.
		// Site 3 (n5, n6) is cut off from 1.1 s to 4.4 s; n4 and n3 of site 2
		// crash. n1 (site 1, alone) waited the full second for site 3's stream to
		// learn where it stands and numbered casts n1#1050-#1065 just as n5, site
		// 3's readmitted representative, gave up waiting for its member and jumped
		// its stream ahead: with stamps below what n5 and n6 had delivered while
		// cut off, they dropped them as late (64 owed deliveries missing;
		// spread-site-soak seed 739 at rate max).
		{"CastsWaitForARejoiningSitesStampsAtRateMax", siteSoakSeedMax, "6", [3]string{"1=1-1", "2=2-4", "3=5-6"}, "739",
			[]string{"crash:4@2.1s", "crash:3@2.5s", "partition:5,6@1.1s", "heal@4.4s"}},
		// MemberTakingOverUnsyncedAsksItsMembers: site 1 is n1 to n3, n1 its
		// representative. n2 is cut off at 2.5 s and removed at 4.6 s; n1 crashes
		// as n2 heals; n2 is readmitted alone as a member at 4.7 s and waits for
		// n1's tStart, which never comes. When membership removes n1 (6.6 s), n2
		// (the smallest id) takes over not knowing where site 1's stream stands:
		// it numbered on from 317, of its life before, where n3 held n1's 317 to
		// 347 and the far sites 317 and 318. The far sites never got n1's 319 to
		// 347 and dropped n2's 317 and 318 as copies (46 owed deliveries missing;
		// spread-site-soak seed 945). It now waits for its member's word, which
		// its heartbeats ask for.
		{"MemberTakingOverUnsyncedAsksItsMembers", siteSoakSeed, "5", [3]string{"1=1-3", "2=4-4", "3=5-5"}, "945",
			[]string{"crash:1@4.5s", "partition:2@2.5s", "heal@4.5s"}},
		// MemberTakingOverUnsyncedAloneAsksTheFarSites: the same with site 1 n1
		// and n2 only, at rate max. n1, alone in its site once n2 is removed,
		// numbers its casts 600 to 610 and sends them to the far sites before it
		// crashes; n2, readmitted at 4.7 s as a member waiting for n1's tStart,
		// casts n2#584 to #594 in view 4 into a ring with dead n1. Taking over at
		// 6.6 s with no member to ask, it numbered them from its siteSeq of its
		// life before, 600 to 610, and the far sites dropped them as copies of
		// n1's (33 owed deliveries missing; spread-site-soak seed 445 at rate
		// max). It now waits for the far sites' heartbeats and numbers on past
		// their ARUs, as a representative that gives up waiting does.
		{"MemberTakingOverUnsyncedAloneAsksTheFarSites", siteSoakSeedMax, "5", [3]string{"1=1-2", "2=3-3", "3=4-5"}, "445",
			[]string{"crash:1@4.5s", "partition:2@2.5s", "heal@4.5s"}},
		// WholeSiteBackMembersTakeTheSiteStream: a whole site is cut off and every
		// node of it removed; each is alone for a moment (its own representative,
		// numbering its casts alone) before it is readmitted, so each member
		// forgets what it numbered alone and stands below the representative,
		// itself readmitted and waiting for a member to tell it where the stream
		// stands. Seed 279: no member told it in time, it gave up and numbered on
		// past a gap, telling only its links; its members waited on the gap for
		// good (288 owed deliveries missing). It now tells its site too. Seed 31:
		// a member that had been the site's representative with the far sites in
		// view told it, with numbers the members that had forgotten theirs lacked;
		// it now casts what it has of the stream into the site (without it: 244
		// missing).
		{"WholeSiteBackMembersTakeTheSiteStream/seed279", siteSoakSeed, "6", [3]string{"1=1-3", "2=4-5", "3=6-6"}, "279",
			[]string{"crash:6@2.1s", "partition:4,5@1.1s", "heal@4.0s"}},
		{"WholeSiteBackMembersTakeTheSiteStream/seed31", siteSoakSeed, "9", [3]string{"1=1-1", "2=2-3", "3=4-9"}, "31",
			[]string{"crash:4@2.9s", "crash:7@2.5s", "partition:4,5,6,7,8,9@1.9s", "heal@4.8s"}},
		// NewRepresentativeNumbersAboveWhatTheOldDelivered: site 3 (n3, n4, n5) is
		// cut off whole and its nodes removed; n5 is readmitted first, its site's
		// representative alone, and delivers far messages up to stamp 512; then n3
		// is readmitted and takes the role, and n5 tells it where the site's
		// stream stands, with the stamp of the stream's last message (448). n3
		// numbered on from there (465), below what n5 had delivered: n5 dropped
		// those as late (17 owed deliveries missing). A member that tells its
		// representative where the stream stands now gives its own clock with it.
		{"NewRepresentativeNumbersAboveWhatTheOldDelivered", siteSoakSeed, "5", [3]string{"1=1-1", "2=2-2", "3=3-5"}, "215",
			[]string{"crash:1@2.5s", "crash:4@2.5s", "partition:3,4,5@1.5s", "heal@4.8s"}},
		// VoidNumbersOfReadmittedRepresentativeDropped: site 2 (n4, n5) is cut off
		// whole. n4, its representative, numbers 1220 to 1235 of the site's stream
		// in their ring, but they wait in the ring's queue for the token when
		// membership removes both. Each comes back alone, n5 first; when n4 is
		// readmitted its ring sends those casts in the new ring, after n5 has
		// installed the view where n4 represents the site again. n4 drops them as
		// void and numbers 1220 on again from n5's word, but n5 had taken the void
		// ones and took n4's new ones as copies (14 owed deliveries missing at
		// n5). A member that told a representative new to its site where the
		// stream stands now takes none of that representative's numbers of the
		// stream until its answer.
		{"VoidNumbersOfReadmittedRepresentativeDropped", siteSoakSeedMax, "6", [3]string{"1=1-3", "2=4-5", "3=6-6"}, "59",
			[]string{"crash:6@2.1s", "partition:4,5@1.1s", "heal@4.2s"}},
		// ReadmittedMemberTakesNoVoidNumbers: site 3 (n4 to n8) is cut off whole;
		// n4, its representative, numbers 555 to 570 of the site's stream in their
		// ring, where they wait for the token when membership removes the site's
		// nodes. n8 comes back as a member readmitted alone and waits for its
		// representative's tStart; n4, readmitted, sends those void numbers in the
		// new ring and, told by n7 (readmitted first, it numbered the stream alone
		// up to 568) where the stream stands, numbers 569 on again. n8 held the
		// void ones as early and took n4's new 569 and 570 (n7's casts) as copies:
		// 2 owed deliveries missing. A member readmitted alone now takes none of
		// its representative's numbers before its tStart.
		{"ReadmittedMemberTakesNoVoidNumbers", siteSoakSeedMax, "8", [3]string{"1=1-1", "2=2-3", "3=4-8"}, "27",
			[]string{"crash:6@2.3s", "crash:5@2.5s", "partition:4,5,6,7,8@1.3s", "heal@4.1s"}},
		// SiteAruIsWhatEveryMemberHolds: n3, a member of site 2, is cut off at
		// 2.3 s (and heals at 4.0 s, never removed); n2, its representative, casts
		// site 3's 520 into their ring, takes it back from ring at once and
		// crashes at 2.6 s before ring gets it to n3. n2's heartbeats had said
		// site 2 holds site 3's stream up to 520, so site 3 freed it, and when n3
		// took over it was sent the stream from 521 on: n3 never delivered n6's
		// cast (1 owed delivery missing). A representative's heartbeat ARU for a
		// far stream is now the least of what its members say they hold (tHolds).
		{"SiteAruIsWhatEveryMemberHolds", siteSoakSeedMax, "8", [3]string{"1=1-1", "2=2-3", "3=4-8"}, "137",
			[]string{"crash:8@4.3s", "crash:2@2.5s", "partition:3@2.3s", "heal@4.0s"}},
		// LoneRepresentativesUnsentCastsExplained: n1, alone in site 1, is cut off
		// at 2.7 s, removed at 4.8 s and readmitted; its last casts of view 1 were
		// numbered and queued on its links (whose windows the cut-off had filled)
		// when it learned of its removal. Its new links send its stream from where
		// it stands at the readmission (the far sites' views had moved on without
		// it: what it numbered before is of a configuration they were not in), so
		// those casts never leave its stack, as its casts sent and lost on the way
		// are never sent again. The report now explains both the same way (the
		// sender's removal), instead of 9 owed deliveries of casts never sent
		// unexplained (spread-site-soak seed 73 at rate max).
		{"LoneRepresentativesUnsentCastsExplained", siteSoakSeedMax, "7", [3]string{"1=1-1", "2=2-4", "3=5-7"}, "73",
			[]string{"crash:4@4.7s", "crash:6@2.5s", "partition:1@2.7s", "heal@4.8s"}},
		// ReadmittedRepresentativeWaitsForItsMembersWord: n5, site 3's
		// representative, is cut off (2.3 s to 4.6 s), removed and readmitted; it
		// had numbered n6's casts up to 544 in their ring, which the cut-off kept
		// from the far sites. n6's views were held up below until crashed n8 left
		// the view (6.4 s), and came in a burst: n6 took over from n5, cast its
		// streams' tStarts (545 for site 3) as the new representative, lost the
		// role to n5, readmitted, and then cast n5 its replay of the stream. n5
		// took the first tStart as the member's word, numbered on from 545 with
		// nothing of the member's, and told the far sites 528 to 544 were lost (27
		// owed deliveries missing). A member's word is now addressed to the
		// representative it tells.
		{"ReadmittedRepresentativeWaitsForItsMembersWord", siteSoakSeedMax, "8", [3]string{"1=1-1", "2=2-4", "3=5-8"}, "177",
			[]string{"crash:8@4.3s", "crash:7@2.5s", "partition:5@2.3s", "heal@4.6s"}},
		// RepresentativeSyncedLateGivesItsMembersWhatItHeld: site 2 (n4 to n6) is
		// cut off (1.7 s to 4.5 s) and removed, n5 crashed. n4 is readmitted
		// first, alone in its site: its stream of site 1 does not know where it
		// stands yet, and it holds site 1's 1068 to 1085 as they come (early). n6
		// comes back before site 1's tStart reaches n4, so n4's replay for the
		// newcomer skips that stream; the tStart then took n4's stream to 1085 and
		// went into the site alone, and n6 stood at 1067 waiting for good (920
		// owed deliveries missing). A representative whose stream learns where it
		// stands now gives its members the tStart and what it has from there.
		{"RepresentativeSyncedLateGivesItsMembersWhatItHeld", siteSoakSeedMax, "7", [3]string{"1=1-3", "2=4-6", "3=7-7"}, "203",
			[]string{"crash:5@2.7s", "partition:4,5,6@1.7s", "heal@4.5s"}},
		// ReplayHoldsWhatItSends: site 3 is cut off whole and readmitted; n2, site
		// 2's representative, sends the readmitted site its stream from where it
		// stands (replay), and sending pumps the link, which numbers the casts
		// waiting at n2 and delivers: stream items the replay had listed were
		// freed and their buffers reused, and n2 sent 621 and 623 with the
		// payloads of 622 and 624 (8 duplicate deliveries at n5 and n7). The
		// replay now holds what it lists until it is done.
		{"ReplayHoldsWhatItSends", siteSoakSeedMax, "7", [3]string{"1=1-1", "2=2-4", "3=5-7"}, "403",
			[]string{"crash:1@2.7s", "crash:3@2.5s", "partition:5,6,7@1.7s", "heal@4.5s"}},
		// LinkSendsLittleBeforeItsFarEndAnswers: site 2 is n2 to n4; n4 is cut off
		// from 2.3 s to 4.2 s and crashes at 4.3 s, n2, its representative,
		// crashes at 2.5 s. Membership removes n2 at 4.6 s, but n3 learns it
		// represents site 2 only at 7.4 s: its ring below holds its views until n4
		// is removed. Site 3's link to n3 sent it a full window meanwhile (all
		// dropped there) and, once n3 answered, got it there only as repairs; with
		// what site 2 lacked queued behind, n5 held site 3's casts until 10.9 s,
		// and n1 never got the last ones (9 owed deliveries missing;
		// spread-site-soak seed 517). A link now sends little until its far end
		// first answers.
		{"LinkSendsLittleBeforeItsFarEndAnswers", siteSoakSeedMax, "8", [3]string{"1=1-1", "2=2-4", "3=5-8"}, "517",
			[]string{"crash:4@4.3s", "crash:2@2.5s", "partition:4@2.3s", "heal@4.2s"}},
	} {
		t.Run(s.name, func(t *testing.T) { s.replay(t, s.nodes, s.sites, s.seed, s.faults...) })
	}
}
