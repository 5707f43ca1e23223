package experiment_test

import "testing"

// Issue 9 item 7: what fifo gives up reaches the application (OnLost) and
// the report counts it, as many as fifo's skipped counter says.
func TestReportCountsGivenUp(t *testing.T) {
	rep := run(t, "fifo(max_reorder=2) : reliable", "nodes", "4", "groups-per-node", "1", "group-size", "4",
		"senders", "2", "rate", "100", "duration", "1s", "loss", "uniform:10%")
	var skipped int64
	for name, cs := range rep.Layers {
		if name == "fifo" {
			skipped = cs["skipped"]
		}
	}
	if skipped == 0 || rep.GivenUp != skipped {
		t.Fatalf("given_up %d, fifo skipped %d: want the same, non-zero", rep.GivenUp, skipped)
	}
}
