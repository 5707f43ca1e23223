package tests

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// TestRicochetNAKTailFigure8 is Figure 8(c)'s set-up, 20% uniform loss
// under specs/ricochet.stack (NAKs 100 ms after discovery, retried every
// 50 ms until the sender's round trip is measured), scaled to d=10 so that
// 4 s of virtual time give every stream tens of packets (with d=125 a
// group's sender casts under once a second, and the maximum over the first
// casts of 2,000 streams is an extreme of runs of lost NAKs and digests),
// seeds 1 to 10. The paper recovers everything within 250 ms: lec reports
// a loss to the NAK layer as soon as a repair shows it (section 4.2.7) and
// takes the NAK layer's retransmissions back to decode with, so that every
// message is delivered, NAK recoveries have p99 under 250 ms and max under
// 400 ms, and no packet is recovered twice (lec's own count matches the
// deliveries it recovered; before, about 1.6% of them were NAK
// retransmissions rebuilt again).
//
// The tail's causes, each fixed in reliable: NAK rounds lost (36% of them
// at 20%; nak_copies=2 in the spec brings it to about 8%); a stream never
// NAKed before retried at nak_retry with backoff while its sender's round
// trip was known from its other streams (the round trip is now the
// sender's); an ask for a sender's first cast, sent once, lost with its
// answer; and a hint about a first cast forgotten when the stream was
// placed (NAKed nak_delay after placement, not after the hint). Max
// before, seeds 1-3: 329, 340, 340 ms; after: 240, 250, 245 ms.
//
// The full set-up (16 nodes, d=125, 30 s, seeds 1-3; 15 to 30 s of wall
// time each) runs with RICOCHET_FIGURE8=1: max before 435, 541, 378 ms;
// after 308, 285, 282 ms; p99 200 ms.
func TestRicochetNAKTailFigure8(t *testing.T) {
	kv := []string{"nodes", "16", "groups-per-node", "10", "loss", "uniform:20%", "duration", "4s"}
	seeds := 10
	if os.Getenv("RICOCHET_FIGURE8") != "" {
		kv = []string{"nodes", "16", "loss", "uniform:20%", "duration", "30s"}
		seeds = 3
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			figure8Seed(t, append(kv[:len(kv):len(kv)], "seed", strconv.Itoa(seed))...)
		})
	}
}

// figure8Seed is one run of TestRicochetNAKTailFigure8.
func figure8Seed(t *testing.T, kv ...string) {
	rep := lecRun(t, ricochetSpec(t), "ricochet.scenario", kv...)
	nak := rep.Loss.RecoveryLatencyByMs["nak"]
	byLEC := rep.Loss.RecoveredBy["lec"]
	lec := rep.Layers["lec"]
	t.Logf("dropped %d, recovered by %v, nak latency %+v ms, lec counted %d, hints %d, found above %d",
		rep.Loss.DroppedByModel, rep.Loss.RecoveredBy, nak, lec["recovered"], lec["loss_hints"], lec["found_above"])
	if !rep.DeliveredAll || rep.Missing != 0 || rep.Duplicates != 0 {
		t.Errorf("delivered_all = %v, missing %d, duplicates %d; want everything once", rep.DeliveredAll, rep.Missing, rep.Duplicates)
	}
	if rep.Loss.RecoveredBy["nak"] < 100 {
		t.Fatalf("only %d NAK recoveries: too few to measure a tail", rep.Loss.RecoveredBy["nak"])
	}
	if nak.P99 >= 250 || nak.Max >= 400 {
		t.Errorf("NAK recovery p99 %.1f ms, max %.1f ms; want under 250 and 400", nak.P99, nak.Max)
	}
	// Discovered by lec, most NAKs go out nak_delay after the loss (without
	// hints the median waited for reliable's own gap or digest: 154 ms).
	if nak.P50 >= 125 {
		t.Errorf("NAK recovery p50 %.1f ms, want under nak_delay + 25 ms = 125", nak.P50)
	}
	if extra := lec["recovered"] - byLEC; extra < 0 || extra*1000 > byLEC {
		t.Errorf("lec counted %d recoveries, %d deliveries were its own: want the same within 0.1%%", lec["recovered"], byLEC)
	}
	if lec["loss_hints"] == 0 || lec["found_above"] == 0 {
		t.Errorf("loss_hints %d, found_above %d: lec and the NAK layer never spoke", lec["loss_hints"], lec["found_above"])
	}
}
