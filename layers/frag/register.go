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
		Needs: []compose.Property{compose.Reliable, compose.FIFO},
		Counters: []compose.CounterDoc{
			{Name: "fragmented", Doc: "messages sent as several fragments"},
			{Name: "fragments_sent", Doc: "fragments of those messages sent"},
			{Name: "reassembled", Doc: "messages put back together from fragments"},
			{Name: "malformed", Doc: "fragments refused: bad header, no first fragment, longer than max_msg or than announced"},
			{Name: "evicted", Doc: "partly gathered messages dropped to keep within max_pending"},
			{Name: "peak_buffer_bytes", Kind: compose.Peak, Role: compose.BufferPeakRole, Doc: "most bytes held for reassembly at once"},
		},
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
