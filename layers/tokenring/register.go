package tokenring

import (
	"math"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/stack"
)

func init() {
	compose.Register(compose.LayerInfo{
		Name: "tokenring",
		Summary: "QSM's regional multicast: a cast goes once to each QSM region its group spans, numbered per region " +
			"across all groups, so recovery costs the same for 1 group or thousands. Each region is split into partitions " +
			"of about replicas nodes that cache every p-th packet; a token made every interval by the region leader goes " +
			"round each partition and then the next, carrying per sender the cutoff and bounded NAK sets: neighbours push " +
			"and pull, nodes pull other partitions' packets from their counterparts there once stable, partition leaders send the " +
			"sender collective NAKs and the region leader one ACK. Senders keep packets until ACKed, hold the application " +
			"off at hi_wmark pending, and send at the rate the slowest receiver takes (section 2.4).",
		Params: []compose.Param{
			{Name: "replicas", Type: compose.Int, Default: "5", Doc: "replication factor R: a region of n nodes forms floor(n/R) partitions, each caching every p-th packet", Min: 1, Max: 1 << 16},
			{Name: "interval", Type: compose.Duration, Default: "50ms", Doc: "how often the region leader makes a token (QSM used 1 s on 100 Mbit/s; rounds of a few ms per partition suit 1 ms links)", Min: 0.0001, Max: 60},
			{Name: "max_ranges", Type: compose.Int, Default: "32", Doc: "NAK ranges a node puts in the token per sender (and in one pull or collective NAK)", Min: 1, Max: 4096},
			{Name: "max_senders", Type: compose.Int, Default: "256", Doc: "sender records one token carries", Min: 1, Max: 1 << 16},
			{Name: "max_push", Type: compose.Int, Default: "512", Doc: "packets one node pushes to its predecessor, or sends for one pull, per token visit", Min: 1, Max: 1 << 20},
			{Name: "hi_wmark", Type: compose.Int, Default: "10000", Doc: "pending regional packets (queued or not yet ACKed) at which the application is held off", Min: 2, Max: 1 << 24},
			{Name: "queue", Type: compose.Int, Default: "128", Doc: "casts waiting for rate credit at which the application is held off (it resumes at half)", Min: 2, Max: 1 << 20},
			{Name: "lo_wmark", Type: compose.Int, Default: "5000", Doc: "pending regional packets at which the application may resume", Min: 1, Max: 1 << 24},
			{Name: "window", Type: compose.Int, Default: "65536", Doc: "sequence numbers a receiver tracks per sender ahead of its first gap (at least twice hi_wmark)", Min: 64, Max: 1 << 24},
			{Name: "probe_rounds", Type: compose.Int, Default: "4", Doc: "intervals without ACK progress before the sender re-sends its last packet (a lost tail becomes known)", Min: 1, Max: 1 << 16},
			{Name: "max_retrans", Type: compose.Int, Default: "256", Doc: "packets one collective NAK makes the sender send again", Min: 1, Max: 1 << 20},
			{Name: "ack_all", Type: compose.Bool, Default: "off", Doc: "ACK a packet once every member has it (on), or once its caching replicas have it (off, QSM 2005): off ACKs sooner, but a packet freed before partitions are rebuilt may then be lost to a member that lacked it", Min: 0, Max: 0},
			{Name: "rate_control", Type: compose.Bool, Default: "on", Doc: "section 2.4's rate control (off: send as fast as the network takes)"},
			{Name: "rate_min", Type: compose.Float, Default: "2000", Doc: "mu_min: the lowest sending rate, packets/s (equation 2)", Min: 0.001, Max: 1e9},
			{Name: "lambda", Type: compose.Float, Default: "0.2", Doc: "growth coefficient: senders send at (1+lambda) times the slowest receiver's fair share (equation 2)", Min: 0, Max: 100},
			{Name: "rho", Type: compose.Float, Default: "0.5", Doc: "inertia of the credit refill's correction (equation 3)", Min: 0.001, Max: 10},
			{Name: "rate_sample", Type: compose.Duration, Default: "50ms", Doc: "interval of the receive and send rate samples (Delta)", Min: 0.0001, Max: 60},
			{Name: "rate_samples", Type: compose.Int, Default: "4", Doc: "samples in the receive rate's moving average (k)", Min: 1, Max: 1000},
			{Name: "credits", Type: compose.Int, Default: "64", Doc: "credit pool C_high of the sender's rate limiter (equation 4; C_low and Delta_max are half of it)", Min: 2, Max: 1 << 20},
			{Name: "p2p_timeout", Type: compose.Duration, Default: "10ms", Doc: "retransmission timeout of point-to-point sends: tokens, pulls and collective NAKs, and Sends from the layers above", Min: 0.0001, Max: 600},
			{Name: "p2p_window", Type: compose.Int, Default: "256", Doc: "unacknowledged point-to-point sends per peer (more are refused), and early arrivals held", Min: 1, Max: 1 << 20},
			{Name: "p2p_max_tries", Type: compose.Int, Default: "100", Doc: "retransmissions of a point-to-point send before it is given up", Min: 1, Max: 1e6},
		},
		Gives: []compose.Property{compose.Reliable, compose.Sequenced},
		NotBelow: map[compose.Property]string{compose.ProbabilisticRecovery: "it numbers each group's casts per sender and repairs on the assumption " +
			"that every member of the group receives each of them, but tokenring sends a cast as a different packet to each region the group " +
			"spans; put it above tokenring (lec : tokenring, specs/qsm-lec.stack) where it sees every cast of the group; fifo cannot go above lec, " +
			"whose rebuilt messages carry no sequence number"},
		Counters:  compose.CountersOf(counters{}),
		Summarize: summarize,
		// A receiver hands up a sender's packets up to its window past its
		// first gap (stream.go's bitmap; region.go drops what lies beyond).
		Spread: compose.WindowSpread("window"),
		New: func(p compose.Params) (stack.Layer, error) {
			cfg := Config{
				Replicas: p.Int("replicas"), Interval: p.Duration("interval"), MaxRanges: p.Int("max_ranges"),
				MaxSenders: p.Int("max_senders"), MaxPush: p.Int("max_push"), HiWmark: p.Int("hi_wmark"), Queue: p.Int("queue"),
				LoWmark: p.Int("lo_wmark"), Window: p.Int("window"), ProbeRounds: p.Int("probe_rounds"),
				MaxRetrans: p.Int("max_retrans"), RateControlOn: p.Bool("rate_control"), AckAll: p.Bool("ack_all"), RateMin: p.Float("rate_min"),
				Lambda: p.Float("lambda"), Rho: p.Float("rho"), RateSample: p.Duration("rate_sample"),
				RateSamples: p.Int("rate_samples"), Credits: p.Int("credits"), P2PTimeout: p.Duration("p2p_timeout"),
				P2PWindow: p.Int("p2p_window"), P2PMaxTries: p.Int("p2p_max_tries"),
			}
			return compose.NewIfValid(cfg, New)
		},
	})
}

