package pack

import (
	"fmt"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/stack"
)

func init() {
	compose.Register(compose.LayerInfo{
		Name: "pack",
		Summary: "Packing: consecutive messages to the same group channel or node share one datagram, " +
			"one frame header and one system call (Spread and QSM pack, JGroups bundles). A pack leaves once " +
			"the next message would not fit in size bytes, or delay after its first message (by default at once " +
			"once the stack is done with what is queued), so low rates keep their latency. Place it at the bottom, below reliable (or just above gms).",
		Params: []compose.Param{
			{Name: "size", Type: compose.Size, Default: "8KB", Doc: "most bytes of messages (with 2 bytes each) one datagram packs", Min: 16, Max: MaxEntry},
			{Name: "delay", Type: compose.Duration, Default: "0", Doc: "longest a message waits for others to share its datagram; 0: none, what is cast while the stack is busy (one step, the casts queued behind it) shares a datagram and leaves as soon as the stack is done. " +
				"Over UDP the node wakes for it on time (transport/udp arms a timerfd for short timers; the Go runtime alone fired a 300us timer after about 1.1 ms)", Min: 0, Max: 1},
			{Name: "max_pending", Type: compose.Int, Default: "64", Doc: "destinations with messages held at once (one more flushes the oldest)", Min: 1, Max: 1 << 16},
		},
		Counters:  compose.CountersOf(counters{}),
		Summarize: summarize,
		New: func(p compose.Params) (stack.Layer, error) {
			return compose.NewIfValid(Config{Size: p.Int("size"), Delay: p.Duration("delay"), MaxPending: p.Int("max_pending")}, New)
		},
	})
}

// Check reports a configuration that cannot work.
func (c Config) Check() error {
	switch {
	case c.Size < 1+entryHead+1 || c.Size > MaxEntry:
		return fmt.Errorf("pack: size %d out of range %d-%d", c.Size, 1+entryHead+1, MaxEntry)
	case c.Delay < 0 || c.Delay > time.Second:
		return fmt.Errorf("pack: delay %v out of range 0-1s", c.Delay)
	case c.MaxPending < 1:
		return fmt.Errorf("pack: max_pending must be at least 1, got %d", c.MaxPending)
	}
	return nil
}

// summarize gives the messages per datagram the layer achieved.
func summarize(c compose.Counters) compose.Summary {
	var s compose.Summary
	dgrams := c.Total["packs_sent"] + c.Total["singles_sent"]
	if dgrams > 0 {
		s.Ratio("msgs_per_datagram", float64(c.Total["packed_msgs"]+c.Total["singles_sent"])/float64(dgrams))
	}
	return s
}

// counters are the layer's counters: each is named and documented once by
// its tags (compose.CountersOf) and Init binds them (stack.Context.BindCounters).
type counters struct {
	Packs     *stack.Counter `counter:"packs_sent" doc:"datagrams that carried two messages or more"`
	Packed    *stack.Counter `counter:"packed_msgs" doc:"messages sent inside those datagrams"`
	Singles   *stack.Counter `counter:"singles_sent" doc:"messages sent alone (control, nothing followed within delay, or too long to share)"`
	BySize    *stack.Counter `counter:"flush_size" doc:"packs sent because the next message would not fit"`
	ByDelay   *stack.Counter `counter:"flush_delay" doc:"packs or singles sent because their first message had waited delay"`
	Unpacked  *stack.Counter `counter:"unpacked_msgs" doc:"messages received inside packs"`
	Malformed *stack.Counter `counter:"malformed" doc:"received packets whose pack header or entries did not decode (entries before the bad one are kept)"`
}

// HoldsCompact marks the layer as a stack.CompactHolder: a message it
// keeps past the event that brought it up is Compact's result, so received
// messages may share the transport's read buffers.
func (*Layer) HoldsCompact() {}
