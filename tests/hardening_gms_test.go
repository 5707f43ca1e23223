package tests

import (
	"testing"

	"github.com/layercast/layercast/experiment"
	_ "github.com/layercast/layercast/layers/all"
)

// runGMSReplay runs specs/gms.stack under a scenario given as stacktool run
// flags (key, value pairs).
func runGMSReplay(t *testing.T, kv ...string) *experiment.Report {
	t.Helper()
	rep, _ := simRun(t, "../specs/gms.stack", "", kv...)
	return rep
}

// Issue 8 items 2 and 4: n2 frozen for 800ms is suspected but back before
// the suspicion period ends, so it is not removed and every message is
// delivered once, in order:
// stacktool run specs/gms.stack --nodes 4 --groups-per-node 1 --group-size 4
// --fault freeze:2@1s+800ms --duration 4s --drain 5s
func TestGMSShortFreezeNotRemoved(t *testing.T) {
	rep := runGMSReplay(t, "nodes", "4", "groups-per-node", "1", "group-size", "4",
		"fault", "freeze:2@1s+800ms", "duration", "4s", "drain", "5s")
	svc := rep.Layers["gms_service"]
	if svc["nodes_failed"] != 0 {
		t.Errorf("gms_service.nodes_failed = %d, want 0: an 800ms freeze is within fd_timeout + suspect_timeout", svc["nodes_failed"])
	}
	if rep.Deliveries != 4800 || rep.DeliveriesExpected != 4800 || rep.Duplicates != 0 || rep.FIFOViolations != 0 {
		t.Errorf("deliveries %d of %d, duplicates %d, FIFO violations %d; want 4800 of 4800, 0, 0",
			rep.Deliveries, rep.DeliveriesExpected, rep.Duplicates, rep.FIFOViolations)
	}
}

// Issue 8 item 3: a crash fault early in the run used to keep the harness
// waiting for the crashed node's views for good (fault clocks started
// before sending, and settling waited for every node):
// stacktool run specs/gms.stack --fault crash:3@100ms
func TestGMSEarlyCrashSettles(t *testing.T) {
	rep := runGMSReplay(t, "fault", "crash:3@100ms", "duration", "2s", "drain", "3s")
	svc := rep.Layers["gms_service"]
	if svc["nodes_failed"] != 1 || svc["crash_removals"] != 1 {
		t.Errorf("gms_service nodes_failed = %d, crash_removals = %d, want 1 and 1", svc["nodes_failed"], svc["crash_removals"])
	}
}
