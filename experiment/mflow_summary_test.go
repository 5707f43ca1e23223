package experiment

import (
	"strings"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

func mflowNode(id uint32, names []string, values []int64) NodeCounters {
	return NodeCounters{Node: event.NodeID(id), Alive: true, Layers: []stack.LayerCounters{{Layer: "mflow", Names: names, Values: values}}}
}

func TestSummarizeMflow(t *testing.T) {
	names := []string{"casts", "acks_sent", "credit_waits", "credit_wait_ns", "blocked_by:n3", "blocks:n3", "blocked_by:n4", "blocks:n4"}
	nodes := []NodeCounters{
		// n1 waited 5 ms: n4 ran out 5 times (1 ms), n3 twice (4 ms).
		mflowNode(1, names, []int64{1000, 0, 7, 5e6, 4e6, 2, 1e6, 5}),
		// n2 sent without waiting; n3, n4 acknowledged.
		mflowNode(2, names, []int64{500, 0, 0, 0, 0, 0, 0, 0}),
		mflowNode(3, names, []int64{0, 100, 0, 0, 0, 0, 0, 0}),
		mflowNode(4, names, []int64{0, 98, 0, 0, 0, 0, 0, 0}),
	}
	rep := &Report{Layers: map[string]map[string]int64{}}
	for _, nc := range nodes {
		for _, l := range nc.Layers {
			m := rep.Layers[l.Layer]
			if m == nil {
				m = map[string]int64{}
				rep.Layers[l.Layer] = m
			}
			for i, n := range l.Names {
				m[n] += l.Values[i]
			}
		}
	}
	SummarizeMflow(rep, nodes)
	s, ok := rep.Extra["mflow"].(MflowSummary)
	if !ok {
		t.Fatalf("Extra[mflow] = %#v", rep.Extra["mflow"])
	}
	if s.AcksPerMsg != 0.132 || s.Efficiency != round6(1500.0/1698) {
		t.Errorf("acks_per_msg %v, efficiency %v; want 0.132, %v", s.AcksPerMsg, s.Efficiency, round6(1500.0/1698))
	}
	if s.Slowest != "n4" || s.SlowestMs != 1 || s.CreditWaitMs != 5 {
		t.Errorf("slowest %q (%v ms), wait %v ms; want n4 (1 ms: its credit ran out most often), 5 ms", s.Slowest, s.SlowestMs, s.CreditWaitMs)
	}
	if len(s.Senders) != 1 || s.Senders[0].Node != "n1" || s.Senders[0].HeldBy != "n4" || s.Senders[0].HeldRuns != 5 {
		t.Errorf("senders = %+v, want n1 held back by n4 5 times", s.Senders)
	}
	if len(rep.Notes) != 2 || !strings.Contains(rep.Notes[0], "n4 held them back most") || !strings.Contains(rep.Notes[1], "n1 waited 5ms") {
		t.Errorf("notes = %q", rep.Notes)
	}
	// No mflow layer: nothing added.
	empty := &Report{Layers: map[string]map[string]int64{"fifo": {}}}
	SummarizeMflow(empty, nil)
	if empty.Extra != nil || len(empty.Notes) != 0 {
		t.Errorf("without mflow the summarizer added %v %q", empty.Extra, empty.Notes)
	}
}
