package tests

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/experiment"
	_ "github.com/layercast/layercast/layers/all"
)

// TestSoakDeterministic: a soak seed is one scenario and one result: the
// same seed gives the same scenario, and a run of it the same report; a
// soak gives the same failures whatever its parallelism.
func TestSoakDeterministic(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		a, b := experiment.SoakScenario(seed, false), experiment.SoakScenario(seed, false)
		if a.Describe() != b.Describe() {
			t.Fatalf("seed %d: two scenarios %q and %q", seed, a.Describe(), b.Describe())
		}
		if a.Nodes < 6 || a.Nodes > 20 || a.Check() != nil {
			t.Errorf("seed %d: scenario %q out of the soak's range or invalid", seed, a.Describe())
		}
	}
	sp, err := compose.Load("fifo:reliable:gms")
	if err != nil {
		t.Fatal(err)
	}
	sc := experiment.SoakScenario(3, true)
	r1, err1 := experiment.Run(context.Background(), "sim", sp, sc, nil)
	r2, err2 := experiment.Run(context.Background(), "sim", sp, sc, nil)
	if err1 != nil || err2 != nil {
		t.Fatalf("runs failed: %v, %v", err1, err2)
	}
	if !reflect.DeepEqual(r1.Mask(), r2.Mask()) {
		t.Errorf("seed 3 run twice gave two reports")
	}

	specs := []experiment.SoakSpec{{Name: "fifo:reliable", Spec: mustLoad(t, "fifo:reliable")}, {Name: "fifo:reliable:gms", Spec: sp}}
	seeds := []uint64{1, 2}
	one := experiment.Soak(context.Background(), experiment.SoakOptions{Seeds: seeds, Specs: specs, Quick: true, Workers: 1})
	two := experiment.Soak(context.Background(), experiment.SoakOptions{Seeds: seeds, Specs: specs, Quick: true, Workers: 3})
	if one.Runs != 4 || !reflect.DeepEqual(one, two) {
		t.Errorf("soak with 1 and 3 workers: %+v and %+v", one, two)
	}
	failed := map[string]int{}
	for _, f := range one.Failures {
		t.Logf("seed %d %s: %v %s (replay: %s)", f.Seed, f.Spec, f.Kinds, f.Detail, f.Replay)
		failed[f.Spec]++
	}
	// One summary line per spec, in the order given, counting its own failures.
	if len(one.BySpec) != len(specs) {
		t.Fatalf("by spec: %d lines for %d specs", len(one.BySpec), len(specs))
	}
	for i, per := range one.BySpec {
		if per.Spec != specs[i].Name || per.Runs != len(seeds) || per.Failed != failed[per.Spec] {
			t.Errorf("by spec line %d: %+v, want spec %s, %d runs, %d failed", i, per, specs[i].Name, len(seeds), failed[specs[i].Name])
		}
		// Memory is checked on every run: each bounded layer's worst peak
		// against its bound.
		if len(per.Memory) != 2 || per.Memory[0].Layer != "fifo" || per.Memory[1].Layer != "reliable" || per.Memory[1].Peak == 0 || per.Memory[1].Over() {
			t.Errorf("by spec line %d: memory %+v, want fifo and reliable within their bounds", i, per.Memory)
		}
	}
}

// TestSoakCheckCatches: the checker flags each broken invariant in a
// synthetic report, and only where the stack promised it.
func TestSoakCheckCatches(t *testing.T) {
	ok := &experiment.Report{Promises: []string{"fifo", "reliable"}, DeliveriesExpected: 10, Missing: 2, MissingExplained: 2}
	if k, d := experiment.SoakCheck(ok); len(k) != 0 {
		t.Errorf("explained missing deliveries flagged: %v %s", k, d)
	}
	bad := *ok
	bad.Duplicates, bad.FIFOViolations, bad.MissingUnexplained, bad.AgreedViolations = 1, 2, 3, 4
	k, d := experiment.SoakCheck(&bad)
	if !slices.Equal(k, []string{experiment.SoakDuplicates, experiment.SoakFIFO, experiment.SoakMissing}) {
		t.Errorf("broken report: kinds %v (%s), want duplicates, fifo, missing (agreed order not promised)", k, d)
	}
	agreed := bad
	agreed.Promises = []string{"agreed", "fifo", "reliable"}
	k, d = experiment.SoakCheck(&agreed)
	if !slices.Equal(k, []string{experiment.SoakDuplicates, experiment.SoakFIFO, experiment.SoakAgreed, experiment.SoakMissing}) {
		t.Errorf("broken report of an agreed stack: kinds %v (%s), want duplicates, fifo, agreed, missing", k, d)
	}
	bad.Promises = nil // a stack that promises neither order nor reliability
	if k, _ := experiment.SoakCheck(&bad); !slices.Equal(k, []string{experiment.SoakDuplicates}) {
		t.Errorf("no promises: kinds %v, want duplicates only", k)
	}
}

func mustLoad(t *testing.T, s string) *compose.Spec {
	t.Helper()
	sp, err := compose.Load(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}
