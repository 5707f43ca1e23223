package tests

import (
	"testing"

	_ "github.com/layercast/layercast/layers/all"
)

// TestHopRepresentativeFailover: site 1 has two nodes; its representative
// (n1, the smaller id) crashes. Membership removes it, n2 becomes the
// representative and takes over the Hop link: the casts n2 made while n1
// was dead and the messages site 2 sent to n1 reach their members (n2
// casts its unnumbered casts again; site 2's representative sends the new
// link what site 1 does not hold), every owed message is delivered, in one
// agreed order.
func TestHopRepresentativeFailover(t *testing.T) {
	rep, _ := simRun(t, "../specs/spread.stack", "",
		"nodes", "3", "groups-per-node", "1", "group-size", "3", "senders", "all", "rate", "50",
		"duration", "5s", "drain", "5s", "loss", "none", "seed", "9",
		"site", "1=1-2", "site", "2=3",
		"wan", "1-2 latency=30ms bandwidth=250KB queue=64KB loss=uniform:1%",
		"fault", "crash:1@2s")
	wantHopAgreedAll(t, rep)
	if rep.DeliveriesOfExpected < 400 {
		t.Errorf("%d owed deliveries made, want those of n2 and n3 over 5 s (about 500)", rep.DeliveriesOfExpected)
	}
	if rep.Layers["hop"]["resent"] == 0 {
		t.Errorf("layers.hop.resent = 0: the new link got nothing of what site 1 lacked")
	}
}

// TestHopRepresentativeCrashSiteKeepsItsOwed: site 1 has three nodes, all
// five nodes cast, and site 1's representative (n1) crashes. It had
// numbered casts into its site (n2 and n3 hold them) that it never got
// onto the Hop link before it crashed; site 2's stream of site 1 waited on
// that gap for good, and agreed order at site 2 with it (4,237 owed
// deliveries missing). A member keeps what a representative keeps, so n2,
// taking over, sends site 2 what it lacks.
func TestHopRepresentativeCrashSiteKeepsItsOwed(t *testing.T) {
	rep, _ := simRun(t, "../specs/spread.stack", "",
		"nodes", "5", "groups-per-node", "1", "group-size", "5", "seed", "9",
		"site", "1=1-3", "site", "2=4-5", "fault", "crash:1@2s")
	wantHopAgreedAll(t, rep)
	if rep.Layers["hop"]["resent"] == 0 {
		t.Errorf("layers.hop.resent = 0: n2 sent site 2 nothing of what it lacked")
	}
}

// TestHopRepresentativeCrashNoNumberReused: three sites of two nodes, and
// site 2's representative (n3) crashes. It had numbered its own cast as
// site seq 1180 and sent it to sites 1 and 3, but crashed before its ring
// carried it to n4; n4, taking over, gave 1180 to n4's next cast, which
// sites 1 and 3 then dropped as a copy of what they had (4 owed deliveries
// missing). A representative now sends its site's messages onto the links
// only once ring hands them back, so a far site holds no number the site's
// survivors do not know.
func TestHopRepresentativeCrashNoNumberReused(t *testing.T) {
	rep, _ := simRun(t, "../specs/spread.stack", "",
		"nodes", "6", "groups-per-node", "1", "group-size", "6", "seed", "9", "duration", "6s", "drain", "4s",
		"site", "1=1-2", "site", "2=3-4", "site", "3=5-6",
		"wan", "1-2 latency=30ms jitter=2ms bandwidth=500KB queue=64KB loss=uniform:1%",
		"fault", "crash:3@5.9s")
	wantHopAgreedAll(t, rep)
}

// TestHopRepresentativeCrashDeliversWhatItsSiteHas: site 1 has three nodes
// and its representative (n1) crashes. It used to deliver the casts it
// numbered at once, before its ring carried them: n1 delivered n3's cast
// as site seq 263, which no survivor ever got, while every other node
// delivered it later, numbered again by n2 (an agreed-order violation). A
// representative now takes its site's messages into its own stream when
// ring hands them back, so what it delivers its site has.
func TestHopRepresentativeCrashDeliversWhatItsSiteHas(t *testing.T) {
	rep, _ := simRun(t, "../specs/spread.stack", "",
		"nodes", "5", "groups-per-node", "1", "group-size", "5", "seed", "20", "duration", "6s", "drain", "4s",
		"site", "1=1-3", "site", "2=4-5", "fault", "crash:1@1.0s")
	wantHopAgreedAll(t, rep)
}

// TestHopRepresentativeCrashFarSitesKeepWhatItLacked: three sites, and
// site 1's representative (n1) crashes. Its heartbeats said site 1 held
// site 2's stream up to what n1 held, not what it had cast into its site's
// ring; site 2 freed on that word what n2, taking over, never got, and
// n2's stream of site 2 waited on the gap for good (1,054 owed deliveries
// missing at n2). A representative's heartbeat now gives, for a far
// site's stream, what its site's ring has handed back.
func TestHopRepresentativeCrashFarSitesKeepWhatItLacked(t *testing.T) {
	rep, _ := simRun(t, "../specs/spread.stack", "",
		"nodes", "7", "groups-per-node", "1", "group-size", "7", "seed", "43", "duration", "6s", "drain", "4s",
		"site", "1=1-2", "site", "2=3-5", "site", "3=6-7", "fault", "crash:1@4.3s")
	wantHopAgreedAll(t, rep)
}
