package tests

import "testing"

// TestLECRecoversUniformOnePercent is the paper's headline (section 5,
// n=64, d=125 (~128), s=10, r=8, c=5, 1% uniform loss): LEC alone recovers
// at least 97% of lost packets, within tens of milliseconds.
func TestLECRecoversUniformOnePercent(t *testing.T) {
	f := figures(lecRun(t, "lec(r=8, c=5)", "ricochet.scenario"))
	t.Log(f)
	if f.dropped < 1000 {
		t.Fatalf("only %d packets dropped: the run is too small to measure", f.dropped)
	}
	if f.pct < 97 {
		t.Errorf("LEC recovered %.2f%% of lost packets, want at least 97%%", f.pct)
	}
	if f.latencyMs <= 0 || f.latencyMs >= 100 {
		t.Errorf("mean recovery latency %.1f ms, want tens of milliseconds", f.latencyMs)
	}
	// Section 4.2.5: at most c two-input XORs per data packet on average;
	// c exactly in the worst case (every bin draws at most one destination,
	// as here), so allow 1% of sampling noise.
	if f.xorsPerData > 5*1.01 {
		t.Errorf("%.3f XORs per data packet, want at most c=5", f.xorsPerData)
	}
}