// DefaultConfig is the registration's defaults.
func DefaultConfig() Config {
	return Config{Replicas: 5, Interval: 50e6, MaxRanges: 32, MaxSenders: 256, MaxPush: 512, HiWmark: 10000, Queue: 128,
		LoWmark: 5000, Window: 65536, ProbeRounds: 4, MaxRetrans: 256, RateControlOn: true, AckAll: true, RateMin: 2000,
		Lambda: 0.2, Rho: 0.5, RateSample: 50e6, RateSamples: 4, Credits: 64, P2PTimeout: 10e6, P2PWindow: 256,
		P2PMaxTries: 100}
}

// summarize is the registration's Summarize: layers.tokenring's
// token_rounds, recovery_rounds_mean (token intervals from discovering a
// loss to recovering it), ack_rounds_mean (from sending to the regional
// ACK), token_bytes_max and pending_peak (the largest at any node).
func summarize(c compose.Counters) compose.Summary {
	m := c.Total
	var out compose.Summary
	tokMax, pendMax := c.Max("token_bytes_max"), c.Max("pending_peak")
	out.Ratio("token_rounds", float64(m["token_rounds"]))
	out.Ratio("recovery_rounds_mean", mean(m["recovery_rounds_milli"], m["recovered_timed"])/1000)
	out.Ratio("ack_rounds_mean", mean(m["ack_rounds_milli"], m["acked"])/1000)
	out.Ratio("token_bytes_max", float64(tokMax))
	out.Ratio("pending_peak", float64(pendMax))
	out.Notef("%d token rounds (mean %.1f ms each); losses recovered in %.2f rounds on average, ACKs after %.2f rounds; largest token %d bytes; at most %d regional packets pending",
		m["token_rounds"], mean(m["round_ns"], m["rounds_timed"])/1e6, out.Ratios["recovery_rounds_mean"],
		out.Ratios["ack_rounds_mean"], tokMax, pendMax)
	if n := m["dropped_unsent"]; n > 0 {
		out.Notef("%d casts accepted were dropped unsent: their group spanned no region when their turn came (the application left it)", n)
	}
	if n := m["recovered"]; n > 0 {
		out.Notef("recovered %d packets: %d from peers (push and pull), %d from senders (collective NAKs %d, probes %d)",
			n, n-m["recovered_sender"], m["recovered_sender"], m["naks_received"], m["probes"])
	}
	return out
}

