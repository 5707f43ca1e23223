package rtt

import (
	"testing"
	"time"
)

// TestSampleFollowsRFC6298 checks the first sample and the smoothing of
// later ones against RFC 6298's formulas, worked by hand.
func TestSampleFollowsRFC6298(t *testing.T) {
	var e Estimator
	if e.SRTT() != 0 || e.RTO() != 0 {
		t.Fatalf("zero estimator: srtt %v rto %v, want 0 0", e.SRTT(), e.RTO())
	}
	e.Sample(80 * time.Millisecond)
	if e.SRTT() != 80*time.Millisecond || e.RTO() != 80*time.Millisecond+4*40*time.Millisecond {
		t.Fatalf("first sample: srtt %v rto %v, want 80ms 240ms", e.SRTT(), e.RTO())
	}
	// dev = |80-40| = 40: rttvar = 40 + (40-40)/4 = 40; srtt = 80 + (40-80)/8 = 75.
	e.Sample(40 * time.Millisecond)
	if e.SRTT() != 75*time.Millisecond || e.RTO() != 75*time.Millisecond+160*time.Millisecond {
		t.Fatalf("second sample: srtt %v rto %v, want 75ms 235ms", e.SRTT(), e.RTO())
	}
	// dev = |75-155| = 80: rttvar = 40 + 40/4 = 50; srtt = 75 + 80/8 = 85.
	e.Sample(155 * time.Millisecond)
	if e.SRTT() != 85*time.Millisecond || e.RTO() != 85*time.Millisecond+200*time.Millisecond {
		t.Fatalf("third sample: srtt %v rto %v, want 85ms 285ms", e.SRTT(), e.RTO())
	}
}
