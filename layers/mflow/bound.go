package mflow

import (
	"fmt"

	"github.com/layercast/layercast/compose"
)

// bufferBound is mflow's LayerInfo.BufferBound: peak_buffer_bytes counts
// the payload bytes queued for credit, and a group's queue holds the
// application off once hi_wmark messages wait, so at most hi_wmark
// messages per group.
func bufferBound(p compose.Params, load compose.NodeLoad) (int64, string) {
	return int64(load.Groups) * int64(p.Int("hi_wmark")) * int64(load.MaxMessage),
		fmt.Sprintf("hi_wmark %s x %d B x %d groups", p.Text("hi_wmark"), load.MaxMessage, load.Groups)
}
