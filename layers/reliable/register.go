package reliable

import (
	"fmt"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/stack"
)

func init() {
	compose.Register(compose.LayerInfo{
		Name:        "reliable",
		BufferBound: bufferBound,
		Summary: "Reliable multicast by negative acknowledgement (SRM, JGroups NAKACK): senders number their casts, " +
			"receivers deliver each message once as soon as it arrives and ask the sender for gaps after a few measured round trips (nak_delay until one is measured, and at most), " +
			"retrying after the measured round trip to the sender (at least nak_retry, backing off while nothing comes back). Members gossip stability digests, which also reveal lost tails; a message every " +
			"member of the view holds is freed, and a full buffer holds the application off until stability makes room.",
		Params: []compose.Param{
			{Name: "nak_delay", Type: compose.Duration, Default: "20ms", Doc: "how long a gap lasts before its first NAK until the round trip to its sender is measured, and the most it lasts after (see nak_delay_rtts)", Min: 0, Max: 60},
			{Name: "nak_delay_rtts", Type: compose.Float, Default: "2", Doc: "once the round trip to a sender is measured (a NAK to the first answer echoing its time stamp, or before any a digest that asks the sender to answer at once to its answer; smoothed), a gap in its stream waits a random time between this many and twice this many round trips before its first NAK, as NORM's NACK backoff scales with the group's round trip (the random part lets a repair multicast for one member reach another before it asks), within [nak_delay_min, nak_delay]; " +
				"0 keeps the fixed nak_delay (a stack whose layer below repairs first, as lec does, waits for it)", Min: 0, Max: 1000},
			{Name: "nak_delay_min", Type: compose.Duration, Default: "1ms", Doc: "least wait before a gap's first NAK once the round trip is measured (a gap shorter than this may be reordering); nak_delay bounds it. " +
				"It is the whole wait while the sender's buffer is full, or was within nak_slow (its casts say so: its window waits on the gap); " +
				"also the least time between a gap's NAK and a later NAK whose answer, come while the gap is still missing, has it asked again at once (its NAK or answer was lost; or rttvar if more), " +
				"and how soon a receiver reports by digest a repair of its first gap to such a sender", Min: 0, Max: 60},
			{Name: "nak_retry", Type: compose.Duration, Default: "20ms", Doc: "interval between NAK rounds for gaps still open until the round trip to the sender is measured by an answer echoing a NAK's time stamp (or longer, when a digest's answer timed it so); then that round trip's timeout (srtt + 4 rttvar, at least nak_retry_min); doubled for every round in a row that brought nothing back, up to nak_slow or twice the timeout, whichever is longer", Min: 0.0001, Max: 60},
			{Name: "nak_retry_min", Type: compose.Duration, Default: "1ms", Doc: "least interval between NAK rounds once the round trip to the sender is measured (a sender does not resend to one receiver within 3/4 of the round trip its NAK states, at least nak_retry_min/2)", Min: 0.00001, Max: 60},
			{Name: "nak_max_tries", Type: compose.Int, Default: "10", Doc: "NAK rounds in a row that brought nothing back before the interval is at least nak_slow", Min: 1, Max: 1e6},
			{Name: "nak_slow", Type: compose.Duration, Default: "200ms", Doc: "least interval between NAK rounds after nak_max_tries rounds brought nothing back; also bounds the round trip a NAK states, for which the sender holds repeats", Min: 0.0001, Max: 600},
			{Name: "stable_interval", Type: compose.Duration, Default: "100ms", Doc: "interval between stability digests while a group has traffic to settle", Min: 0.0001, Max: 600},
			{Name: "max_buffer", Type: compose.Size, Default: "4MB", Doc: "bytes a sender keeps for retransmission per group before holding the application off", Min: 1, Max: 1 << 40},
			{Name: "window", Type: compose.Int, Default: "4096", Doc: "sequence numbers tracked per sender ahead of the first gap (rounded up to a power of two); what lies beyond is dropped and asked for again, and fifo's reorder bounds, left at their defaults, follow it, so fifo never has to give a gap up", Min: 64, Max: 1 << 20},
			{Name: "max_nak_ranges", Type: compose.Int, Default: "32", Doc: "missing ranges listed in one NAK", Min: 1, Max: 4096},
			{Name: "p2p_timeout", Type: compose.Duration, Default: "50ms", Doc: "retransmission timeout of point-to-point sends until the round trip to the peer is measured (send to acknowledgement, first tries only); then that round trip's timeout (srtt + 4 rttvar, at least nak_retry_min), doubled per try; never longer than this", Min: 0.0001, Max: 600},
			{Name: "p2p_window", Type: compose.Int, Default: "256", Doc: "unacknowledged point-to-point sends per peer before sends wait; also the most early arrivals held from one peer", Min: 1, Max: 1 << 20},
			{Name: "p2p_max_tries", Type: compose.Int, Default: "100", Doc: "retransmissions of a point-to-point send before the peer is presumed gone", Min: 1, Max: 1e6},
			{Name: "p2p_max_held", Type: compose.Size, Default: "1MB", Doc: "bytes of early point-to-point arrivals held per peer while an earlier one is missing, each counted with its buffer (at least 1.5 KB and headers; at most p2p_window messages); " +
				"more are not acknowledged and come again. Only members of a group we share get point-to-point state, released when they leave every shared group", Min: 1, Max: 1 << 40},
			{Name: "nak_copies", Type: compose.Int, Default: "1", Doc: "copies sent of each NAK and of each retransmission answering one: a NAK round fails if either is lost, " +
				"so at a loss rate p one round fails with probability 1-(1-p)^2 (36% at 20%) with one copy, about 4p^2 with two (copies count in naks_sent and retransmissions)", Min: 1, Max: 4},
			{Name: "nak_copies_loss", Type: compose.Float, Default: "0.05", Doc: "a receiver that measures at least this loss on a sender's stream (smoothed over every 256 messages) sends its NAKs, and asks for the retransmissions answering them, in 2 copies (as nak_copies=2 does for everyone; the sender sends the second copy of each retransmission 100 us after the first, so a layer below that packs puts it in another datagram): a round then fails with probability about 4p^2 rather than 2p, and at 10% loss the stream's first gap, which holds fifo's delivery and the sender's buffer, is repaired sooner (over UDP at 10% loss, 3 receivers: 216k to 244k msgs/s per receiver, medians of 3 alternating pairs); below it one copy, as at low loss the copies only cost. 0: never", Min: 0, Max: 1},
			{Name: "max_nak_retrans", Type: compose.Int, Default: "256", Doc: "retransmissions one NAK can cause (the rest of what it asks for is refused and counted as nak_refused; the receiver asks again); also the most a receiver asks for in one NAK, which starts there and then follows what the last NAK brought back (cut to what came back when some did not, at least 16; doubled when all did)", Min: 1, Max: 1 << 20},
		},
		Gives:    []compose.Property{compose.Reliable, compose.Sequenced},
		Counters: compose.CountersOf(counters{}),
		// A receiver hands up a sender's casts up to window-1 past its first
		// gap (receiver.go drops what lies beyond and asks for it again).
		Spread: compose.WindowSpread("window"),
		New: func(p compose.Params) (stack.Layer, error) {
			cfg := Config{
				NakDelay:        p.Duration("nak_delay"),
				NakDelayMin:     p.Duration("nak_delay_min"),
				NakDelayRTTs:    p.Float("nak_delay_rtts"),
				NakRetry:        p.Duration("nak_retry"),
				NakRetryMin:     p.Duration("nak_retry_min"),
				NakMaxTries:     p.Int("nak_max_tries"),
				NakSlow:         p.Duration("nak_slow"),
				StableInterval:  p.Duration("stable_interval"),
				MaxBuffer:       int64(p.Int("max_buffer")),
				Window:          p.Int("window"),
				MaxNakRanges:    p.Int("max_nak_ranges"),
				P2PTimeout:      p.Duration("p2p_timeout"),
				P2PWindow:       p.Int("p2p_window"),
				P2PMaxTries:     p.Int("p2p_max_tries"),
				P2PMaxHeldBytes: int64(p.Int("p2p_max_held")),
				MaxNakRetrans:   p.Int("max_nak_retrans"),
				NakCopies:       p.Int("nak_copies"),
				NakCopiesLoss:   p.Float("nak_copies_loss"),
			}
			return compose.NewIfValid(cfg, New)
		},
	})
}

