package fifo

import (
	"fmt"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
)

// bufferBound is fifo's LayerInfo.BufferBound: peak_buffer_bytes counts
// the messages held out of order, each at event.HeldCost, at most
// max_reorder messages and max_reorder_bytes (or one larger message) per
// sender, for every other member of every group.
func bufferBound(p compose.Params, load compose.NodeLoad) (int64, string) {
	one := event.HeldCost(load.MaxMessage)
	per := max(min(int64(p.Int("max_reorder_bytes")), int64(p.Int("max_reorder"))*one), one)
	n := load.Groups * load.Senders()
	return int64(n) * per, fmt.Sprintf("min(max_reorder_bytes %s, max_reorder %s x %d B held) x %d senders", p.Text("max_reorder_bytes"), p.Text("max_reorder"), one, n)
}
