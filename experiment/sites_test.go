package experiment

import (
	"testing"
)

// TestSiteKeys: site and wan keys parse, refuse bad input with one error,
// and Flags gives them back so that a run can be replayed.
func TestSiteKeys(t *testing.T) {
	sc := Default()
	sc.Nodes, sc.GroupSize, sc.GroupsPerNode = 6, 3, 1
	for _, kv := range [][2]string{
		{"site", "1=1-3"}, {"site", "2=4,6"},
		{"wan", "1-2 latency=30ms jitter=2ms bandwidth=250KB queue=64KB loss=uniform:1%"},
	} {
		if err := sc.Set(kv[0], kv[1]); err != nil {
			t.Fatalf("Set(%s, %s) = %v", kv[0], kv[1], err)
		}
	}
	if err := sc.Check(); err != nil {
		t.Fatal(err)
	}
	of := sc.siteOf()
	if of[1] != 1 || of[3] != 1 || of[4] != 2 || of[6] != 2 || of[5] != 0 {
		t.Errorf("siteOf = %v", of)
	}
	w := sc.WAN[0]
	if w.A != 1 || w.B != 2 || w.Latency.Milliseconds() != 30 || w.Bandwidth != 250000 || w.Queue != 64000 || w.Loss != "uniform:1%" {
		t.Errorf("wan = %+v", w)
	}
	re := Default()
	for _, f := range sc.Flags() {
		if err := re.Set(f[0][2:], f[1]); err != nil {
			t.Fatalf("Set(%s, %s) = %v", f[0], f[1], err)
		}
	}
	if re.Describe() != sc.Describe() {
		t.Errorf("replayed %q, want %q", re.Describe(), sc.Describe())
	}
	for _, bad := range [][2]string{
		{"site", "1"}, {"site", "64=1"}, {"site", "1=0"}, {"site", "1=3-2"}, {"site", "x=1"},
		{"wan", ""}, {"wan", "1-1 latency=1ms"}, {"wan", "1-2"}, {"wan", "1-2 latency=1ms bandwidth=0"},
		{"wan", "1-2 latency=1ms loss=sometimes"}, {"wan", "1-2 speed=3"},
	} {
		s := Default()
		if err := s.Set(bad[0], bad[1]); err == nil {
			t.Errorf("Set(%s, %q) = nil, want an error", bad[0], bad[1])
		}
	}
	for _, lines := range [][][2]string{
		{{"site", "1=1-20"}},                                     // beyond the nodes
		{{"site", "1=1"}, {"site", "2=1"}},                       // twice
		{{"wan", "1-2 latency=1ms"}, {"wan", "2-1 latency=2ms"}}, // the same link twice
	} {
		s := Default()
		for _, kv := range lines {
			if err := s.Set(kv[0], kv[1]); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Check(); err == nil {
			t.Errorf("Check after %v = nil, want an error", lines)
		}
	}
	if len(of) != 5 {
		t.Errorf("placed nodes %v, want 5", of)
	}
}
