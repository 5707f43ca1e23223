package experiment

import (
	"fmt"
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
	// Slowest is the receiver whose credit ran out most often, over all
	// senders, and how long senders waited on it ("" if none ever did).
	Slowest   string        `json:"slowest_receiver,omitempty"`
	SlowestMs float64       `json:"slowest_receiver_wait_ms,omitempty"`
	Senders   []MflowSender `json:"senders,omitempty"`
}

// MflowSender is one sender that waited on credit.
type MflowSender struct {
	Node   string  `json:"node"`
	WaitMs float64 `json:"wait_ms"`
	Waits  int64   `json:"waits"`
	// HeldBy is the receiver whose credit ran out on it most often, with
	// how often and how long the sender waited on it.
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
	rep.SetLayerRatio("mflow", "acks_per_msg", s.AcksPerMsg)
	rep.SetLayerRatio("mflow", "efficiency", s.Efficiency)
	// Per receiver over all senders, from the summed counters: the one
	// whose credit ran out most often (ties: the longer wait).
	var best mflowHold
	for name, v := range m {
		if r, ok := strings.CutPrefix(name, "blocks:"); ok && v > 0 {
			best = best.better(mflowHold{r, v, m["blocked_by:"+r]})
		}
	}
	if best.node != "" {
		s.Slowest, s.SlowestMs = best.node, mflowMs(best.ns)
	}
	// Per sender, from each node's own counters.
	for _, nc := range nodes {
		var ms MflowSender
		var hb mflowHold
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
				case strings.HasPrefix(name, "blocks:") && v > 0:
					r := strings.TrimPrefix(name, "blocks:")
					hb = hb.better(mflowHold{r, v, nc.Counter("mflow", "blocked_by:"+r)})
				}
			}
		}
		if hb.node == "" {
			continue
		}
		ms.Node = nc.Node.String()
		ms.HeldBy, ms.HeldByMs, ms.HeldRuns = hb.node, mflowMs(hb.ns), hb.times
		s.Senders = append(s.Senders, ms)
	}
	if rep.Extra == nil {
		rep.Extra = map[string]any{}
	}
	rep.Extra["mflow"] = s
	note := fmt.Sprintf("mflow: %.3f acknowledgements per message (efficiency %.3f)", s.AcksPerMsg, s.Efficiency)
	if s.Slowest != "" {
		note += fmt.Sprintf("; senders waited %v on credit; %s held them back most (%v)",
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

// mflowHold is a receiver whose credit ran out: how often and for how long.
type mflowHold struct {
	node      string
	times, ns int64
}

// better returns the receiver that held back more often (then longer,
// then the smaller name, so the choice never depends on map order).
func (h mflowHold) better(o mflowHold) mflowHold {
	switch {
	case h.node == "":
		return o
	case o.times != h.times:
		if o.times > h.times {
			return o
		}
	case o.ns != h.ns:
		if o.ns > h.ns {
			return o
		}
	case o.node < h.node:
		return o
	}
	return h
}
