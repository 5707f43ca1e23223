package tests

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/experiment"
	_ "github.com/layercast/layercast/layers/all"
)

// TestOverload is issue 16's overload check, shortened to 5 s of virtual
// sending (`stacktool soak --overload` runs the 60 s form): senders offer
// the capacity-limited receivers 2 to 4 times what they can take, on
// fifo:reliable, mflow:fifo:reliable and both over gms. Every run holds the
// application off, keeps each bounded layer's peak buffer within the bound
// its parameters set, and loses nothing.
func TestOverload(t *testing.T) {
	var specs []experiment.SoakSpec
	for _, s := range experiment.OverloadSpecs {
		specs = append(specs, experiment.SoakSpec{Name: s, Spec: mustLoad(t, s)})
	}
	res := experiment.Soak(context.Background(), experiment.SoakOptions{Seeds: []uint64{1}, Specs: specs, Overload: true, OverloadTime: 5 * time.Second})
	for _, f := range res.Failures {
		t.Errorf("seed %d %s: %v: %s (replay: %s)", f.Seed, f.Spec, f.Kinds, f.Detail, f.Replay)
	}
	for _, per := range res.BySpec {
		var layers []string
		for _, m := range per.Memory {
			layers = append(layers, m.Layer)
			if m.Peak <= 0 || m.Over() {
				t.Errorf("%s: %v: want a peak above 0 and within the bound", per.Spec, m.BufferUse)
			}
			t.Logf("%s: %v", per.Spec, m.BufferUse)
		}
		want := []string{"fifo", "reliable"}
		if strings.HasPrefix(per.Spec, "mflow") {
			want = []string{"mflow", "fifo", "reliable"}
		}
		if !slices.Equal(layers, want) {
			t.Errorf("%s: bounded layers %v, want %v", per.Spec, layers, want)
		}
		if per.Backpressure == 0 {
			t.Errorf("%s: no cast held off", per.Spec)
		}
	}
}

// TestOverloadChecksCatch: the overload and memory invariants flag a run
// that breaks them: a run whose senders stay under the receivers' capacity
// never feels back-pressure, a report with a missing delivery lost
// something, and a layer past its bound is named with its bound.
func TestOverloadChecksCatch(t *testing.T) {
	sp := mustLoad(t, "fifo : reliable")
	sc := experiment.OverloadScenario(1, 2*time.Second)
	sc.Rate = 100 // far under capacity
	rep, err := experiment.Run(context.Background(), "sim", sp, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := experiment.OverloadCheck(rep); !slices.Equal(k, []string{experiment.SoakNoPressure}) {
		t.Errorf("OverloadCheck(a run under capacity) = %v, want no-backpressure", k)
	}
	lossy := *rep
	lossy.Backpressure, lossy.Missing = 1, 3
	if k, d := experiment.OverloadCheck(&lossy); !slices.Equal(k, []string{experiment.SoakLost}) {
		t.Errorf("OverloadCheck(3 missing) = %v %v, want lost", k, d)
	}
	mem, err := experiment.BufferBounds(rep, sp, sc)
	if err != nil || len(mem) != 2 {
		t.Fatalf("BufferBounds = %v, %v; want fifo and reliable", mem, err)
	}
	if k, d := experiment.MemoryCheck(mem); k != "" {
		t.Errorf("MemoryCheck(a light run) = %s %s, want nothing", k, d)
	}
	// The same run had reliable held to a smaller max_buffer than it used.
	tight := mustLoad(t, "fifo : reliable(max_buffer=1KB)")
	mem, _ = experiment.BufferBounds(rep, tight, sc)
	if k, d := experiment.MemoryCheck(mem); k != experiment.SoakMemory || !strings.Contains(d, "reliable") || !strings.Contains(d, "max_buffer 1KB") {
		t.Errorf("MemoryCheck(peak %d over max_buffer 1KB) = %q %q, want memory naming reliable and its bound", rep.BufferPeaks["reliable"], k, d)
	}
}
