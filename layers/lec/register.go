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
