package stack

import "github.com/layercast/layercast/event"

// DropMalformed discards a packet a layer could not decode: it counts it on
// n (the layer's "malformed" counter), says so in the log when there is one,
// and releases the message.
func (c *Context) DropMalformed(ev *event.Event, n *Counter) {
	n.Inc()
	if c.Logging() {
		c.Logf("dropping malformed %v from %v (%d bytes)", ev.Kind, ev.Peer, ev.Msg.Len())
	}
	ev.Msg.Release()
}