// Check reports a configuration that cannot work.
func (c Config) Check() error {
	switch {
	case c.NakDelayRTTs < 0 || c.NakDelayMin < 0:
		return fmt.Errorf("reliable: nak_delay_rtts and nak_delay_min must not be negative")
	case c.NakRetry <= 0 || c.NakSlow <= 0 || c.StableInterval <= 0 || c.P2PTimeout <= 0:
		return fmt.Errorf("reliable: nak_retry, nak_slow, stable_interval and p2p_timeout must be positive")
	case c.NakRetryMin <= 0 || c.NakRetryMin > c.NakRetry:
		return fmt.Errorf("reliable: nak_retry_min must be positive and at most nak_retry, got %v (nak_retry %v)", c.NakRetryMin, c.NakRetry)
	case c.MaxBuffer <= 0:
		return fmt.Errorf("reliable: max_buffer must be positive, got %d", c.MaxBuffer)
	case c.Window < 64:
		return fmt.Errorf("reliable: window must be at least 64, got %d", c.Window)
	case c.MaxNakRanges < 1 || c.P2PWindow < 1 || c.P2PMaxTries < 1 || c.NakMaxTries < 1 || c.MaxNakRetrans < 1 || c.NakCopies < 0:
		return fmt.Errorf("reliable: max_nak_ranges, p2p_window, p2p_max_tries, nak_max_tries and max_nak_retrans must be at least 1, nak_copies at least 0 (meaning 1)")
	case c.P2PMaxHeldBytes < 1:
		return fmt.Errorf("reliable: p2p_max_held must be positive, got %d", c.P2PMaxHeldBytes)
	}
	return nil
}

