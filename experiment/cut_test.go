package experiment_test

import (
	"strings"
	"testing"
)

// A cut in force at the end explains what its sides never got from each
// other, and nothing else: n1 and n2 lose touch at 1 s for good while n3
// hears both, so n3 gets everything, the 400 deliveries between n1 and n2
// after the cut (200 casts each) are missing, explained by the cut, and no
// promise is broken.
func TestCutInForceAtTheEndExplainsOnlyItsSides(t *testing.T) {
	rep := run(t, "fifo : reliable", "nodes", "3", "groups-per-node", "1", "group-size", "3",
		"rate", "100", "duration", "3s", "drain", "2s", "fault", "cut:1|2@1s")
	if rep.Missing != 400 || rep.MissingUnexplained != 0 || len(rep.Broken) != 0 {
		t.Fatalf("missing %d (unexplained %d), broken %q; want the 400 casts n1 and n2 made to each other in the 2 s after the cut, all explained", rep.Missing, rep.MissingUnexplained, rep.Broken)
	}
	found := false
	for _, n := range rep.Notes {
		found = found || strings.Contains(n, "cut at 1s not healed by the end (400)")
	}
	if !found {
		t.Errorf("notes %q do not put the missing deliveries down to the cut", rep.Notes)
	}
}
