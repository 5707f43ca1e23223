package lec

import (
	"math"
	"testing"

	"github.com/layercast/layercast/event"
)

// TestPlanBinsFigure7 checks Algorithm 1 on the paper's Figure 7: groups
// A, B, C with cA=5, cB=4, cC=3 and regions |abc|=10, |ab|=2, |ac|=3,
// |bc|=7, |a|=5, |b|=1, |c|=5. The figure's labels: the bin of abc selects
// 1.2 targets from abc; the bin of ab selects 0.8 from abc and 0.4 from ab.
func TestPlanBinsFigure7(t *testing.T) {
	const A, B, C = 1, 2, 3
	regions := [][]event.GroupID{{A, B, C}, {A, B}, {A, C}, {B, C}, {A}, {B}, {C}}
	sizes := []int{10, 2, 3, 7, 5, 1, 5}
	cs := map[event.GroupID]float64{A: 5, B: 4, C: 3}
	plans := planBins(regions, sizes, func(g event.GroupID) float64 { return cs[g] })
	got := map[string]map[int]float64{} // bin groups -> region index -> targets
	for _, p := range plans {
		m := map[int]float64{}
		for _, tg := range p.targets {
			m[tg.region] += tg.avg
		}
		got[groupsKey(p.groups)] = m
	}
	key := func(gs ...event.GroupID) string { return groupsKey(gs) }
	want := []struct {
		bin    string
		region int
		avg    float64
	}{
		{key(A, B, C), 0, 1.2}, // c_C^abc = 3*10/25
		{key(A, B), 0, 0.8},    // c_B^abc - 1.2 = 4*10/20 - 1.2
		{key(A), 0, 0.5},       // c_A^abc - 2.0
		{key(A, B), 1, 0.4},    // min(5*2/20, 4*2/20)
		{key(A), 1, 0.1},       // 0.5 - 0.4
		{key(A), 4, 1.25},      // 5*5/20
	}
	for _, w := range want {
		if g := got[w.bin][w.region]; math.Abs(g-w.avg) > 1e-9 {
			t.Errorf("bin %x region %d: %.3f targets, want %.3f", w.bin, w.region, g, w.avg)
		}
	}
	// Every group gets exactly its c over all bins that collect it.
	for g, c := range cs {
		sum := 0.0
		for _, p := range plans {
			for _, pg := range p.groups {
				if pg == g {
					for _, tg := range p.targets {
						sum += tg.avg
					}
				}
			}
		}
		if math.Abs(sum-c) > 1e-9 {
			t.Errorf("group %v: %.4f targets per packet over all bins, want c=%v", g, sum, c)
		}
	}
}
