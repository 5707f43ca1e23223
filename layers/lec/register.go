package lec

import (
	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/stack"
)

func init() {
	compose.Register(compose.LayerInfo{
		Name: "lec",
		Summary: "Ricochet's Lateral Error Correction: most lost multicast packets come back within tens of " +
			"milliseconds, whatever the number of groups per node. Receivers XOR every r data packets of the groups " +
			"a region shares into repair bins and send each repair to random members of that region (Algorithm 1), " +
			"so on average c repairs per received packet reach its group; a receiver missing one packet of a repair " +
			"rebuilds it. Losses it cannot fix are left to a NAK layer above. Only members of the node's views get state " +
			"(their data is held, their repairs read); everything it keeps is bounded by count and bytes.",
		Params: []compose.Param{
			{Name: "r", Type: compose.Int, Default: "8", Doc: "data packets XORed into one repair", Min: 1, Max: 255},
			{Name: "c", Type: compose.Float, Default: "5", Doc: "repairs per received packet sent to its group, on average", Min: 0, Max: 1000},
			{Name: "stagger", Type: compose.Int, Default: "1", Doc: "instances of each repair bin, filled round robin (burst tolerance)", Min: 1, Max: 64},
			{Name: "window", Type: compose.Duration, Default: "2s", Doc: "how long received data, unusable repairs and discovered losses are kept", Min: 0.001, Max: 3600},
			{Name: "max_held", Type: compose.Int, Default: "16384", Doc: "most data packets kept for XORing repairs, and most discovered losses remembered", Min: 16, Max: 1 << 24},
			{Name: "max_unusable", Type: compose.Int, Default: "2048", Doc: "most repairs kept while two or more of their packets are missing", Min: 0, Max: 1 << 24},
			{Name: "max_unusable_bytes", Type: compose.Size, Default: "8MiB", Doc: "most bytes of those repairs kept (the oldest go first)", Min: 1, Max: 1 << 40},
			{Name: "max_held_bytes", Type: compose.Size, Default: "64MiB", Doc: "most bytes of data packets kept for XORing repairs, each counted with its buffer (at least 1.5 KB and headers; the oldest go first)", Min: 1, Max: 1 << 40},
			{Name: "max_streams", Type: compose.Int, Default: "65536", Doc: "most (group, sender) receive windows of other senders; only members of the node's views get one, dropped when they leave", Min: 1, Max: 1 << 24},
		},
		Gives: []compose.Property{compose.ProbabilisticRecovery},
		Counters: []compose.CounterDoc{
			{Name: "data_in", Doc: "data packets received"},
			{Name: "data_sent", Doc: "data packets sent"},
			{Name: "repairs_sent", Doc: "repair packets sent"},
			{Name: "repairs_built", Doc: "repair bins filled"},
			{Name: "repairs_received", Doc: "repair packets received"},
			{Name: "xors", Doc: "packets XORed into bins or out of repairs"},
			{Name: "recovered", Doc: "lost packets rebuilt from a repair"},
			{Name: "recovered_xor2", Doc: "lost packets rebuilt from a repair that became usable after another recovery"},
			{Name: "unusable_buffered", Doc: "repairs kept while two or more of their packets were missing"},
			{Name: "unusable_evicted", Doc: "such repairs dropped by the window or the bounds"},
			{Name: "loss_discovered", Doc: "losses found from a repair or a gap"},
			{Name: "peak_buffer_bytes", Kind: compose.Peak, Role: compose.BufferPeakRole, Doc: "most bytes of data and repairs held at once"},
			{Name: "repairs_stale", Doc: "repairs whose packets were all older than the window"},
			{Name: "repairs_redundant", Doc: "repairs of packets all already received"},
			{Name: "repairs_foreign", Doc: "repairs from outside the node's regions"},
			{Name: "duplicates", Doc: "data packets received twice"},
			{Name: "malformed", Doc: "packets whose lec header did not decode"},
			{Name: "data_untracked", Doc: "data packets from senders without a receive window (outside the views, or max_streams reached)"},
			{Name: "streams_pruned", Doc: "receive windows dropped when their sender left"},
			{Name: "streams_full", Doc: "senders refused a receive window because max_streams was reached"},
			{Name: "lost_evicted", Doc: "remembered losses dropped by the bounds"},
			{Name: "loss_hints", Doc: "losses told to the NAK layer above as soon as a repair showed them and could not rebuild them (section 4.2.7)"},
			{Name: "found_above", Doc: "lost packets the layer above got by other means (NAK retransmissions) and handed back to decode waiting repairs"},
		},
		New: func(p compose.Params) (stack.Layer, error) {
			return New(Config{
				R: p.Int("r"), C: p.Float("c"), Stagger: p.Int("stagger"), Window: p.Duration("window"),
				MaxHeld: p.Int("max_held"), MaxUnusable: p.Int("max_unusable"),
				MaxUnusableBytes: int64(p.Int("max_unusable_bytes")), MaxHeldBytes: int64(p.Int("max_held_bytes")),
				MaxStreams: p.Int("max_streams"),
			}), nil
		},
	})
}
