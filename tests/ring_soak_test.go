package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/experiment"
	_ "github.com/layercast/layercast/layers/all"
)

// ringSoak runs soak seed seed of specs/ring.stack's scenario family on
// spec and fails the test on any broken invariant the soak checks.
func ringSoak(t *testing.T, spec string, seed uint64, want string) *experiment.Report {
	t.Helper()
	sp, err := compose.Load(spec)
	if err != nil {
		t.Fatal(err)
	}
	sc := experiment.SoakScenario(seed, false)
	sc.Drain = 6 * time.Second // the drain these seeds broke under, so each still fails without its fix
	if want != "" && !strings.Contains(sc.Describe(), want) {
		t.Fatalf("seed %d is no longer the scenario the test replays: %s", seed, sc.Describe())
	}
	rep, err := experiment.Run(context.Background(), "sim", sp, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if kinds, detail := experiment.SoakCheck(rep); len(kinds) > 0 {
		t.Errorf("%s seed %d (%s): %v: %s", spec, seed, sc.Describe(), kinds, detail)
	}
	return rep
}

// TestRingSoakBurstyLoss is soak seed 71 on specs/ring.stack (15 nodes,
// Markov loss of 13.6% in bursts of 5 packets, no fault): every owed
// delivery is made before the drain ends. A lost token hop costs a burst's
// length of retransmission timeouts, so with a fixed 10 ms timer (five LAN
// round trips) rotations took 100 ms or more, the leader regenerated tokens
// that were only slow, and the ring carried less than the offered load:
// 517 casts were still queued when the run ended. The timer now follows
// the measured acknowledgement round trip.
func TestRingSoakBurstyLoss(t *testing.T) {
	rep := ringSoak(t, "../specs/ring.stack", 71, "markov:13.6%,5")
	if rep.NeverSent != nil && *rep.NeverSent > 0 {
		t.Errorf("%d casts still queued at the end", *rep.NeverSent)
	}
}

// TestRingSoakStaticCrash is soak seed 7 on specs/ring.stack (8 nodes,
// static membership, n6 crashes at 2.368 s): static views keep n6 in the
// site's ring for good, so the token cannot rotate past it and the whole
// site's agreed order stalls, groups n6 is not in included. The report
// explains every missing delivery by that crash (before, 770 of them were
// unexplained: only senders of n6's own groups were taken as held off).
func TestRingSoakStaticCrash(t *testing.T) {
	rep := ringSoak(t, "../specs/ring.stack", 7, "crash:6@2368ms")
	found := false
	for _, n := range rep.Notes {
		found = found || strings.Contains(n, "n6 crashed and static membership keeps it: the agreed order of its site stalls there")
	}
	if rep.Missing == 0 || !found {
		t.Errorf("%d owed deliveries missing, none explained by n6's crash stalling the site's order: %q", rep.Missing, rep.Notes)
	}
}

// TestRingSoakDeferredRequest is soak seed 75 on specs/spread.stack (gms,
// 15 nodes, partitions healed): every owed delivery is made. After the
// heal, the one member holding a packet others asked for had spent its
// visit's budget, so it left the request for its next visit; the members
// after it, lacking the packet, went on counting it as passed unanswered,
// and the last of them declared it held by no member: every member skipped
// it (2 owed deliveries lost). A holder that defers a request now restarts
// its count.
func TestRingSoakDeferredRequest(t *testing.T) {
	rep := ringSoak(t, "../specs/spread.stack", 75, "partition:11@1021ms")
	if !rep.DeliveredAll {
		t.Errorf("%d of %d owed deliveries missing", rep.Missing, rep.DeliveriesExpected)
	}
}
