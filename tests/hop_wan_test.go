package tests

import (
	"encoding/json"
	"testing"

	"github.com/layercast/layercast/experiment"
	_ "github.com/layercast/layercast/layers/all"
)

// hopFigures reads the report as its JSON says it: agreed_violations and
// the layers' objects, with layers.hop.retransmissions_by_link.
type hopFigures struct {
	AgreedViolations *int64 `json:"agreed_violations"`
	Layers           struct {
		Hop map[string]json.RawMessage `json:"hop"`
	} `json:"layers"`
}

func hopJSON(t *testing.T, rep *experiment.Report) (hopFigures, map[string]int64) {
	t.Helper()
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var f hopFigures
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	var byLink map[string]int64
	if raw, ok := f.Layers.Hop["retransmissions_by_link"]; ok {
		if err := json.Unmarshal(raw, &byLink); err != nil {
			t.Fatalf("layers.hop.retransmissions_by_link = %s: %v", raw, err)
		}
	}
	return f, byLink
}

// TestHopWANThroughput is the paper's wide-area experiment (section 4):
// three sites joined by WAN links of 30-80 ms with 1% loss and a bandwidth
// limit, one sender of 1 KB messages at rate max. Hop-by-hop recovery with
// per-link flow control delivers everything, in agreed order, at least 3
// times the throughput of the paper's comparator, one ring stretched across
// the wide area (the paper: 4.7x), which delivers everything at rate max
// too (the token holds the sender back). The end-to-end alternative is
// beside, at rate max and near the highest rate it sustains; it delivers
// everything at both, and the 3x against it is not asserted (see
// experiment/reproduce/spread.go).
func TestHopWANThroughput(t *testing.T) {
	hop, _ := simRun(t, "../specs/spread.stack", "spread-wan.scenario")
	wide, _ := simRun(t, "../specs/spread-ring-wan.stack", "spread-wan.scenario")
	e2e, _ := simRun(t, "../specs/spread-e2e.stack", "spread-wan.scenario")
	t.Logf("ring across the WAN: %.1f msgs/s, latency p50 %.1f p90 %.1f p99 %.1f ms", wide.ThroughputMsgsPerS, wide.LatencyMs.P50, wide.LatencyMs.P90, wide.LatencyMs.P99)
	if !wide.DeliveredAll || len(wide.Broken) != 0 {
		t.Errorf("ring across the WAN: delivered_all %v, broken %q", wide.DeliveredAll, wide.Broken)
	}
	if r := hop.ThroughputMsgsPerS / wide.ThroughputMsgsPerS; r < 3 {
		t.Errorf("hop throughput %.1f is %.2fx the ring across the WAN's %.1f, want at least 3x", hop.ThroughputMsgsPerS, r, wide.ThroughputMsgsPerS)
	}
	t.Logf("hop: %.1f msgs/s, latency p50 %.1f p90 %.1f p99 %.1f ms", hop.ThroughputMsgsPerS, hop.LatencyMs.P50, hop.LatencyMs.P90, hop.LatencyMs.P99)
	t.Logf("e2e: %.1f msgs/s, latency p50 %.1f p90 %.1f p99 %.1f ms", e2e.ThroughputMsgsPerS, e2e.LatencyMs.P50, e2e.LatencyMs.P90, e2e.LatencyMs.P99)
	if !hop.DeliveredAll || hop.Duplicates != 0 || len(hop.Broken) != 0 {
		t.Errorf("hop: delivered_all %v, duplicates %d, broken %q", hop.DeliveredAll, hop.Duplicates, hop.Broken)
	}
	if hop.Loss.DroppedBy.Model == 0 {
		t.Errorf("hop: no WAN loss in the run (dropped_by %+v): the scenario lost its 1%% loss", hop.Loss.DroppedBy)
	}
	f, byLink := hopJSON(t, hop)
	if f.AgreedViolations == nil || *f.AgreedViolations != 0 {
		t.Errorf("agreed_violations = %v, want 0", f.AgreedViolations)
	}
	var retx int64
	for _, n := range byLink {
		retx += n
	}
	if len(byLink) != 6 || retx == 0 {
		t.Errorf("layers.hop.retransmissions_by_link = %v, want 6 links and some retransmissions", byLink)
	}
	// For the record, not checked: the end-to-end stack is windowed
	// (mflow, 64 KB per receiver), so at rate max it no longer collapses:
	// it delivers everything at about 126 msgs/s, with its window's
	// queueing in the latency (p50 near 1 s). Near the highest rate it
	// sustains (about 175/s by scripts/spread-rates.sh; 180/s here) hop's
	// gain is what per-link pacing adds: every site is one link from the
	// source, so recovery is as local end to end as hop by hop.
	slow, _ := simRun(t, "../specs/spread-e2e.stack", "spread-wan.scenario", "rate", "180")
	t.Logf("e2e at 180/s: delivered_all %v, %.1f msgs/s, latency p50 %.1f p99 %.1f ms; hop at max is %.2fx that",
		slow.DeliveredAll, slow.ThroughputMsgsPerS, slow.LatencyMs.P50, slow.LatencyMs.P99, hop.ThroughputMsgsPerS/slow.ThroughputMsgsPerS)
	fe, _ := hopJSON(t, e2e)
	if fe.AgreedViolations == nil || *fe.AgreedViolations != 0 {
		t.Errorf("e2e agreed_violations = %v, want 0 (not promised, not checked)", fe.AgreedViolations)
	}
}

