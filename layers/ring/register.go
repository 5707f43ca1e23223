package ring

import (
	"fmt"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/internal/units"
	"github.com/layercast/layercast/stack"
)

func init() {
	compose.Register(compose.LayerInfo{
		Name:        "ring",
		BufferBound: bufferBound,
		Summary: "Spread's Ring protocol inside a site (Figure 3.3): one token rotates among the site's members, ordered by " +
			"node id. The holder answers the retransmission requests on it, sends its waiting casts on the site's channel " +
			"(each with the next link_seq, site_seq and Lamport time stamp) within per-member and per-rotation limits, " +
			"adds what it misses and lowers or raises the aru fields. Every member delivers in link_seq order (agreed order; " +
			"with safe=on it also gives safe delivery: it waits until the aru says every member has the message) and frees what the aru covers. The leader " +
			"regenerates a lost token; a new site view makes a new ring, which first recovers the old ring's messages.",
		Params: []compose.Param{
			{Name: "member_limit", Type: compose.Int, Default: "20", Doc: "most packets one member sends per visit of the token, retransmissions included", Min: 1, Max: 1 << 16},
			{Name: "ring_limit", Type: compose.Int, Default: "100", Doc: "most packets all members send per rotation (the token's flow_control field)", Min: 1, Max: 1 << 20},
			{Name: "window", Type: compose.Int, Default: "4096", Doc: "most packets a member holds per ring (at least 4 x ring_limit)", Min: 16, Max: 1 << 24},
			{Name: "max_pending", Type: compose.Int, Default: "256", Doc: "casts waiting for the token before the application is held off; it resumes when half have gone", Min: 1, Max: 1 << 20},
			{Name: "max_rtr", Type: compose.Int, Default: "256", Doc: "most retransmission requests a token carries", Min: 1, Max: 1 << 16},
			{Name: "token_timeout", Type: compose.Duration, Default: "200ms", Doc: "how long the leader waits for the token before it regenerates it (twice the measured rotation when that is longer, at most 8 x token_timeout)", Min: 0.0001, Max: 600},
			{Name: "token_retransmit", Type: compose.Duration, Default: "10ms", Doc: "wait for the successor to acknowledge the token before sending it again, doubled per unanswered copy, until the acknowledgement round trip is measured; then round trip + 4 deviations (at least 500µs, at most half the token timeout)", Min: 0.00001, Max: 60},
			{Name: "token_idle", Type: compose.Duration, Default: "1ms", Doc: "how long a member holds the token when the ring has nothing to do (0: pass at once)", Min: 0, Max: 10},
			{Name: "safe", Type: compose.Bool, Default: "off", Doc: "deliver a message only once the aru says every member has it"},
			{Name: "sites", Type: compose.Bool, Default: "on", Doc: "one ring per site view; off: one ring over every member of the node's groups across all sites (Spread's production design, the comparator of the paper's section 4)"},
		},
		Gives:     []compose.Property{compose.Reliable, compose.FIFO, compose.Agreed},
		GivesWith: compose.GivesIfOn("safe", compose.Safe),
		Counters:  compose.CountersOf(counters{}),
		Summarize: summarize,
		New: func(p compose.Params) (stack.Layer, error) {
			cfg := Config{
				MemberLimit: p.Int("member_limit"), RingLimit: p.Int("ring_limit"), Window: p.Int("window"),
				MaxPending: p.Int("max_pending"), MaxRtr: p.Int("max_rtr"),
				TokenTimeout: p.Duration("token_timeout"), TokenRetransmit: p.Duration("token_retransmit"), TokenIdle: p.Duration("token_idle"),
				Safe: p.Bool("safe"), OneRing: !p.Bool("sites"),
			}
			return compose.NewIfValid(cfg, New)
		},
	})
}

