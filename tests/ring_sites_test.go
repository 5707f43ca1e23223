package tests

import (
	"context"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/experiment"
	_ "github.com/layercast/layercast/layers/all"
)

// TestRingSiteZeroUnderGMS: with gms and no site placed (every node in
// site 0), the groups only partly overlap (16 nodes, 4 groups each of 8),
// so the union of a node's groups differs from node to node. The ring
// must still be one ring over site 0 at every member: gms gives site 0's
// view, and ring(sites=off) makes its ring of every site view's members.
// Spread (hop : ring : gms) and the one WAN-wide ring deliver every owed
// message. Before, neither delivered anything: every node had a ring of
// its own groups' union and no two agreed. Spread runs the whole default
// scenario (`stacktool run specs/spread.stack`): hop's representative
// casts the site's whole traffic into the ring, which member_limit=20 per
// visit could not carry (its queue grew to 3,600 casts, 8,233 deliveries
// missing at the end).
func TestRingSiteZeroUnderGMS(t *testing.T) {
	def := experiment.Default()
	if def.Nodes != 16 || def.GroupsPerNode != 4 || def.GroupSize != 8 || len(def.Sites) != 0 {
		t.Fatalf("the default scenario changed (%s): the test wants partly overlapping groups and no sites", def.Describe())
	}
	short := def
	short.Duration, short.Drain = 2*time.Second, 4*time.Second
	for _, c := range []struct {
		spec string
		sc   experiment.Scenario
	}{{"../specs/spread.stack", def}, {"../specs/spread-ring-wan.stack", short}} {
		spec, sc := c.spec, c.sc
		sp, err := compose.Load(spec)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := experiment.Run(context.Background(), "sim", sp, sc, nil)
		if err != nil {
			t.Fatal(err)
		}
		if kinds, detail := experiment.SoakCheck(rep); len(kinds) > 0 || rep.Missing > 0 || rep.DeliveriesExpected == 0 {
			t.Errorf("%s: %d of %d owed deliveries missing (%v %s)", spec, rep.Missing, rep.DeliveriesExpected, kinds, detail)
		}
	}
}
