package reliable

import (
	"fmt"

	"github.com/layercast/layercast/compose"
)

// headersAbove is room for the headers layers above put on a message
// (fifo, mflow): what the retransmission buffer holds beyond the payload.
const headersAbove = 256

// bufferBound is reliable's LayerInfo.BufferBound: peak_buffer_bytes counts
// what senders keep for retransmission, at most max_buffer per group (a
// cast that does not fit waits and the application is held off), or one
// message when a single one is larger.
func bufferBound(p compose.Params, load compose.NodeLoad) (int64, string) {
	per := max(int64(p.Int("max_buffer")), int64(load.MaxMessage+headersAbove+dataHeaderSize))
	return int64(load.Groups) * per, fmt.Sprintf("max_buffer %s x %d groups", p.Text("max_buffer"), load.Groups)
}
