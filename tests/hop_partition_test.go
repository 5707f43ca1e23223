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

// siteSoakSeedMax replays one run of scripts/spread-site-soak.sh at rate
// max (every node casting as fast as the stack takes it; siteSoak) and
// checks agreed order and every owed delivery.
func siteSoakSeedMax(t *testing.T, nodes string, sites [3]string, seed string, faults ...string) {
	t.Helper()
	wantAgreedNoneUnexplained(t, siteSoak{nodes: nodes, sites: sites, seed: seed, rate: "max", faults: faults}.run(t))
}

// siteSoakRun runs one seed of scripts/spread-site-soak.sh as siteSoakSeed
// does and returns its report.
func siteSoakRun(t *testing.T, nodes string, sites [3]string, seed string, faults ...string) *experiment.Report {
	t.Helper()
	return siteSoak{nodes: nodes, sites: sites, seed: seed, faults: faults}.run(t)
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
