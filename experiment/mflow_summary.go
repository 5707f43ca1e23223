package experiment

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

func init() { Summarizers = append(Summarizers, SummarizeMflow) }

// MflowSummary is what SummarizeMflow adds to a report (Extra["mflow"]) when
// the stack has an mflow layer: its acknowledgements per application
// message (equation 2 measured), the efficiency that gives (equation 1),
// how long senders waited on credit, and which receiver held each sender
// back: the question users of flow control ask first.
type MflowSummary struct {
	Casts        int64   `json:"casts"`
	AcksSent     int64   `json:"acks_sent"`
	AcksPerMsg   float64 `json:"acks_per_msg"`
	Efficiency   float64 `json:"efficiency"`
	CreditWaits  int64   `json:"credit_waits"`
	CreditWaitMs float64 `json:"credit_wait_ms"`
	// Slowest is the receiver senders waited on longest, over all senders
	// ("" if no sender ever waited).
	Slowest   string        `json:"slowest_receiver,omitempty"`
	SlowestMs float64       `json:"slowest_receiver_wait_ms,omitempty"`
	Senders   []MflowSender `json:"senders,omitempty"`
}

// MflowSender is one sender that waited on credit.
type MflowSender struct {
	Node   string  `json:"node"`
	WaitMs float64 `json:"wait_ms"`
	Waits  int64   `json:"waits"`
	// HeldBy is the receiver whose credit ran out on it for longest, with
	// that time and how often its credit ran out.
	HeldBy   string  `json:"held_back_by"`
	HeldByMs float64 `json:"held_back_ms"`
	HeldRuns int64   `json:"held_back_times"`
}

// SummarizeMflow is the Summarizer for the mflow layer (issue 5, item 8).
func SummarizeMflow(rep *Report, nodes []NodeCounters) {
	m := rep.Layers["mflow"]
	if m == nil {
		return
	}
	s := MflowSummary{Casts: m["casts"], AcksSent: m["acks_sent"], CreditWaits: m["credit_waits"],
		CreditWaitMs: mflowMs(m["credit_wait_ns"])}
	if s.Casts > 0 {
		s.AcksPerMsg = round6(float64(s.AcksSent) / float64(s.Casts))
		s.Efficiency = round6(float64(s.Casts) / float64(s.Casts+s.AcksSent))
	}
	// Per receiver over all senders, from the summed counters.
	total := map[string]int64{}
	for name, v := range m {
		if r, ok := strings.CutPrefix(name, "blocked_by:"); ok && v > 0 {
			total[r] += v
		}
	}
	for _, r := range mflowKeys(total) {
		if total[r] > total[s.Slowest] || s.Slowest == "" {
			s.Slowest = r
		}
	}
	if s.Slowest != "" {
		s.SlowestMs = mflowMs(total[s.Slowest])
	}
	// Per sender, from each node's own counters.
	for _, nc := range nodes {
		var ms MflowSender
		var held int64
		for _, l := range nc.Layers {
			if l.Layer != "mflow" {
				continue
			}
			for i, name := range l.Names {
				v := l.Values[i]
				switch {
				case name == "credit_wait_ns":
					ms.WaitMs = mflowMs(v)
				case name == "credit_waits":
					ms.Waits = v
				case strings.HasPrefix(name, "blocked_by:"):
					r := strings.TrimPrefix(name, "blocked_by:")
					if v > held {
						held = v
						ms.HeldBy, ms.HeldByMs = r, mflowMs(v)
						ms.HeldRuns = nc.Counter("mflow", "blocks:"+r)
					}
				}
			}
		}
		if ms.HeldBy == "" {
			continue
		}
		ms.Node = nc.Node.String()
		s.Senders = append(s.Senders, ms)
	}
	if rep.Extra == nil {
		rep.Extra = map[string]any{}
	}
	rep.Extra["mflow"] = s
	note := fmt.Sprintf("mflow: %.3f acknowledgements per message (efficiency %.3f)", s.AcksPerMsg, s.Efficiency)
	if s.Slowest != "" {
		note += fmt.Sprintf("; senders waited %v on credit, longest on %s (%v)",
			mflowDur(s.CreditWaitMs), s.Slowest, mflowDur(s.SlowestMs))
	} else {
		note += "; no sender waited on credit"
	}
	rep.Notes = append(rep.Notes, note)
	for _, ms := range s.Senders {
		rep.Notes = append(rep.Notes, fmt.Sprintf("mflow: %s waited %v on credit; held back most by %s (%v, %d times)",
			ms.Node, mflowDur(ms.WaitMs), ms.HeldBy, mflowDur(ms.HeldByMs), ms.HeldRuns))
	}
}

func mflowMs(ns int64) float64 { return round3(float64(ns) / 1e6) }

func mflowDur(ms float64) time.Duration {
	return time.Duration(ms * float64(time.Millisecond)).Round(time.Microsecond)
}

func mflowKeys(m map[string]int64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
