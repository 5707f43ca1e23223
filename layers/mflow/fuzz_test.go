package mflow

import (
	"bytes"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
)

// FuzzParseAck: any bytes decode to an acknowledgement or an error, never a
// panic, and a decoded one encodes back to the same bytes.
func FuzzParseAck(f *testing.F) {
	f.Add(ackBytes(ack{group: 1, epoch: 3, off: 12500, amount: 25100})[1:])
	f.Add(ackBytes(ack{group: 1, epoch: 3, off: 0, amount: 0, sw: true})[1:])
	f.Add([]byte{})
	f.Add(make([]byte, ackSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := parseAck(b)
		if err != nil {
			return
		}
		out := make([]byte, ackSize)
		putAck(out, a)
		// Flags other than the switch bit are not kept.
		want := append([]byte{tagAck}, b...)
		want[1] &= flagSwitch
		if !bytes.Equal(out, want) {
			t.Fatalf("round trip: %x -> %+v -> %x", want, a, out)
		}
	})
}

// FuzzReceive feeds raw mflow input from below to a sender and receiver of
// a three-member group in steady state (or just after a view change): each
// input is one event, kind (multicast or point to point), claimed source (a
// member or not), group and view change chosen by its first bytes. Nothing panics, every receiver's credit
// stays within window + ack_thresh of what the sender sent, the counts stay
// bounded, and the group still delivers afterwards.
func FuzzReceive(f *testing.F) {
	ep := []byte{0, 0, 0, 0}
	f.Add(byte(1), byte(2), ackBytes(ack{group: 1, epoch: 0, off: 0, amount: 25000}))
	f.Add(byte(1), byte(3), ackBytes(ack{group: 1, epoch: 0, off: 12500, amount: 1 << 40}))
	f.Add(byte(0), byte(9), append([]byte{tagData}, append(ep, "payload"...)...))
	f.Add(byte(4), byte(2), append([]byte{tagData}, append(ep, make([]byte, 1000)...)...))
	f.Add(byte(2), byte(2), []byte{tagPass, 1, 2, 3})
	f.Add(byte(1), byte(2), ackBytes(ack{group: 1, epoch: 0, off: 0, amount: 1000, sw: true}))
	f.Add(byte(8|4), byte(1), append([]byte{tagData}, append(ep, make([]byte, 100)...)...))
	f.Add(byte(8|1), byte(3), ackBytes(ack{group: 1, epoch: 0, off: 0, amount: 30000}))
	f.Fuzz(func(t *testing.T, sel, peer byte, b []byte) {
		cfg := EnsembleConfig()
		c := newCluster(t, 3, cfg, time.Millisecond)
		c.lax = true
		c.castEvery(1, 1000, 60, 100*time.Microsecond, 0)
		c.net.Run(20 * time.Millisecond)
		// sel bit 2 sets the epoch of a data header to the cluster's
		// current view (the package-wide view counter moves per run).
		b = bytes.Clone(b)
		if ep := c.layers[1].send[c.g].epoch; sel&4 != 0 && len(b) >= dataHeaderSize && b[0] == tagData {
			b[1], b[2], b[3], b[4] = byte(ep>>24), byte(ep>>16), byte(ep>>8), byte(ep)
		}
		if sel&8 != 0 {
			// A view change just before: receivers in transit.
			c.install([]event.NodeID{1, 2, 3})
		}
		k := event.Cast
		if sel&1 != 0 {
			k = event.Send
		}
		g := c.g
		if sel&2 != 0 {
			g = event.GroupID(sel)
		}
		for _, to := range []event.NodeID{1, 2} {
			inject(c.stacks[to], k, g, event.NodeID(peer), b)
		}
		s := c.layers[1].send[c.g]
		for i := range s.nodes {
			if cr := s.cr.credited(i) - s.cr.sent; cr > cfg.Window+cfg.AckThresh {
				t.Fatalf("receiver %v has %d bytes of credit, more than window+ack_thresh", s.nodes[i], cr)
			}
		}
		for _, id := range c.ids {
			if n := len(c.layers[id].recv); n > 2+maxEarly {
				t.Fatalf("node %v keeps %d counts", id, n)
			}
		}
		before := c.delivered[3][1]
		c.castEvery(1, 100, 5, time.Millisecond, c.net.Now())
		c.net.Run(200 * time.Millisecond)
		if c.delivered[3][1] < before+5 {
			t.Fatalf("node 3 delivered %d from node 1 after the input, want %d", c.delivered[3][1], before+5)
		}
	})
}
