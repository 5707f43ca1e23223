package all_test

import (
	"testing"

	"github.com/layercast/layercast/compose"
	_ "github.com/layercast/layercast/layers/all"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

// Every counter a layer creates is documented in its registration, so
// `stacktool layers` can say what it means and a report can find its
// acknowledgements and buffer peaks by role.
func TestEveryCounterDocumented(t *testing.T) {
	for _, c := range []struct {
		spec    string
		service bool
	}{
		{"mflow : fifo : reliable : lec : gms", false},
		{"gms_service", true},
	} {
		sp, err := compose.Parse(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		var entries []stack.Entry
		if c.service {
			entries, err = compose.BuildService(sp)
		} else {
			entries, err = compose.Build(sp)
		}
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		net := sim.New(sim.Config{Seed: 1})
		st, err := stack.New(stack.Config{Self: 1, Layers: entries, Transport: net.AddNode(1), Clock: net, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		seen := layertest.CountersDocumented(t, st)
		if seen == 0 {
			t.Errorf("%s: no counters at all", c.spec)
		}
	}
}
