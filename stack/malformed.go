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

// PacketType returns the type byte a packet from below starts with (the
// first byte of most layers' headers), leaving it in the message. An empty
// packet is dropped as malformed (DropMalformed, counted on n) and ok is
// false: the caller returns.
func (c *Context) PacketType(ev *event.Event, n *Counter) (t byte, ok bool) {
	b, err := ev.Msg.Peek(1)
	if err != nil {
		c.DropMalformed(ev, n)
		return 0, false
	}
	return b[0], true
}

// TakePacketType is PacketType for a layer that strips its type byte
// before it reads the rest: the byte is consumed.
func (c *Context) TakePacketType(ev *event.Event, n *Counter) (t byte, ok bool) {
	if t, ok = c.PacketType(ev, n); ok {
		_, _ = ev.Msg.Consume(1)
	}
	return t, ok
}
