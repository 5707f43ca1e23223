package ring

import (
	"fmt"

	"github.com/layercast/layercast/compose"
)

// headersAbove is room for what layers above put on a packet beyond the
// application's payload (hop's header) and for the largest control
// payload they cast through the ring (hop's heartbeat with every site).
const (
	headersAbove = 256
	controlAbove = 1024
)

// bufferBound is ring's LayerInfo.BufferBound: peak_buffer_bytes counts
// the bytes of the packets the windows hold, at most window packets per
// ring, and a member holds two rings at once while a new one recovers the
// old one's packets. A packet is the payload (or a control payload from
// above), the headers above and ring's own header.
func bufferBound(p compose.Params, load compose.NodeLoad) (int64, string) {
	pkt := int64(max(load.MaxMessage, controlAbove) + headersAbove + dataHeaderSize)
	return 2 * int64(p.Int("window")) * pkt,
		fmt.Sprintf("2 rings (the current one and the old one it recovers) x window %s x %d B packets", p.Text("window"), pkt)
}
