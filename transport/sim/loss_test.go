package sim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/layercast/layercast/event"
)

// measure runs a model at two receivers (interleaved, to show their states
// are independent) and returns, per receiver, the loss rate and the loss
// bursts' lengths.
func measure(m LossModel, n int) (rate [2]float64, bursts [2][]int) {
	rng := rand.New(rand.NewPCG(1, 2))
	run := [2]int{}
	lost := [2]int{}
	for i := 0; i < n; i++ {
		for r := 0; r < 2; r++ {
			if m.Drop(event.NodeID(r+1), rng) {
				lost[r]++
				run[r]++
			} else if run[r] > 0 {
				bursts[r] = append(bursts[r], run[r])
				run[r] = 0
			}
		}
	}
	for r := range rate {
		rate[r] = float64(lost[r]) / float64(n)
	}
	return rate, bursts
}

func mean(xs []int) float64 {
	s := 0
	for _, x := range xs {
		s += x
	}
	return float64(s) / float64(len(xs))
}

func TestLossModelRatesAndBursts(t *testing.T) {
	const n = 1_000_000
	cases := []struct {
		spec     string
		p        float64
		burst    float64 // mean burst length wanted (0: not checked)
		exact    bool    // every burst exactly that long
		rateTol  float64
		burstTol float64
	}{
		{"uniform:5%", 0.05, 1 / 0.95, false, 0.002, 0.02},
		{"uniform:0.2", 0.2, 1 / 0.8, false, 0.003, 0.02},
		{"bursty:1%,10", 0.01, 10, true, 0.0015, 0},
		{"bursty:5%,4", 0.05, 4, true, 0.003, 0},
		{"bursty:20%,1", 0.2, 1, true, 0.003, 0},
		{"markov:1%,10", 0.01, 10, false, 0.002, 0.8},
		{"markov:5%,3", 0.05, 3, false, 0.003, 0.15},
	}
	for _, tc := range cases {
		m, err := ParseLoss(tc.spec)
		if err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		rate, bursts := measure(m, n)
		for r := 0; r < 2; r++ {
			if math.Abs(rate[r]-tc.p) > tc.rateTol {
				t.Errorf("%s receiver %d: loss rate %.4f, want %.4f ± %.4f", tc.spec, r, rate[r], tc.p, tc.rateTol)
			}
			mb := mean(bursts[r])
			if tc.exact {
				for _, b := range bursts[r] {
					if b != int(tc.burst) {
						t.Errorf("%s receiver %d: a burst of %d, want exactly %g", tc.spec, r, b, tc.burst)
						break
					}
				}
			} else if math.Abs(mb-tc.burst) > tc.burstTol {
				t.Errorf("%s receiver %d: mean burst %.3f, want %.3f ± %.3f", tc.spec, r, mb, tc.burst, tc.burstTol)
			}
			t.Logf("%s receiver %d: rate %.4f, %d bursts, mean length %.2f", tc.spec, r, rate[r], len(bursts[r]), mb)
		}
	}
}
