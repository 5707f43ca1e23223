package mflow

import (
	"strings"
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/units"
)

// summaryInput is four nodes' mflow counters, summed as a report sums them.
func summaryInput() compose.Counters {
	names := []string{"casts", "acks_sent", "credit_waits", "credit_wait_ns", "blocked_by:n3", "blocks:n3", "blocked_by:n4", "blocks:n4"}
	vals := [][]int64{
		// n1 waited 5 ms: n4 ran out 5 times (1 ms), n3 twice (4 ms).
		{1000, 0, 7, 5e6, 4e6, 2, 1e6, 5},
		// n2 sent without waiting; n3, n4 acknowledged.
		{500, 0, 0, 0, 0, 0, 0, 0},
		{0, 100, 0, 0, 0, 0, 0, 0},
		{0, 98, 0, 0, 0, 0, 0, 0},
	}
	c := compose.Counters{Total: map[string]int64{}}
	for i, vs := range vals {
		nc := compose.NodeCounters{Node: event.NodeID(i + 1), Alive: true, Values: map[string]int64{}}
		for j, n := range names {
			nc.Values[n] = vs[j]
			c.Total[n] += vs[j]
		}
		c.Nodes = append(c.Nodes, nc)
	}
	return c
}

func TestSummarize(t *testing.T) {
	info, ok := compose.Lookup("mflow")
	if !ok || info.Summarize == nil {
		t.Fatal("mflow's registration has no Summarize")
	}
	out := info.Summarize(summaryInput())
	s, ok := out.Extra.(Summary)
	if !ok {
		t.Fatalf("Extra = %#v", out.Extra)
	}
	if s.AcksPerMsg != 0.132 || s.Efficiency != units.Round6(1500.0/1698) {
		t.Errorf("acks_per_msg %v, efficiency %v; want 0.132, %v", s.AcksPerMsg, s.Efficiency, units.Round6(1500.0/1698))
	}
	if out.Ratios["acks_per_msg"] != s.AcksPerMsg || out.Ratios["efficiency"] != s.Efficiency {
		t.Errorf("ratios %v, want acks_per_msg %v and efficiency %v", out.Ratios, s.AcksPerMsg, s.Efficiency)
	}
	if s.Slowest != "n4" || s.SlowestMs != 1 || s.CreditWaitMs != 5 {
		t.Errorf("slowest %q (%v ms), wait %v ms; want n4 (1 ms: its credit ran out most often), 5 ms", s.Slowest, s.SlowestMs, s.CreditWaitMs)
	}
	if len(s.Senders) != 1 || s.Senders[0].Node != "n1" || s.Senders[0].HeldBy != "n4" || s.Senders[0].HeldRuns != 5 ||
		s.Senders[0].WaitMs != 5 || s.Senders[0].Waits != 7 {
		t.Errorf("senders = %+v, want n1 held back by n4 5 times, 7 waits of 5 ms in all", s.Senders)
	}
	if len(out.Notes) != 2 || !strings.Contains(out.Notes[0], "n4 held them back most") || !strings.Contains(out.Notes[1], "n1 waited 5ms") {
		t.Errorf("notes = %q", out.Notes)
	}
}

// Without casts or waits the summary says so and divides by nothing.
func TestSummarizeIdle(t *testing.T) {
	out := summarize(compose.Counters{Total: map[string]int64{}})
	if out.Ratios["acks_per_msg"] != 0 || len(out.Notes) != 1 || !strings.Contains(out.Notes[0], "no sender waited on credit") {
		t.Errorf("idle summary: ratios %v, notes %q", out.Ratios, out.Notes)
	}
}

// Every counter the layer creates is documented in its registration, the
// per-receiver ones through their placeholders.
func TestCountersDocumented(t *testing.T) {
	info, _ := compose.Lookup("mflow")
	for _, n := range []string{"casts", "acks_sent", "credit_waits", "credit_wait_ns", "queue_peak", "peak_buffer_bytes",
		"malformed", "bad_acks", "foreign", "blocks:n3", "blocked_by:n12"} {
		if info.Counter(n) == nil {
			t.Errorf("counter %q is not documented", n)
		}
	}
	if info.Counter("blocks:") != nil {
		t.Error("a placeholder matched an empty node name")
	}
}
