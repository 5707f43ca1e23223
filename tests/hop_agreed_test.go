package tests

import (
	"testing"

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