// TestHopChainRepairByParent: four sites in a chain, the sender in site 1
// and loss only on the last link (3-4). Every loss is repaired by site 3,
// that link's parent: the per-link retransmission counters show s3>s4 and
// nothing else, so the source never retransmitted.
func TestHopChainRepairByParent(t *testing.T) {
	rep, _ := simRun(t, `hop(links="1-2,2-3,3-4")`, "spread-chain.scenario")
	if !rep.DeliveredAll || len(rep.Broken) != 0 {
		t.Fatalf("delivered_all %v, broken %q", rep.DeliveredAll, rep.Broken)
	}
	if rep.Loss.DroppedBy.Model == 0 || rep.Loss.Recovered == 0 {
		t.Fatalf("dropped_by %+v, recovered %d: the last link lost nothing", rep.Loss.DroppedBy, rep.Loss.Recovered)
	}
	_, byLink := hopJSON(t, rep)
	t.Logf("retransmissions by link %v; recovered %d of %d drops, recovery latency %v ms", byLink, rep.Loss.Recovered, rep.Loss.Dropped, rep.LayerRatios["hop"]["recovery_latency_ms"])
	for l, n := range byLink {
		if l == "s3>s4" {
			if n == 0 {
				t.Errorf("retransmissions_by_link[s3>s4] = 0, want the parent's repairs")
			}
			continue
		}
		if n != 0 {
			t.Errorf("retransmissions_by_link[%s] = %d, want 0 (only the lossy link's parent repairs)", l, n)
		}
	}
	if _, ok := byLink["s1>s2"]; !ok {
		t.Errorf("no counter for the source's link s1>s2: %v", byLink)
	}
}

// TestRingAcrossWAN: ring(sites=off) is the paper's comparator, one ring
// over every member across the sites: on the two-site scenario at a rate
// it sustains it delivers everything in agreed order, where ring with its
// default one ring per site view leaves the other site's member out.
func TestRingAcrossWAN(t *testing.T) {
	wide, _ := simRun(t, "../specs/spread-ring-wan.stack", "spread-2site.scenario", "rate", "40", "duration", "3s")
	if !wide.DeliveredAll || len(wide.Broken) != 0 || wide.Deliveries == 0 {
		t.Errorf("ring(sites=off): delivered_all %v, deliveries %d, broken %q", wide.DeliveredAll, wide.Deliveries, wide.Broken)
	}
	if f, _ := hopJSON(t, wide); f.AgreedViolations == nil || *f.AgreedViolations != 0 {
		t.Errorf("ring(sites=off): agreed_violations = %v, want 0", f.AgreedViolations)
	}
	perSite, _ := simRun(t, "ring : gms", "spread-2site.scenario", "rate", "40", "duration", "3s")
	if perSite.DeliveredAll || perSite.Deliveries != 0 {
		t.Errorf("ring per site: delivered_all %v, %d deliveries; want none across the sites (two rings of one)", perSite.DeliveredAll, perSite.Deliveries)
	}
}