func mean(sum, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return math.Round(float64(sum)/float64(n)*1000) / 1000
}

// counters are the layer's counters: each is named and documented once by
// its tags (compose.CountersOf) and Init binds them (stack.Context.BindCounters).
type counters struct {
	Sent            *stack.Counter `counter:"sent" doc:"regional packets multicast (one per region a cast's group spans)"`
	Delivered       *stack.Counter `counter:"delivered" doc:"regional packets handed up"`
	Duplicates      *stack.Counter `counter:"duplicates" doc:"copies of packets already received"`
	LossDiscovered  *stack.Counter `counter:"loss_discovered" doc:"packets found missing from a gap in a sender's sequence"`
	Recovered       *stack.Counter `counter:"recovered" doc:"packets received after being found missing, or sent again"`
	RecoveredAgain  *stack.Counter `counter:"recovered_sender" doc:"of those, the sender's retransmissions (collective NAKs and probes)"`
	RecoveredTimed  *stack.Counter `counter:"recovered_timed" doc:"of those, the ones whose loss was discovered from a gap (timed)"`
	RecoveryNs      *stack.Counter `counter:"recovery_ns" kind:"ns" doc:"time from discovering a loss to receiving the packet, summed"`
	RecoveryRoundsM *stack.Counter `counter:"recovery_rounds_milli" doc:"the same in thousandths of a token interval (recovery_rounds_mean is its mean over recovered_timed)"`
	TokenRounds     *stack.Counter `counter:"token_rounds" doc:"token rounds completed at region leaders"`
	RoundNs         *stack.Counter `counter:"round_ns" kind:"ns" doc:"time tokens took to go round, summed over rounds_timed"`
	RoundsTimed     *stack.Counter `counter:"rounds_timed" doc:"rounds whose time is in round_ns (completed within 64 rounds of being made)"`
	TokensSent      *stack.Counter `counter:"tokens_sent" doc:"token hops sent"`
	TokenBytesMax   *stack.Counter `counter:"token_bytes_max" kind:"peak" doc:"largest token sent"`
	NaksSent        *stack.Counter `counter:"naks_sent" doc:"collective NAKs partition leaders sent to senders"`
	NaksRecv        *stack.Counter `counter:"naks_received" doc:"collective NAKs senders received"`
	Retransmissions *stack.Counter `counter:"retransmissions" doc:"packets senders sent again for a collective NAK"`
	Probes          *stack.Counter `counter:"probes" doc:"last packets senders sent again because ACKs stopped moving"`
	Pushes          *stack.Counter `counter:"pushes" doc:"cached packets pushed to a predecessor that lacked them"`
	PullsSent       *stack.Counter `counter:"pulls_sent" doc:"pull requests sent (to the predecessor, or best effort to this node's counterpart in another partition)"`
	Pulled          *stack.Counter `counter:"pulled" doc:"cached packets sent in answer to pulls"`
	FwdDropped      *stack.Counter `counter:"forwards_dropped" doc:"pushes and pull answers dropped because 4096 already waited to be sent (asked again next round)"`
	AcksSent        *stack.Counter `counter:"acks_sent" role:"ack" doc:"regional ACKs region leaders sent (one per sender per round)"`
	AcksRecv        *stack.Counter `counter:"acks_received" doc:"regional ACKs senders received"`
	AcksStale       *stack.Counter `counter:"acks_stale" doc:"regional ACKs a sender set aside: computed over an older view of the region than its own (a member it added may lack the packets)"`
	Acked           *stack.Counter `counter:"acked" doc:"regional packets senders freed on an ACK"`
	AckNs           *stack.Counter `counter:"ack_ns" kind:"ns" doc:"time from sending a packet to its ACK, summed"`
	AckRoundsMilli  *stack.Counter `counter:"ack_rounds_milli" doc:"the same in thousandths of a token interval"`
	PendingNow      *stack.Counter `counter:"pending" kind:"gauge" doc:"regional packets queued or not yet ACKed at the end"`
	PendingPeak     *stack.Counter `counter:"pending_peak" kind:"peak" doc:"most regional packets queued or not yet ACKed at once"`
	HeldOff         *stack.Counter `counter:"held_off" doc:"times a group was told to hold off at hi_wmark"`
	CacheBytes      *stack.Counter `counter:"buffer_bytes" kind:"gauge" doc:"bytes cached for peers at the end"`
	PeakBuffer      *stack.Counter `counter:"peak_buffer_bytes" kind:"peak" role:"buffer_peak" doc:"most bytes cached for peers at once"`
	CreditWaits     *stack.Counter `counter:"credit_waits" doc:"times the sender ran out of rate credit"`
	RateNow         *stack.Counter `counter:"rate" kind:"gauge" doc:"the sender's rate mu_snd at the end, packets/s"`
	Malformed       *stack.Counter `counter:"malformed" doc:"packets whose tokenring header or body did not decode"`
	Foreign         *stack.Counter `counter:"foreign" doc:"packets from outside the region or its groups' views"`
	AheadOfView     *stack.Counter `counter:"ahead_of_view" doc:"packets numbered in a view of their group this node had not installed yet: dropped unrecorded, recovered once it has it"`
	OutOfWindow     *stack.Counter `counter:"out_of_window" doc:"packets too far ahead of the receive window, dropped (recovered later)"`
	StaleTokens     *stack.Counter `counter:"stale_tokens" doc:"tokens of another region view or an overtaken round, dropped"`
	Skipped         *stack.Counter `counter:"skipped" doc:"packets a receiver gave up: a joiner's that every node had purged, or those below where a sender numbering a region anew began (flagFresh)"`
	FloorWaits      *stack.Counter `counter:"floor_waits" doc:"packets a newcomer dropped unrecorded while it asked their sender where it is owed the group's packets from (the header names one stretch back only)"`
	NoRegion        *stack.Counter `counter:"no_region" doc:"casts to a group whose regions were not known"`
	DroppedUnsent   *stack.Counter `counter:"dropped_unsent" doc:"casts accepted and queued, then dropped before any region had them: their group spanned no region any more when their turn came (the application left it)"`
	P2pSent         *stack.Counter `counter:"p2p_sent" doc:"point-to-point messages sent"`
	P2pDelivered    *stack.Counter `counter:"p2p_delivered" doc:"point-to-point messages delivered"`
	P2pRetrans      *stack.Counter `counter:"p2p_retransmissions" doc:"point-to-point messages sent again"`
	P2pGivenUp      *stack.Counter `counter:"p2p_given_up" doc:"point-to-point messages refused or given up"`
	P2pStale        *stack.Counter `counter:"p2p_stale" doc:"point-to-point messages and acknowledgements of a session the peer or this node had closed (it made its state for the other afresh), dropped"`
}
