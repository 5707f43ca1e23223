package tests

import (
	"testing"
	"time"

	_ "github.com/layercast/layercast/layers/all"
)

// TestGMSCrashInSimulator is issue 3's check: with real membership
// (specs/gms.stack), a node that crashes in the middle of a run is removed
// from all its groups within the failure-detector timeout plus one batching
// interval, and every surviving member delivers every message sent by the
// surviving senders, under 1% loss.
func TestGMSCrashInSimulator(t *testing.T) {
	rep, _ := simRun(t, "../specs/gms.stack", "gms-crash.scenario")
	t.Logf("messages sent %d, deliveries %d of %d expected, dropped %d, recovered %d",
		rep.MessagesSent, rep.Deliveries, rep.DeliveriesExpected, rep.Loss.Dropped, rep.Loss.Recovered)
	if !rep.DeliveredAll || rep.Missing != 0 {
		t.Errorf("delivered_all = %v, missing %d of %d expected deliveries", rep.DeliveredAll, rep.Missing, rep.DeliveriesExpected)
	}
	if rep.Duplicates != 0 || rep.FIFOViolations != 0 {
		t.Errorf("duplicates = %d, fifo_violations = %d, want 0 and 0", rep.Duplicates, rep.FIFOViolations)
	}
	if rep.Loss.Dropped == 0 {
		t.Errorf("loss.dropped = 0: the scenario's 1%% loss dropped nothing")
	}
	svc := rep.Layers["gms_service"]
	if svc["crash_removals"] != 1 || svc["nodes_failed"] != 1 {
		t.Fatalf("gms_service counters: crash_removals = %d, nodes_failed = %d, want 1 and 1 (%v)", svc["crash_removals"], svc["nodes_failed"], svc)
	}
	// fd_timeout 500ms + suspect_timeout (= fd_timeout) + view_interval
	// 100ms (specs/gms.stack), plus the view's one-way trip (1ms latency)
	// and the harness's 1ms polling.
	bound := 500*time.Millisecond + 500*time.Millisecond + 100*time.Millisecond + 2*time.Millisecond
	if got := time.Duration(svc["crash_removal_max_us"]) * time.Microsecond; got > bound || got < 900*time.Millisecond {
		t.Errorf("crashed node removed at every survivor after %v, want between 900ms and %v", got, bound)
	}
}
