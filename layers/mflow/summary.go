package mflow

import (
	"fmt"
	"strings"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/internal/units"
)

// Summary is what mflow's registration adds to a run's report (JSON
// extra.mflow): its acknowledgements per application message (equation 2
// measured), the efficiency that gives (equation 1), how long senders
// waited on credit, and which receiver held each sender back: the question
// users of flow control ask first.
type Summary struct {
	Casts        int64   `json:"casts"`
	AcksSent     int64   `json:"acks_sent"`
	AcksPerMsg   float64 `json:"acks_per_msg"`
	Efficiency   float64 `json:"efficiency"`
	CreditWaits  int64   `json:"credit_waits"`
	CreditWaitMs float64 `json:"credit_wait_ms"`
	// Slowest is the receiver whose credit ran out most often, over all
	// senders, and how long senders waited on it ("" if none ever did).
	Slowest   string       `json:"slowest_receiver,omitempty"`
	SlowestMs float64      `json:"slowest_receiver_wait_ms,omitempty"`
	Senders   []SenderWait `json:"senders,omitempty"`
}

// SenderWait is one sender that waited on credit.
type SenderWait struct {
	Node   string  `json:"node"`
	WaitMs float64 `json:"wait_ms"`
	Waits  int64   `json:"waits"`
	// HeldBy is the receiver whose credit ran out on it most often, with
	// how often and how long the sender waited on it.
	HeldBy   string  `json:"held_back_by"`
	HeldByMs float64 `json:"held_back_ms"`
	HeldRuns int64   `json:"held_back_times"`
}

// The counters mflow creates at run time, one pair per receiver that ran
// out of credit: how often ("blocks:n3") and for how long in nanoseconds
// ("blocked_by:n3"). Only this file reads them back.
const (
	blocksPrefix    = "blocks:"
	blockedByPrefix = "blocked_by:"
)

// summarize is mflow's compose.LayerInfo.Summarize: layers.mflow's
// acks_per_msg (its own acknowledgements per mflow cast) and efficiency,
// notes on who held senders back, and Summary as extra.mflow.
func summarize(c compose.Counters) compose.Summary {
	m := c.Total
	s := Summary{Casts: m["casts"], AcksSent: m["acks_sent"], CreditWaits: m["credit_waits"],
		CreditWaitMs: units.Ms(float64(m["credit_wait_ns"]))}
	if s.Casts > 0 {
		s.AcksPerMsg = units.Round6(float64(s.AcksSent) / float64(s.Casts))
		s.Efficiency = units.Round6(float64(s.Casts) / float64(s.Casts+s.AcksSent))
	}
	var out compose.Summary
	out.Ratio("acks_per_msg", s.AcksPerMsg)
	out.Ratio("efficiency", s.Efficiency)
	// Per receiver over all senders, from the summed counters: the one
	// whose credit ran out most often (ties: the longer wait).
	var best hold
	for name, v := range m {
		if r, ok := strings.CutPrefix(name, blocksPrefix); ok && v > 0 {
			best = best.better(hold{r, v, m[blockedByPrefix+r]})
		}
	}
	if best.node != "" {
		s.Slowest, s.SlowestMs = best.node, units.Ms(float64(best.ns))
	}
	// Per sender, from each node's own counters.
	for _, nc := range c.Nodes {
		var hb hold
		for name, v := range nc.Values {
			if r, ok := strings.CutPrefix(name, blocksPrefix); ok && v > 0 {
				hb = hb.better(hold{r, v, nc.Values[blockedByPrefix+r]})
			}
		}
		if hb.node == "" {
			continue
		}
		s.Senders = append(s.Senders, SenderWait{Node: nc.Node.String(),
			WaitMs: units.Ms(float64(nc.Values["credit_wait_ns"])), Waits: nc.Values["credit_waits"],
			HeldBy: hb.node, HeldByMs: units.Ms(float64(hb.ns)), HeldRuns: hb.times})
	}
	out.Extra = s
	note := fmt.Sprintf("%.3f acknowledgements per message (efficiency %.3f)", s.AcksPerMsg, s.Efficiency)
	if s.Slowest != "" {
		note += fmt.Sprintf("; senders waited %v on credit; %s held them back most (%v)",
			units.MsDuration(s.CreditWaitMs), s.Slowest, units.MsDuration(s.SlowestMs))
	} else {
		note += "; no sender waited on credit"
	}
	out.Notes = append(out.Notes, note)
	if recv := m["acks_recv"]; recv > 0 {
		// A peak is per node: the largest any sender saw, not the sum.
		var burst int64
		for _, nc := range c.Nodes {
			burst = max(burst, nc.Values["ack_burst_max"])
		}
		out.Notes = append(out.Notes, fmt.Sprintf("acknowledgements at the senders: at most %d within 1 ms; %d of %d (%.1f%%) within 1 ms of another",
			burst, m["acks_crowded"], recv, 100*float64(m["acks_crowded"])/float64(recv)))
	}
	for _, ms := range s.Senders {
		out.Notes = append(out.Notes, fmt.Sprintf("%s waited %v on credit; held back most by %s (%v, %d times)",
			ms.Node, units.MsDuration(ms.WaitMs), ms.HeldBy, units.MsDuration(ms.HeldByMs), ms.HeldRuns))
	}
	return out
}

// hold is a receiver whose credit ran out: how often and for how long.
type hold struct {
	node      string
	times, ns int64
}

// better returns the receiver that held back more often (then longer,
// then the smaller name, so the choice never depends on map order).
func (h hold) better(o hold) hold {
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
