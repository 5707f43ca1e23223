package sim

import (
	"math"
	"math/rand/v2"
	"strings"
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

func TestParseLoss(t *testing.T) {
	good := map[string]string{
		"uniform:5%":    "uniform:5%",
		"uniform:0.05":  "uniform:5%",
		" bursty:1%,10": "bursty:1%,10",
		"markov:1%,10":  "markov:1%,10",
		"markov:2%,2.5": "markov:2%,2.5",
	}
	for in, want := range good {
		m, err := ParseLoss(in)
		if err != nil {
			t.Errorf("ParseLoss(%q): %v", in, err)
			continue
		}
		if got := m.(interface{ String() string }).String(); got != want {
			t.Errorf("ParseLoss(%q) = %s, want %s", in, got, want)
		}
	}
	if m, err := ParseLoss("none"); m != nil || err != nil {
		t.Errorf("ParseLoss(none) = %v, %v; want nil, nil", m, err)
	}
	bad := map[string]string{
		"uniform:150%":  "loss rate 150% is outside 0% to 100%",
		"unifrom:5%":    `unknown loss model "unifrom"; use uniform, bursty or markov`,
		"uniform:-1%":   "loss rate -1% is outside 0% to 100%",
		"uniform:abc":   `loss rate "abc" is not a percentage`,
		"uniform":       "needs a rate",
		"uniform:5%,3":  "uniform takes only a rate",
		"bursty:1%":     "needs a burst length",
		"bursty:1%,x":   "not a whole number",
		"bursty:1%,0":   "burst length 0 must be at least 1",
		"bursty:95%,10": "is impossible",
		"markov:1%,0.5": "must be at least 1",
		"markov:1%,NaN": "must be at least 1",
		"markov:99%,10": "is impossible",
		"":              "empty loss model",
	}
	for in, want := range bad {
		m, err := ParseLoss(in)
		if err == nil {
			t.Errorf("ParseLoss(%q) = %v, want an error", in, m)
			continue
		}
		if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseLoss(%q) error %q, want one line containing %q", in, err, want)
		}
	}
}

func TestParseCapacity(t *testing.T) {
	c, err := ParseCapacity("send_pps=20000, send_bps=125MB, send_queue=512, high_water=256, recv_pps=1e4, recv_bps=50KiB, recv_buffer=1000, recv_buffer_bytes=2MiB")
	want := Capacity{SendPPS: 20000, SendBps: 125e6, SendQueue: 512, HighWater: 256, RecvPPS: 1e4, RecvBps: 50 * 1024, RecvBuffer: 1000, RecvBufferBytes: 2 << 20}
	if err != nil || c != want {
		t.Errorf("ParseCapacity = %+v, %v; want %+v", c, err, want)
	}
	if c, err := ParseCapacity("unlimited"); err != nil || c != (Capacity{}) {
		t.Errorf("ParseCapacity(unlimited) = %+v, %v", c, err)
	}
	bad := map[string]string{
		"":                    "empty capacity",
		"recv_pps":            "is not key=value",
		"recv_ppps=10":        `unknown key "recv_ppps"`,
		"recv_pps=-1":         "not a number",
		"recv_buffer=1.5":     "not a whole number",
		"send_bps=10Mb":       `unknown unit "Mb"`,
		"recv_buffer_bytes=x": "not a size",
	}
	for in, w := range bad {
		if _, err := ParseCapacity(in); err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("ParseCapacity(%q) error %v, want one containing %q", in, err, w)
		}
	}
}
