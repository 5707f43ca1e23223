package tests

import (
	"math"
	"strings"
	"testing"
)

// TestRicochetLoss25Modes is Figure 12's 25% uniform point, scaled to 16
// nodes in 25 groups each (3 s): the paper recovers about 40% by LEC, at
// about 60 ms. Ours recovers more, and this test pins down why: a repair
// that cannot be used when it comes (two or more of its r=8 packets lost,
// 1-0.75^7 of them at 25%) waits in the unusable buffer and nearly always
// becomes usable within the window. With no buffer (max_unusable=0: only
// repairs usable as they come, and the XORs of two) recovery is within 10
// points of the paper's 40%. The paper's own behaviour, checking the list
// intermittently (check_every), changes when repairs become usable, not
// whether: the same recovery as rechecking at once, later (closer to the
// paper's latency), and the report says which mode ran.
func TestRicochetLoss25Modes(t *testing.T) {
	run := func(spec string) (lecFigures, []string) {
		rep := lecRun(t, spec, "ricochet-loss25.scenario", "nodes", "16", "groups-per-node", "25", "duration", "3s")
		f := figures(rep)
		t.Logf("%-36s %v", spec, f)
		return f, rep.Notes
	}
	now, _ := run("lec(r=8, c=5)")
	paper, notes := run("lec(r=8, c=5, check_every=100ms)")
	arrival, _ := run("lec(r=8, c=5, max_unusable=0)")
	if now.pct < 40-10 {
		t.Errorf("25%%: LEC recovered %.2f%%, want at least the paper's 40%% less 10 points", now.pct)
	}
	if math.Abs(arrival.pct-40) > 10 {
		t.Errorf("25%%, repairs usable on arrival only: %.2f%%, want the paper's 40%% within 10 points", arrival.pct)
	}
	if math.Abs(paper.pct-now.pct) > 1 || paper.latencyMs <= now.latencyMs {
		t.Errorf("intermittent checks: %.2f%% in %.1f ms, at once: %.2f%% in %.1f ms; want the same recovery (1 point), later",
			paper.pct, paper.latencyMs, now.pct, now.latencyMs)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "checked intermittently") {
		t.Errorf("the report does not say the paper's mode ran: %q", notes)
	}
}

// TestRicochetBursty5Percent is Figure 12's bursty curve at 5% (bursts of
// exactly 10) in the paper's shape, n=64 in 125 groups of 10, 1 s: the
// paper keeps LEC recovery above 90%; we ask 85%. A burst is spread over
// many groups and regions, which is where the tolerance comes from: with
// fewer groups or nodes the same bursts fall into fewer bins (n=48 in 40
// groups of 12: 74%; n=16 in 125 groups: 62%).
func TestRicochetBursty5Percent(t *testing.T) {
	f := figures(lecRun(t, "lec(r=8, c=5)", "ricochet-bursty.scenario", "loss", "bursty:5%,10", "duration", "1s", "drain", "500ms"))
	t.Log(f)
	if f.dropped < 2000 {
		t.Fatalf("only %d packets dropped: too few to measure", f.dropped)
	}
	if f.pct < 85 {
		t.Errorf("bursty 5%%, b=10: LEC recovered %.2f%%, want at least 85%% (the paper: above 90%%)", f.pct)
	}
}
