package frag

import (
	"fmt"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/stack"
)

func init() {
	compose.Register(compose.LayerInfo{
		Name: "frag",
		Summary: "Fragmentation (Ensemble, JGroups' FRAG2): a message longer than size bytes leaves as " +
			"fragments and is put back together at every receiver, up to max_msg bytes, the payload limit " +
			"the stack then enforces. It stands above FIFO reliable delivery, so reassembly is one buffer " +
			"per sender.",
		Params: []compose.Param{
			{Name: "size", Type: compose.Size, Default: "16KB", Doc: "most payload bytes per fragment (keep it under a datagram with the headers below)", Min: 64, Max: 60000},
			{Name: "max_msg", Type: compose.Size, Default: "1MB", Doc: "longest message taken and reassembled: the stack's payload limit", Min: 1, Max: 1 << 30},
			{Name: "max_pending", Type: compose.Int, Default: "16", Doc: "messages a receiver gathers at once (one more drops the oldest)", Min: 1, Max: 1 << 16},
		},
		Needs:    []compose.Property{compose.Reliable, compose.FIFO},
		Counters: compose.CountersOf(counters{}),
		New: func(p compose.Params) (stack.Layer, error) {
			return compose.NewIfValid(Config{Size: p.Int("size"), MaxMsg: p.Int("max_msg"), MaxPending: p.Int("max_pending")}, New)
		},
	})
}

// Check reports a configuration that cannot work.
func (c Config) Check() error {
	switch {
	case c.Size < 1:
		return fmt.Errorf("frag: size must be positive, got %d", c.Size)
	case c.MaxMsg < 1:
		return fmt.Errorf("frag: max_msg must be positive, got %d", c.MaxMsg)
	case c.MaxPending < 1:
		return fmt.Errorf("frag: max_pending must be at least 1, got %d", c.MaxPending)
	}
	return nil
}

// counters are the layer's counters: each is named and documented once by
// its tags (compose.CountersOf) and Init binds them (stack.Context.BindCounters).
type counters struct {
	Fragmented  *stack.Counter `counter:"fragmented" doc:"messages sent as several fragments"`
	Frags       *stack.Counter `counter:"fragments_sent" doc:"fragments of those messages sent"`
	Reassembled *stack.Counter `counter:"reassembled" doc:"messages put back together from fragments"`
	Malformed   *stack.Counter `counter:"malformed" doc:"fragments refused: bad header, no first fragment, longer than max_msg or than announced"`
	Evicted     *stack.Counter `counter:"evicted" doc:"partly gathered messages dropped to keep within max_pending"`
	Peak        *stack.Counter `counter:"peak_buffer_bytes" kind:"peak" role:"buffer_peak" doc:"most bytes held for reassembly at once"`
}
