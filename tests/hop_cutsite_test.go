package tests

import (
	"testing"

	"github.com/layercast/layercast/internal/removal"
)

// TestHopSitesCutApartSmallerSideLeaves: sites 1 (n1, n2) and 3 (n4-n8)
// are cut apart by the wide area from 2 s to 9 s while site 2 (n3), the
// only relay, is down (crashed at 1.5 s); the membership service hears
// everybody. Hop at each side finds the other cut off and, dead_after
// later, dead: a dead site stays dead while it is in the view (neither
// probed nor revived), so the two sides never sent to each other again,
// their members in one view, and every cast between them was owed and
// missing. Each side's representative now asks membership to remove the
// sites it cannot reach; the service removes the smaller side (site 1)
// only, which joins again, readmitted afresh on new links.
func TestHopSitesCutApartSmallerSideLeaves(t *testing.T) {
	rep := siteSoak{nodes: "8", sites: [3]string{"1=1-2", "2=3-3", "3=4-8"}, seed: "5", drain: "8s",
		faults: []string{"crash:3@1.5s", "cut:1,2|4,5,6,7,8@2s", "heal@9s"}}.run(t)
	wantAgreedNoneUnexplained(t, rep)
	cut := map[int]int{}
	for _, r := range rep.Removals {
		t.Logf("removal %v at %.0f ms: %s: %s", r.Node, r.AtMs, r.Cause, r.Reason)
		if r.Cause == removal.CutOff {
			cut[int(r.Node)]++
		}
	}
	if cut[1] == 0 || cut[2] == 0 || len(cut) != 2 {
		t.Errorf("nodes removed as cut off from the wide area %v, want n1 and n2 (site 1, the smaller side) only", cut)
	}
	if n := rep.Layers["gms"]["removed_rejoined"]; n < 2 {
		t.Errorf("gms.removed_rejoined = %d, want n1 and n2 to join again", n)
	}
}
