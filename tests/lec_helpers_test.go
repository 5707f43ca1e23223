package tests

import (
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/experiment"
)

// lecRun runs a Ricochet scenario file with a spec string and scenario
// overrides (key, value pairs) on the simulator.
func lecRun(t testing.TB, spec, scenario string, kv ...string) *experiment.Report {
	t.Helper()
	rep, _ := simRun(t, spec, scenario, kv...)
	return rep
}

// lecFigures are what the paper plots for LEC alone.
type lecFigures struct {
	dropped, recovered, xor2 int64
	pct                      float64 // lost packets recovered by LEC, percent
	latencyMs                float64 // mean recovery latency
	xorsPerData              float64
	wall                     float64
}

func figures(rep *experiment.Report) lecFigures {
	l := rep.Layers["lec"]
	f := lecFigures{
		dropped: rep.Loss.DroppedByModel, recovered: rep.Loss.RecoveredBy["lec"], xor2: l["recovered_xor2"],
		latencyMs: rep.Loss.RecoveryLatencyMs.Mean, wall: rep.WallSeconds,
	}
	if f.dropped > 0 {
		f.pct = 100 * float64(f.recovered) / float64(f.dropped)
	}
	if l["data_in"] > 0 {
		f.xorsPerData = float64(l["xors"]) / float64(l["data_in"])
	}
	return f
}

func (f lecFigures) String() string {
	return fmtFigures(f)
}

// ricochetSpec is specs/ricochet.stack as a spec string.
func ricochetSpec(t testing.TB) string {
	t.Helper()
	sp, err := compose.Load("../specs/ricochet.stack")
	if err != nil {
		t.Fatalf("compose.Load(specs/ricochet.stack) = %v", err)
	}
	return sp.String()
}
