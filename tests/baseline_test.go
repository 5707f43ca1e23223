// Package tests holds end-to-end tests of layercast.
package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/experiment"
	_ "github.com/layercast/layercast/layers/all"
)

// simRun runs spec (a spec string or a ../specs/*.stack file, checked
// first) on the simulator under the scenario file ../specs/<scenario> (none
// if empty) with overrides as stacktool run flags (key, value pairs). It
// logs the report's notes and returns the report and the scenario. A panic
// in a node fails the test with the panicking goroutine's stack.
func simRun(t testing.TB, spec, scenario string, kv ...string) (*experiment.Report, experiment.Scenario) {
	t.Helper()
	sp, err := compose.Load(spec)
	if err != nil {
		t.Fatalf("compose.Load(%s) = %v", spec, err)
	}
	if err := compose.Check(sp); err != nil {
		t.Fatalf("compose.Check(%s) = %v", spec, err)
	}
	sc := experiment.Default()
	if scenario != "" {
		if err := sc.LoadFile("../specs/" + scenario); err != nil {
			t.Fatalf("LoadFile(%s) = %v", scenario, err)
		}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if err := sc.Set(kv[i], kv[i+1]); err != nil {
			t.Fatalf("Set(%s, %s) = %v", kv[i], kv[i+1], err)
		}
	}
	rep, err := experiment.Run(context.Background(), "sim", sp, sc, nil)
	if pe := (*experiment.PanicError)(nil); errors.As(err, &pe) {
		t.Fatalf("Run(%s, %s) = %v\n%s", spec, scenario, err, pe.Where)
	}
	if err != nil {
		t.Fatalf("Run(%s, %s) = %v", spec, scenario, err)
	}
	for _, n := range rep.Notes {
		t.Log(n)
	}
	return rep, sc
}

// baselineRun is the issue's check: `stacktool run specs/baseline.stack
// --nodes 16 --groups-per-node 4 --group-size 8 --loss uniform:5%
// --duration 10s`, through the experiment API.
func baselineRun(t *testing.T) *experiment.Report {
	rep, _ := simRun(t, "../specs/baseline.stack", "", "nodes", "16", "groups-per-node", "4", "group-size", "8", "loss", "uniform:5%", "duration", "10s")
	return rep
}

func TestBaselineDeliversEverythingInOrder(t *testing.T) {
	rep := baselineRun(t)
	if !rep.DeliveredAll || rep.Deliveries != rep.DeliveriesExpected {
		t.Errorf("delivered_all = %v, deliveries %d of %d expected (notes: %q)",
			rep.DeliveredAll, rep.Deliveries, rep.DeliveriesExpected, rep.Notes)
	}
	if rep.MessagesSent == 0 || rep.DeliveriesExpected != rep.MessagesSent*7 {
		t.Errorf("messages_sent = %d, deliveries_expected = %d, want 7 receivers per message", rep.MessagesSent, rep.DeliveriesExpected)
	}
	if rep.Duplicates != 0 {
		t.Errorf("duplicates = %d, want 0", rep.Duplicates)
	}
	if rep.FIFOViolations != 0 {
		t.Errorf("fifo_violations = %d, want 0", rep.FIFOViolations)
	}
	if rep.Loss.Dropped == 0 || rep.Loss.Recovered == 0 {
		t.Errorf("loss.dropped = %d, loss.recovered = %d: 5%% loss must drop packets and the stack must recover them",
			rep.Loss.Dropped, rep.Loss.Recovered)
	}
	t.Logf("sent %d, delivered %d, dropped %d, recovered %d %v, latency %+v ms, recovery %+v ms, wall %.2fs",
		rep.MessagesSent, rep.Deliveries, rep.Loss.Dropped, rep.Loss.Recovered, rep.Loss.RecoveredBy,
		rep.LatencyMs, rep.Loss.RecoveryLatencyMs, rep.WallSeconds)
}

func TestBaselineSameSeedSameReport(t *testing.T) {
	a, err := json.Marshal(baselineRun(t).Mask())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(baselineRun(t).Mask())
	if !bytes.Equal(a, b) {
		t.Errorf("two runs with the same seed differ:\n%s\n%s", a, b)
	}
}
