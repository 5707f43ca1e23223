package tests

import (
	"fmt"
	"testing"

	"github.com/layercast/layercast/experiment"
	_ "github.com/layercast/layercast/layers/all"
)

// cutRun runs specs/spread.stack on three sites (site 1: n1-n4, site 2:
// n5-n6, site 3: n7-n8; WAN links of 30-60 ms with 1% loss), every node
// casting to the one group at rate for 10 s, with one cut (only the
// packets between its two sets dropped: connectivity not transitive) from
// 2 s to 9 s.
func cutRun(t *testing.T, cut, rate string, seed int) *experiment.Report {
	t.Helper()
	rep, _ := simRun(t, "../specs/spread.stack", "",
		"nodes", "8", "groups-per-node", "1", "group-size", "8", "senders", "0",
		"rate", rate, "msg-size", "1000", "duration", "10s", "drain", "5s", "loss", "none",
		"seed", fmt.Sprint(seed), "site", "1=1-4", "site", "2=5-6", "site", "3=7-8",
		"wan", "1-2 latency=30ms jitter=2ms bandwidth=250KB queue=64KB loss=uniform:1%",
		"wan", "1-3 latency=60ms jitter=2ms bandwidth=250KB queue=64KB loss=uniform:1%",
		"wan", "2-3 latency=45ms jitter=2ms bandwidth=250KB queue=64KB loss=uniform:1%",
		"fault", "cut:"+cut+"@2s", "fault", "heal@9s")
	if !rep.DeliveredAll || rep.Duplicates != 0 || rep.FIFOViolations != 0 || rep.AgreedViolations != 0 || len(rep.Broken) != 0 {
		t.Errorf("cut %s at rate %s, seed %d: delivered all %v (missing %d), %d duplicates, %d FIFO and %d agreed-order violations, broken %q",
			cut, rate, seed, rep.DeliveredAll, rep.Missing, rep.Duplicates, rep.FIFOViolations, rep.AgreedViolations, rep.Broken)
	}
	return rep
}

// TestHopSiteSplitLosesNothing: site 1's LAN splits in two (n1-n2 | n3-n4)
// for 7 s while both halves still reach the far sites. Membership comes
// from one service that hears every node, so nobody is removed: the
// site's ring waits for the token across the split and its members' casts
// wait with it (as JGroups' NAKACK waits for a member its coordinator
// still hears). What must hold: once healed, every owed message delivered
// exactly once, FIFO and agreed order kept everywhere.
func TestHopSiteSplitLosesNothing(t *testing.T) {
	for _, rate := range []string{"40", "max"} {
		for seed := 1; seed <= 3; seed++ {
			cutRun(t, "1,2|3,4", rate, seed)
		}
	}
}

// TestHopRoutesAroundACutWANLink: sites 1 and 3 lose touch (every node of
// one against every node of the other) while both still reach site 2:
// Spread section 3.1's case for routing trees. The Hop links between them
// go down and the trees route through site 2, so delivery goes on during
// the 7 s cut: the slowest messages (p99) wait well under the cut's
// length, nothing is lost, order is kept.
func TestHopRoutesAroundACutWANLink(t *testing.T) {
	for _, rate := range []string{"40", "max"} {
		rep := cutRun(t, "1,2,3,4|7,8", rate, 1)
		if down := rep.Layers["hop"]["links_down"]; down < 2 {
			t.Errorf("rate %s: %d Hop links declared down, want both directions of the cut link", rate, down)
		}
		if p99 := rep.LatencyMs.P99; p99 >= 5000 {
			t.Errorf("rate %s: latency p99 %.0f ms: deliveries waited for the heal (7 s later) instead of going round through site 2", rate, p99)
		}
	}
}

// Spread-site-soak seed 3146 at rate max: sites 1 (n1) and 3 (n4-n9) are
// cut apart from 1.4 s to 3.7 s while both reach site 2 (n2-n3), which
// relays; site 3's representative n4 crashes at 3.4 s. When membership
// removes it, site 2's new link to n5 is sent what site 3 lacks of both
// far streams, site 1's too: for 38 ms, until n1's heartbeat says its own
// new link to n5 is up, n2 routes site 1's tree through itself. The tree
// turned back, but site 1's 735 packets stayed queued on n2's link behind
// site 2's, though n1 resent them too; site 2's casts waited behind them
// 5.5 s, past the end (47 owed deliveries missing). A link that stops
// carrying a source's stream drops what waits unsent of it.
func TestHopRerouteDropsStaleQueue(t *testing.T) {
	rep := siteSoak{nodes: "9", sites: [3]string{"1=1-1", "2=2-3", "3=4-9"}, seed: "3146", rate: "max", loss: "uniform:1%",
		faults: []string{"crash:4@3.4s", "crash:7@2.5s", "cut:1|4,5,6,7,8,9@1.4s", "heal@3.7s"}}.run(t)
	if !rep.DeliveredAll || rep.Duplicates != 0 || rep.FIFOViolations != 0 || rep.AgreedViolations != 0 || len(rep.Broken) != 0 {
		t.Errorf("delivered all %v (missing %d, %d unexplained), %d duplicates, %d FIFO and %d agreed-order violations, broken %q",
			rep.DeliveredAll, rep.Missing, rep.MissingUnexplained, rep.Duplicates, rep.FIFOViolations, rep.AgreedViolations, rep.Broken)
	}
	if n := rep.Layers["hop"]["unqueued"]; n == 0 {
		t.Errorf("hop.unqueued = 0: the scenario no longer reroutes a stream with a queue waiting")
	}
}