// TestHopSitesOfSeveralAtRateMax: the paper's three sites with three nodes
// each, a sender in each site at rate max. A representative numbered every
// member's cast at once, so the members' traffic went onto WAN links that
// could not carry it and the link queues overflowed (queue_drops): 133,196
// of 198,416 owed deliveries missing, and 586,741 of 617,784 once it sent
// its site's messages on only when ring handed them back (its own link
// queues stayed short, so nothing held its members). It now numbers
// members' casts only
// while its links and its site's ring are short, which holds the members
// off (their casts wait unnumbered): everything owed is delivered, in
// agreed order, and nothing is dropped from a link queue.
func TestHopSitesOfSeveralAtRateMax(t *testing.T) {
	rep, _ := simRun(t, "../specs/spread.stack", "",
		"nodes", "9", "groups-per-node", "1", "group-size", "9", "senders", "3", "rate", "max",
		"duration", "5s", "drain", "5s", "loss", "none", "latency", "1ms", "jitter", "100us", "seed", "9",
		"site", "1=1-3", "site", "2=4-6", "site", "3=7-9",
		"wan", "1-2 latency=30ms jitter=2ms bandwidth=250KB queue=64KB loss=uniform:1%",
		"wan", "1-3 latency=80ms jitter=2ms bandwidth=250KB queue=64KB loss=uniform:1%",
		"wan", "2-3 latency=55ms jitter=2ms bandwidth=250KB queue=64KB loss=uniform:1%")
	wantHopAgreedAll(t, rep)
	if d := rep.Layers["hop"]["queue_drops"]; d != 0 {
		t.Errorf("layers.hop.queue_drops = %d, want 0: the links were fed more than they carry", d)
	}
	if rep.Backpressure == 0 {
		t.Errorf("backpressure = 0: at rate max the senders were never held off")
	}
}

// TestHopHoldsOffWhileRingLetsGo: three sites (of 3, 1 and 5 nodes), every
// node casting at rate max, 1% loss inside the sites, and a member of site
// 1 crashing. Ring below hop holds the application off by its own queue and
// hop by its links; ring's Resume, passed up as it came, let the
// application go while hop still held it, and site 1's representative cast
// at about 12,000 messages a second into links that carry 500: 33,581
// casts for 56,174 of 233,744 owed deliveries. Hop now holds the
// application while either holds: everything owed is delivered.
func TestHopHoldsOffWhileRingLetsGo(t *testing.T) {
	rep := siteSoak{nodes: "9", sites: [3]string{"1=1-3", "2=4", "3=5-9"}, seed: "16", rate: "max", loss: "uniform:1%",
		faults: []string{"crash:3@1.4s"}}.run(t)
	wantHopAgreedAll(t, rep)
}

// wantHopAgreedAll checks what a Hop run over a scenario it must survive
// gives: every owed delivery made, once, no promise broken, and one agreed
// order at every member (agreed_violations 0).
func wantHopAgreedAll(t *testing.T, rep *experiment.Report) {
	t.Helper()
	if !rep.DeliveredAll || len(rep.Broken) != 0 || rep.Duplicates != 0 {
		t.Errorf("delivered_all %v, missing %d of %d owed, duplicates %d, broken %q",
			rep.DeliveredAll, rep.Missing, rep.DeliveriesExpected, rep.Duplicates, rep.Broken)
	}
	f, _ := hopJSON(t, rep)
	if f.AgreedViolations == nil || *f.AgreedViolations != 0 {
		t.Errorf("agreed_violations = %v, want 0", f.AgreedViolations)
	}
}
