package tests

import (
	"slices"
	"strings"
	"testing"

	"github.com/layercast/layercast/experiment"
	_ "github.com/layercast/layercast/layers/all"
)

// TestHopAgreedOrder: every site sends (three senders in three sites, 1%
// WAN loss, 1 KB messages): every member delivers the same sequence
// (agreed_violations 0, checked by the report's collector), everything is
// delivered, and the report says what agreed order cost against FIFO
// (layers.hop.agreed_wait_ms: how long messages waited after FIFO order
// would have delivered them).
func TestHopAgreedOrder(t *testing.T) {
	rep, _ := simRun(t, "../specs/spread.stack", "spread-wan.scenario", "senders", "all", "rate", "60", "duration", "5s")
	if !rep.DeliveredAll || len(rep.Broken) != 0 || rep.Duplicates != 0 {
		t.Fatalf("delivered_all %v, duplicates %d, broken %q", rep.DeliveredAll, rep.Duplicates, rep.Broken)
	}
	if rep.Loss.DroppedBy.Model == 0 {
		t.Fatalf("no WAN loss in the run")
	}
	f, _ := hopJSON(t, rep)
	if f.AgreedViolations == nil || *f.AgreedViolations != 0 {
		t.Errorf("agreed_violations = %v, want 0", f.AgreedViolations)
	}
	wait, ok := rep.LayerRatios["hop"]["agreed_wait_ms"]
	t.Logf("latency p50 %.1f p90 %.1f p99 %.1f ms; agreed order waited %.1f ms on average after FIFO order", rep.LatencyMs.P50, rep.LatencyMs.P90, rep.LatencyMs.P99, wait)
	if !ok || wait <= 0 || wait > rep.LatencyMs.P99 {
		t.Errorf("layers.hop.agreed_wait_ms = %v (present %v), want a positive wait below the p99 latency %.1f", wait, ok, rep.LatencyMs.P99)
	}
}

// TestHopAgreedOrderRings: three sites of three nodes (ring inside each,
// 1% loss on the LANs as on the WAN links), every node sending: the site's
// representative numbers its members' casts in ring order, and every member
// of every site delivers the one agreed sequence.
func TestHopAgreedOrderRings(t *testing.T) {
	rep, _ := simRun(t, "../specs/spread.stack", "",
		"nodes", "9", "groups-per-node", "1", "group-size", "9", "senders", "all", "rate", "20",
		"duration", "3s", "drain", "5s", "loss", "uniform:1%", "seed", "9",
		"site", "1=1-3", "site", "2=4-6", "site", "3=7-9",
		"wan", "1-2 latency=30ms jitter=2ms bandwidth=250KB queue=64KB loss=uniform:1%",
		"wan", "1-3 latency=80ms jitter=2ms bandwidth=250KB queue=64KB loss=uniform:1%",
		"wan", "2-3 latency=55ms jitter=2ms bandwidth=250KB queue=64KB loss=uniform:1%")
	if !rep.DeliveredAll || len(rep.Broken) != 0 || rep.Duplicates != 0 {
		t.Fatalf("delivered_all %v, duplicates %d, broken %q", rep.DeliveredAll, rep.Duplicates, rep.Broken)
	}
	f, byLink := hopJSON(t, rep)
	if f.AgreedViolations == nil || *f.AgreedViolations != 0 {
		t.Errorf("agreed_violations = %v, want 0", f.AgreedViolations)
	}
	if rep.Layers["ring"]["delivered"] == 0 || rep.Layers["hop"]["delivered"] != rep.Deliveries {
		t.Errorf("ring delivered %d, hop delivered %d, report %d deliveries", rep.Layers["ring"]["delivered"], rep.Layers["hop"]["delivered"], rep.Deliveries)
	}
	t.Logf("latency p50 %.1f p99 %.1f ms; agreed wait %.1f ms; retransmissions by link %v; ring retransmissions %d",
		rep.LatencyMs.P50, rep.LatencyMs.P99, rep.LayerRatios["hop"]["agreed_wait_ms"], byLink, rep.Layers["ring"]["retransmissions"])
}

// TestAgreedViolationsInTable: the text table has the agreed-order checker's
// row, with the count for a stack that promises agreed order and "-" for
// one that does not (nothing was checked).
func TestAgreedViolationsInTable(t *testing.T) {
	hop, _ := simRun(t, "../specs/spread.stack", "spread-2site.scenario", "rate", "40", "duration", "2s")
	e2e, _ := simRun(t, "../specs/spread-e2e.stack", "spread-2site.scenario", "rate", "40", "duration", "2s")
	var b strings.Builder
	if err := experiment.WriteTable(&b, []*experiment.Report{hop, e2e}, false); err != nil {
		t.Fatal(err)
	}
	var row []string
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "agreed-order violations") {
			row = strings.Fields(strings.TrimPrefix(line, "agreed-order violations"))
		}
	}
	if !slices.Equal(row, []string{"0", "-"}) {
		t.Errorf("agreed-order violations row = %q, want [0 -] (hop checked, e2e not promised):\n%s", row, b.String())
	}
}