// Check reports a configuration that cannot work.
func (c Config) Check() error {
	switch {
	case c.MemberLimit < 1 || c.RingLimit < 1 || c.MaxPending < 1 || c.MaxRtr < 1:
		return fmt.Errorf("ring: member_limit, ring_limit, max_pending and max_rtr must be at least 1")
	case c.Window < 4*c.RingLimit:
		return fmt.Errorf("ring: window %d is less than 4 x ring_limit (%d): a rotation's packets would not fit while the aru catches up", c.Window, 4*c.RingLimit)
	case c.TokenTimeout <= 0 || c.TokenRetransmit <= 0 || c.TokenIdle < 0:
		return fmt.Errorf("ring: token_timeout and token_retransmit must be positive and token_idle not negative")
	case c.TokenTimeout < 2*c.TokenRetransmit:
		return fmt.Errorf("ring: token_timeout %v is less than 2 x token_retransmit (%v): the leader would regenerate tokens that are only being sent again", c.TokenTimeout, 2*c.TokenRetransmit)
	case c.TokenTimeout < 4*c.TokenIdle:
		return fmt.Errorf("ring: token_timeout %v is less than 4 x token_idle (%v): an idle rotation would look like a lost token", c.TokenTimeout, 4*c.TokenIdle)
	}
	return nil
}

// Summary is what ring's registration adds to a run's report (JSON
// extra.ring): how fast the token went round, what it cost, and how long
// rings took to recover from membership changes.
type Summary struct {
	TokensPerSec    float64 `json:"tokens_per_sec"`
	Rotations       int64   `json:"rotations"`
	Retransmissions int64   `json:"retransmissions"`
	TokenBytesMax   int64   `json:"token_bytes_max"`
	Regenerated     int64   `json:"tokens_regenerated"`
	Recoveries      int64   `json:"recoveries"`
	RecoveryMsMean  float64 `json:"recovery_ms_mean"`
	RecoveryMsMax   float64 `json:"recovery_ms_max"`
}

// summarize is ring's compose.LayerInfo.Summarize: layers.ring's
// tokens_per_sec (tokens each node handled per second of its ring's life,
// the mean over nodes), rotations, token_bytes_max and ring recovery
// latency.
func summarize(c compose.Counters) compose.Summary {
	m := c.Total
	s := Summary{Rotations: m["rotations"], Retransmissions: m["retransmissions"], Regenerated: m["tokens_regenerated"], Recoveries: m["recoveries"]}
	s.TokenBytesMax = c.Max("token_bytes_max")
	s.RecoveryMsMax = units.Ms(float64(c.Max("recovery_ns_max")))
	var rate float64
	n := 0
	for _, nc := range c.Nodes {
		if ns := nc.Values["active_ns"]; ns > 0 {
			rate += float64(nc.Values["tokens"]) / (float64(ns) / 1e9)
			n++
		}
	}
	if n > 0 {
		s.TokensPerSec = units.Round3(rate / float64(n))
	}
	if s.Recoveries > 0 {
		s.RecoveryMsMean = units.Round3(units.Ms(float64(m["recovery_ns"])) / float64(s.Recoveries))
	}
	var out compose.Summary
	// Peaks and the active time are per node: the report's sums of them
	// mean nothing, so the largest over nodes stands in their place.
	for _, name := range []string{"token_bytes_max", "peak_buffer_bytes", "pending_peak", "visit_sent_max", "rotation_sent_max", "recovery_ns_max", "active_ns"} {
		out.Ratio(name, float64(c.Max(name)))
	}
	out.Ratio("tokens_per_sec", s.TokensPerSec)
	out.Ratio("recovery_ms_mean", s.RecoveryMsMean)
	out.Ratio("recovery_ms_max", s.RecoveryMsMax)
	out.Extra = s
	note := fmt.Sprintf("%.0f tokens/s per member, %d rotations, largest token %d bytes, %d retransmissions",
		s.TokensPerSec, s.Rotations, s.TokenBytesMax, s.Retransmissions)
	if s.Regenerated > 0 {
		note += fmt.Sprintf(", %d tokens regenerated", s.Regenerated)
	}
	out.Notes = append(out.Notes, note)
	if s.Recoveries > 0 {
		out.Notef("%d ring recoveries after membership changes: mean %v, longest %v (%d old packets no survivor had)",
			s.Recoveries, units.MsDuration(s.RecoveryMsMean), units.MsDuration(s.RecoveryMsMax), m["recovery_lost"])
	}
	return out
}