// counters are the layer's counters: each is named and documented once by
// its tags (compose.CountersOf) and Init binds them (stack.Context.BindCounters).
type counters struct {
	Sent            *stack.Counter `counter:"sent" doc:"multicasts sent"`
	Delivered       *stack.Counter `counter:"delivered" doc:"multicasts delivered up"`
	LossDiscovered  *stack.Counter `counter:"loss_discovered" doc:"gaps found in a sender's sequence"`
	NaksSent        *stack.Counter `counter:"naks_sent" doc:"negative acknowledgements sent"`
	Retransmissions *stack.Counter `counter:"retransmissions" doc:"messages sent again in answer to a NAK"`
	RecoveredNak    *stack.Counter `counter:"recovered_nak" doc:"lost messages recovered by NAK"`
	Duplicates      *stack.Counter `counter:"duplicates" doc:"copies received of messages already delivered"`
	StabilityMsgs   *stack.Counter `counter:"stability_msgs" doc:"stability digests sent"`
	AcksSent        *stack.Counter `counter:"acks_sent" role:"ack" doc:"stability digests and point-to-point acknowledgements sent"`
	BufferBytes     *stack.Counter `counter:"buffer_bytes" kind:"gauge" doc:"bytes kept for retransmission at the end"`
	PeakBufferBytes *stack.Counter `counter:"peak_buffer_bytes" kind:"peak" role:"buffer_peak" doc:"most bytes kept for retransmission at once"`
	HeldOff         *stack.Counter `counter:"held_off" doc:"casts refused while the buffer was full (back-pressure)"`
	Malformed       *stack.Counter `counter:"malformed" doc:"packets whose reliable header did not decode"`
	NonMember       *stack.Counter `counter:"non_member" doc:"packets from nodes outside the view"`
	BeforeJoin      *stack.Counter `counter:"before_join" doc:"messages from before this node joined"`
	OutOfWindow     *stack.Counter `counter:"out_of_window" doc:"messages too far ahead of the receive window, dropped"`
	FreedBytes      *stack.Counter `counter:"freed_bytes" kind:"bytes" doc:"bytes freed once stable"`
	Remulticasts    *stack.Counter `counter:"remulticasts" doc:"NAKed messages multicast again rather than unicast"`
	P2pSent         *stack.Counter `counter:"p2p_sent" doc:"point-to-point messages sent"`
	P2pDelivered    *stack.Counter `counter:"p2p_delivered" doc:"point-to-point messages delivered"`
	P2pRetrans      *stack.Counter `counter:"p2p_retransmissions" doc:"point-to-point messages sent again"`
	P2pGivenUp      *stack.Counter `counter:"p2p_given_up" doc:"point-to-point messages given up after too many tries"`
	NakUnavailable  *stack.Counter `counter:"nak_unavailable" doc:"NAKed messages no longer held"`
	NoView          *stack.Counter `counter:"no_view" doc:"packets for a group with no view yet"`
	StaleDigest     *stack.Counter `counter:"stale_digest" doc:"stability digests from an old view, ignored"`
	NakRefused      *stack.Counter `counter:"nak_refused" doc:"NAKs refused (out of range or over the bounds)"`
	P2pHeldDropped  *stack.Counter `counter:"p2p_held_dropped" doc:"held point-to-point messages dropped"`
	LossHinted      *stack.Counter `counter:"loss_hinted" doc:"losses a layer below reported (event.LossHint: lec's repairs) before a gap or digest showed them"`
	HintsUnmapped   *stack.Counter `counter:"hints_unmapped" doc:"loss hints not mapped to a sequence number (no anchor from that sender yet)"`
	DigestRepairs   *stack.Counter `counter:"digest_repairs" doc:"messages resent unasked (also counted in retransmissions) because a member's digest showed it lacked them nak_slow after we last sent them: its NAKs were lost, or it could not know of a lost tail"`
	UnplacedAsks    *stack.Counter `counter:"unplaced_asks" doc:"NAKs for everything a sender holds, nak_delay after a loss hint named it while nothing of its stream had come (its first casts lost), and each retry of such a NAK (with back-off, at most nak_max_tries in all)"`
}

// HoldsCompact marks the layer as a stack.CompactHolder: a message it
// keeps past the event that brought it up is Compact's result, so received
// messages may share the transport's read buffers.
func (*Layer) HoldsCompact() {}
