// Package testkit holds fakes shared by the tests of several packages. Its
// Transport stands in for a network under one stack: it can drop
// everything, record what was sent (for assertions, or for a benchmark to
// hand on later), or hand each packet on at once. ChannelTransport does the
// same and carries multicast channels besides groups' (stack.Channels), for
// layers that ask for one (a QSM region, a Spread site). It is test support
// for this module; import it from _test.go files only.
package testkit

import "github.com/layercast/layercast/event"

// Packet is one packet a Transport was asked to send.
type Packet struct {
	To      event.NodeID    // NoNode for a multicast
	Group   event.GroupID   // NoGroup for a point-to-point send or a channel multicast
	Channel event.ChannelID // set for a multicast on a channel other than a group's (ChannelTransport)
	Data    []byte          // the packet's bytes
}

// Transport implements stack.Transport for tests. The zero value drops
// every packet and only counts them.
type Transport struct {
	// Record keeps a copy of every packet (in buffers reused after Reset or
	// Flush, so a steady benchmark allocates nothing).
	Record bool
	// Deliver, if set, is called with every packet as it is sent; Data is
	// valid only during the call.
	Deliver func(Packet)
	// Sends and Multicasts count the packets sent each way.
	Sends, Multicasts int

	subs map[event.ChannelID]bool // subscribed channels (a group's is event.ChannelOf(g))
	pkts []Packet
	n    int
}

// Send implements stack.Transport.
func (t *Transport) Send(to event.NodeID, pkt []byte) {
	t.Sends++
	t.handle(Packet{To: to, Data: pkt})
}

// Multicast implements stack.Transport.
func (t *Transport) Multicast(g event.GroupID, pkt []byte) {
	t.Multicasts++
	t.handle(Packet{Group: g, Data: pkt})
}

func (t *Transport) handle(p Packet) {
	if t.Record {
		if t.n == len(t.pkts) {
			t.pkts = append(t.pkts, Packet{Data: make([]byte, 0, 2048)})
		}
		r := &t.pkts[t.n]
		r.To, r.Group, r.Channel, r.Data = p.To, p.Group, p.Channel, append(r.Data[:0], p.Data...)
		t.n++
	}
	if t.Deliver != nil {
		t.Deliver(p)
	}
}

// Subscribe implements stack.Transport.
func (t *Transport) Subscribe(g event.GroupID) error { return t.track(event.ChannelOf(g), true) }

// Unsubscribe implements stack.Transport.
func (t *Transport) Unsubscribe(g event.GroupID) error { return t.track(event.ChannelOf(g), false) }

// Subscribed says whether the stack subscribed to g's channel (and has not
// unsubscribed since).
func (t *Transport) Subscribed(g event.GroupID) bool { return t.subs[event.ChannelOf(g)] }

// track notes a subscription to ch (on) or its end: groups' channels and,
// for a ChannelTransport, other channels in one map.
func (t *Transport) track(ch event.ChannelID, on bool) error {
	switch {
	case !on:
		delete(t.subs, ch)
	case t.subs == nil:
		t.subs = map[event.ChannelID]bool{ch: true}
	default:
		t.subs[ch] = true
	}
	return nil
}

// Packets returns what was recorded since the last Reset or Flush, oldest
// first; the slices are reused by the next packets recorded after one.
func (t *Transport) Packets() []Packet { return t.pkts[:t.n] }

// Reset forgets the recorded packets, keeping their buffers.
func (t *Transport) Reset() { t.n = 0 }

// Flush hands every recorded packet to f, oldest first, then resets.
// Packets recorded while it runs (f sending more) are handed on too.
func (t *Transport) Flush(f func(Packet)) {
	for i := 0; i < t.n; i++ {
		f(t.pkts[i])
	}
	t.n = 0
}

// ChannelTransport is a Transport that also implements stack.Channels: a
// multicast on a channel is handled as any multicast (counted in
// Multicasts, recorded or delivered with Channel set). The zero value drops
// every packet and only counts them.
type ChannelTransport struct{ Transport }

// MulticastOn implements stack.Channels.
func (t *ChannelTransport) MulticastOn(ch event.ChannelID, pkt []byte) {
	t.Multicasts++
	t.handle(Packet{Channel: ch, Data: pkt})
}

// SubscribeChannel implements stack.Channels.
func (t *ChannelTransport) SubscribeChannel(ch event.ChannelID) error { return t.track(ch, true) }

// UnsubscribeChannel implements stack.Channels.
func (t *ChannelTransport) UnsubscribeChannel(ch event.ChannelID) error { return t.track(ch, false) }

// SubscribedChannel says whether the stack subscribed to ch (and has not
// unsubscribed since).
func (t *ChannelTransport) SubscribedChannel(ch event.ChannelID) bool { return t.subs[ch] }
