package mflow

import (
	"fmt"

	"github.com/layercast/layercast/compose"
)

// bufferBound is mflow's LayerInfo.BufferBound: peak_buffer_bytes counts
// the payload bytes queued for credit. A group's queue holds the
// application off once hi_wmark messages wait, but the sends the stack
// already took from the application (load.AppQueue, all groups) still
// come down to mflow, the top layer, after that.
func bufferBound(p compose.Params, load compose.NodeLoad) (int64, string) {
	n := load.Groups*p.Int("hi_wmark") + load.AppQueue
	return int64(n) * int64(load.MaxMessage),
		fmt.Sprintf("%d B x (hi_wmark %s x %d groups + %d sends queued in the stack)", load.MaxMessage, p.Text("hi_wmark"), load.Groups, load.AppQueue)
}
