package tests

import (
	"slices"
	"strings"
	"testing"

	_ "github.com/layercast/layercast/layers/all"
)

// TestReportStaticCrashBlamesHarness is issue 8 item 6: with static
// membership a crashed node stays in the views, so mflow senders wait for
// its credit and their casts stay queued. The report says so, counts those
// casts as never sent (not lost by the network), explains every missing
// delivery, and no promise is broken.
func TestReportStaticCrashBlamesHarness(t *testing.T) {
	rep, _ := simRun(t, "../specs/mflow.stack", "", "nodes", "8", "group-size", "4", "groups-per-node", "2", "duration", "3s", "fault", "crash:3@1s")
	if rep.NeverSent == nil || *rep.NeverSent == 0 {
		t.Fatalf("never_sent = %v, want the casts mflow held for n3's credit", rep.NeverSent)
	}
	if rep.Missing == 0 || rep.MissingNeverSent != rep.Missing || rep.MissingExplained != rep.Missing || rep.MissingUnexplained != 0 {
		t.Errorf("missing %d: never sent %d, explained %d, unexplained %d; want all never sent and explained",
			rep.Missing, rep.MissingNeverSent, rep.MissingExplained, rep.MissingUnexplained)
	}
	if !slices.ContainsFunc(rep.Notes, func(n string) bool {
		return strings.Contains(n, "n3 crashed and static membership keeps it: senders held off")
	}) {
		t.Errorf("notes do not blame the static membership: %q", rep.Notes)
	}
	if rep.DeliveriesExpected != rep.DeliveriesOfExpected+rep.Missing {
		t.Errorf("expected %d != made %d + missing %d: not counted over one set", rep.DeliveriesExpected, rep.DeliveriesOfExpected, rep.Missing)
	}
	if len(rep.Broken) != 0 {
		t.Errorf("broken promises %q, want none: the harness, not the stack, held the casts", rep.Broken)
	}
}
