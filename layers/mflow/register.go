package mflow

import (
	"fmt"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/stack"
)

func init() {
	compose.Register(compose.LayerInfo{
		Name:        "mflow",
		BufferBound: bufferBound,
		Summary: "Multicast flow control (MFLOW, Ensemble): a sender casts only while it has credit for every " +
			"receiver's window, and otherwise queues and, past hi_wmark, tells the application to hold off. " +
			"Receivers return credit in bulk, one acknowledgement per ack_thresh bytes, staggered so the " +
			"acknowledgements reach the sender evenly spread instead of in a storm; no timers.",
		Params: []compose.Param{
			{Name: "window", Type: compose.Size, Default: "2000000", Doc: "unacknowledged bytes a sender may have towards each receiver (Ensemble: 50000)", Min: 1, Max: 1 << 31},
			{Name: "ack_thresh", Type: compose.Size, Default: "500000", Doc: "bytes a receiver counts before it acknowledges (at most window; Ensemble: 25000; see stacktool mflow-params)", Min: 1, Max: 1 << 31},
			{Name: "overhead", Type: compose.Size, Default: "100", Doc: "bytes added to each message's payload size when it is weighed", Min: 0, Max: 1 << 20},
			{Name: "hi_wmark", Type: compose.Int, Default: "100", Doc: "queued messages at which the application is told to hold off; it may resume once half have left", Min: 1, Max: 1 << 20},
			{Name: "stagger", Type: compose.Bool, Default: "on", Doc: "stagger the receivers' acknowledgements ack_thresh/(n-1) bytes apart"},
		},
		Needs: []compose.Property{compose.Reliable, compose.FIFO},
		Gives: []compose.Property{compose.FlowControl},
		Counters: append(compose.CountersOf(counters{}),
			// made at run time, one per receiver (receiverCounters)
			compose.CounterDoc{Name: "blocks:<node>", Doc: "times this receiver's credit ran out first (one counter per receiver)"},
			compose.CounterDoc{Name: "blocked_by:<node>", Kind: compose.Nanos, Doc: "time senders waited on this receiver's credit"},
		),
		Summarize: summarize,
		Tools:     []compose.Tool{paramsTool},
		New: func(p compose.Params) (stack.Layer, error) {
			cfg := Config{
				Window:    int64(p.Int("window")),
				AckThresh: int64(p.Int("ack_thresh")),
				Overhead:  int64(p.Int("overhead")),
				HiWmark:   p.Int("hi_wmark"),
				Stagger:   p.Bool("stagger"),
			}
			return compose.NewIfValid(cfg, New)
		},
	})
}

// Check reports a configuration that cannot work.
func (c Config) Check() error {
	switch {
	case c.Window <= 0:
		return fmt.Errorf("mflow: window must be positive, got %d", c.Window)
	case c.AckThresh <= 0:
		return fmt.Errorf("mflow: ack_thresh must be positive, got %d", c.AckThresh)
	case c.AckThresh > c.Window:
		return fmt.Errorf("mflow: ack_thresh %d is larger than window %d: receivers would never acknowledge before the sender stops", c.AckThresh, c.Window)
	case c.Overhead < 0:
		return fmt.Errorf("mflow: overhead must not be negative, got %d", c.Overhead)
	case c.HiWmark < 1:
		return fmt.Errorf("mflow: hi_wmark must be at least 1, got %d", c.HiWmark)
	}
	return nil
}

// counters are what mflow counts: its registration documents them from these
// tags (compose.CountersOf) and Init binds them (stack.Context.BindCounters).
type counters struct {
	Casts    *stack.Counter `counter:"casts" doc:"application messages the layer sent on"`
	AcksSent *stack.Counter `counter:"acks_sent" role:"ack" doc:"credit acknowledgements receivers sent (one per ack_thresh bytes)"`
	// What shows the acknowledgements spreading (the stagger's purpose)
	// or arriving in storms, as this node receives them as a sender.
	AcksRecv    *stack.Counter `counter:"acks_recv" doc:"credit acknowledgements senders received"`
	AckBurstMax *stack.Counter `counter:"ack_burst_max" kind:"peak" doc:"most acknowledgements a sender received within any 1 ms (Figure 3: n-1 without stagger, 1 with it)"`
	AcksCrowded *stack.Counter `counter:"acks_crowded" doc:"acknowledgements a sender received less than 1 ms after another"`

	CreditWaits  *stack.Counter `counter:"credit_waits" doc:"times a sender ran out of credit and queued"`
	CreditWaitNs *stack.Counter `counter:"credit_wait_ns" kind:"ns" doc:"time senders spent waiting on credit"`
	QueuePeak    *stack.Counter `counter:"queue_peak" kind:"peak" doc:"most messages queued for credit at once"`
	PeakBuf      *stack.Counter `counter:"peak_buffer_bytes" kind:"peak" role:"buffer_peak" doc:"most bytes queued for credit at once"`
	Malformed    *stack.Counter `counter:"malformed" doc:"packets whose mflow header did not decode"`
	BadAcks      *stack.Counter `counter:"bad_acks" doc:"acknowledgements refused for impossible values"`
	// Foreign also counts multicasts passed up uncounted (their sender is
	// not a member of the view they name and no early count was free).
	Foreign *stack.Counter `counter:"foreign" doc:"acknowledgements from nodes outside the view"`
}

// HoldsCompact marks the layer as a stack.CompactHolder: it keeps no
// message it receives (it counts their bytes and passes them up), so
// received messages may share the transport's read buffers.
func (*Layer) HoldsCompact() {}