// counters are the layer's counters: each is named and documented once by
// its tags (compose.CountersOf) and Init binds them (stack.Context.BindCounters).
type counters struct {
	Casts           *stack.Counter `counter:"casts" doc:"casts the application handed the ring"`
	Sent            *stack.Counter `counter:"sent" doc:"new packets sent on the ring"`
	Delivered       *stack.Counter `counter:"delivered" doc:"messages delivered up"`
	Retrans         *stack.Counter `counter:"retransmissions" doc:"packets sent again in answer to the token's request list"`
	Recovered       *stack.Counter `counter:"recovered" doc:"missing packets received by retransmission"`
	Tokens          *stack.Counter `counter:"tokens" doc:"tokens handled"`
	TokensSent      *stack.Counter `counter:"tokens_sent" role:"ack" doc:"tokens passed to the successor"`
	Rotations       *stack.Counter `counter:"rotations" doc:"token rotations completed (counted by each ring's leader)"`
	Regenerated     *stack.Counter `counter:"tokens_regenerated" doc:"tokens the leader regenerated after token_timeout"`
	StaleTokens     *stack.Counter `counter:"tokens_stale" doc:"tokens dropped as duplicates, old copies or of another ring"`
	DupData         *stack.Counter `counter:"duplicates" doc:"packets received twice"`
	Foreign         *stack.Counter `counter:"foreign" doc:"packets of another ring or from outside it"`
	OutOfWindow     *stack.Counter `counter:"out_of_window" doc:"packets beyond the window, dropped (asked for again later)"`
	Malformed       *stack.Counter `counter:"malformed" doc:"packets or tokens that did not decode"`
	TokenBytesMax   *stack.Counter `counter:"token_bytes_max" kind:"peak" doc:"largest token sent or received, in bytes"`
	BufferBytes     *stack.Counter `counter:"buffer_bytes" kind:"gauge" doc:"bytes of packets held at the end"`
	PeakBuffer      *stack.Counter `counter:"peak_buffer_bytes" kind:"peak" role:"buffer_peak" doc:"most bytes of packets held at once"`
	PendingPeak     *stack.Counter `counter:"pending_peak" kind:"peak" doc:"most casts waiting for the token at once"`
	HeldOff         *stack.Counter `counter:"held_off" doc:"times the application was held off (pending queue full)"`
	VisitMax        *stack.Counter `counter:"visit_sent_max" kind:"peak" doc:"most packets sent on one visit of the token (at most member_limit)"`
	RotationMax     *stack.Counter `counter:"rotation_sent_max" kind:"peak" doc:"most packets sent in one rotation, as the token's flow_control field counts them (at most ring_limit)"`
	Rings           *stack.Counter `counter:"rings" doc:"rings installed (one per member set)"`
	Recoveries      *stack.Counter `counter:"recoveries" doc:"rings started after a membership change"`
	RecoveryNs      *stack.Counter `counter:"recovery_ns" kind:"ns" doc:"time from a new member set to its ring's first regular token, summed"`
	RecoveryMax     *stack.Counter `counter:"recovery_ns_max" kind:"peak" doc:"longest such recovery"`
	RecoveryLost    *stack.Counter `counter:"recovery_lost" doc:"packets no member held, skipped by all: an old ring's packets no survivor had (a departed member's last casts), or numbers a forged token claimed"`
	RecoveryRetrans *stack.Counter `counter:"recovery_retransmissions" doc:"old-ring packets sent again during recovery"`
	TokenRetrans    *stack.Counter `counter:"token_retransmissions" doc:"tokens sent again because the successor had not acknowledged them"`
	TokenAcks       *stack.Counter `counter:"token_acks" doc:"token acknowledgements sent"`
	ActiveNs        *stack.Counter `counter:"active_ns" kind:"gauge" doc:"time from the node's first token to its last"`
}
