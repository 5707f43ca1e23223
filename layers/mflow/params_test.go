package mflow

import (
	"math"
	"testing"
	"time"
)

func TestEquations(t *testing.T) {
	tests := []struct {
		w          Workload
		thresh     float64 // equation 6
		efficiency float64 // equation 7
	}{
		// The paper's Figure 2(a) setting: n=10, 1 KB, ε=2ms, 1000 msg/s.
		{Workload{N: 10, Size: 1000, Rate: 1000, Delay: 2 * time.Millisecond, Window: 50000}, 46000, 1 - 9000.0/55000},
		{Workload{N: 10, Size: 1000, Rate: 1000, Delay: 2 * time.Millisecond, Window: 20000}, 16000, 1 - 9000.0/25000},
		{Workload{N: 4, Size: 1100, Rate: 1000, Delay: time.Millisecond, Window: 30000}, 27800, 1 - 3300.0/31100},
		{Workload{N: 2, Size: 500, Rate: 100, Delay: 0, Window: 10000}, 10000, 1 - 500.0/10500},
		// A round trip fills the window: no threshold avoids delay.
		{Workload{N: 10, Size: 1000, Rate: 1000, Delay: 30 * time.Millisecond, Window: 50000}, -10000, 0},
	}
	for _, tt := range tests {
		if got := MaxAckThresh(tt.w); math.Abs(got-tt.thresh) > 1e-6 {
			t.Errorf("MaxAckThresh(%+v) = %v, want %v", tt.w, got, tt.thresh)
		}
		if got := MaxEfficiency(tt.w); math.Abs(got-tt.efficiency) > 1e-9 {
			t.Errorf("MaxEfficiency(%+v) = %v, want %v", tt.w, got, tt.efficiency)
		}
		if tt.thresh > 0 {
			// Equation 7 is equation 3 at the threshold of equation 6.
			if e3 := Efficiency(tt.w.N, tt.w.Size, tt.thresh); math.Abs(e3-tt.efficiency) > 1e-9 {
				t.Errorf("Efficiency(%d, %v, %v) = %v, want %v", tt.w.N, tt.w.Size, tt.thresh, e3, tt.efficiency)
			}
		}
	}
	// Equation 1 from equation 2: nmsgs/(acks+nmsgs).
	n, size, thresh := 32, 1100.0, 25000.0
	acks := 1000 * AcksPerMsg(n, size, thresh)
	if e1, e3 := 1000/(acks+1000), Efficiency(n, size, thresh); math.Abs(e1-e3) > 1e-12 {
		t.Errorf("equation 1 with equation 2 gives %v, equation 3 gives %v", e1, e3)
	}
}

func TestWorkloadValidate(t *testing.T) {
	good := Workload{N: 4, Size: 1000, Rate: 1000, Delay: time.Millisecond, Window: 50000}
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate(%+v) = %v", good, err)
	}
	bad := []Workload{
		{N: 1, Size: 1000, Rate: 1000, Window: 50000},
		{N: 4, Size: 0, Rate: 1000, Window: 50000},
		{N: 4, Size: 1000, Rate: math.NaN(), Window: 50000},
		{N: 4, Size: 1000, Rate: math.Inf(1), Window: 50000},
		{N: 4, Size: 1000, Rate: 1000, Delay: -time.Millisecond, Window: 50000},
		{N: 4, Size: 1000, Rate: 1000, Window: 0},
	}
	for _, w := range bad {
		if err := w.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", w)
		}
	}
}

func TestConfigCheck(t *testing.T) {
	if err := DefaultConfig().Check(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	for _, c := range []Config{
		{Window: 0, AckThresh: 1, HiWmark: 1},
		{Window: 10, AckThresh: 0, HiWmark: 1},
		{Window: 10, AckThresh: 11, HiWmark: 1},
		{Window: 10, AckThresh: 5, Overhead: -1, HiWmark: 1},
		{Window: 10, AckThresh: 5, HiWmark: 0},
	} {
		if err := c.Check(); err == nil {
			t.Errorf("Check(%+v) = nil, want an error", c)
		}
	}
}

// TestDefaultCoversUDPHost checks the default window against equation 6 for
// the workload it was chosen for: 1 sender and 3 receivers on one host over
// UDP, 1,000-byte messages (1,100 weighted) at 400k msgs/s, and ε = 1.5 ms
// (a credit round trip between loaded processes plus a NAK recovery, half
// each way). Ensemble's 50000/25000 cannot carry it without delay.
func TestDefaultCoversUDPHost(t *testing.T) {
	d := DefaultConfig()
	w := Workload{N: 4, Size: 1000 + float64(d.Overhead), Rate: 400000, Delay: 1500 * time.Microsecond, Window: float64(d.Window)}
	if got := SafeAckThresh(w); got < float64(d.AckThresh) {
		t.Errorf("default window %d, ack_thresh %d: equation 6 allows ack_thresh at most %.0f", d.Window, d.AckThresh, got)
	}
	if e := Efficiency(w.N, w.Size, float64(d.AckThresh)); e < 0.99 {
		t.Errorf("default efficiency %.4f with 4 members, want at least 0.99", e)
	}
	e := EnsembleConfig()
	w.Window = float64(e.Window)
	if got := MaxAckThresh(w); got >= float64(e.AckThresh) {
		t.Errorf("Ensemble's window %d: equation 6 allows ack_thresh %.0f, want less than %d (it cannot carry this workload)", e.Window, got, e.AckThresh)
	}
}
