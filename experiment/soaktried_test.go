package experiment

import (
	"context"
	"strings"
	"testing"

	"github.com/layercast/layercast/compose"
)

// TestSoakCountsWhatItTried: each spec's line counts the crashes, freezes,
// partitions and bursty-loss runs its scenarios set, and the owed
// deliveries the checks covered.
func TestSoakCountsWhatItTried(t *testing.T) {
	sp, err := compose.Load("fifo:reliable")
	if err != nil {
		t.Fatal(err)
	}
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	res := Soak(context.Background(), SoakOptions{Seeds: seeds, Quick: true, Workers: 1,
		Specs: []SoakSpec{{Name: "fifo:reliable", Spec: sp}}})
	var want SoakTried
	for _, s := range seeds {
		sc := SoakScenario(s, true)
		for _, f := range sc.Faults {
			switch f[:strings.Index(f, ":")+1] {
			case "crash:":
				want.Crashes++
			case "freeze:":
				want.Freezes++
			case "partition:":
				want.Partitions++
			}
		}
		if l := sc.Loss; strings.HasPrefix(l, "bursty") || strings.HasPrefix(l, "markov") {
			want.Bursts++
		}
	}
	got := res.BySpec[0].Tried
	if want.Crashes+want.Freezes+want.Partitions == 0 {
		t.Fatalf("seeds %v set no fault: pick seeds that do", seeds)
	}
	if got.Checked <= 0 {
		t.Errorf("checked %d owed deliveries, want some", got.Checked)
	}
	got.Checked = 0
	if got != want {
		t.Errorf("tried %+v, want %+v", got, want)
	}
}
