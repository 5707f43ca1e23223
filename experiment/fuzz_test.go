package experiment

import (
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// fuzzCollector is a collector for 4 nodes in one group of 4, with
// views installed and a few casts, for the fuzz targets below.
func fuzzCollector(f *testing.F) *Collector {
	sc := Default()
	sc.Nodes, sc.GroupsPerNode, sc.GroupSize, sc.MsgSize = 4, 1, 4, PayloadHeader
	a, err := Assign(sc)
	if err != nil {
		f.Fatal(err)
	}
	c := NewCollector(sc, a)
	c.TrackSends()
	ms := a.Groups[1]
	for _, n := range ms {
		c.View(n, &event.ViewInfo{Group: 1, ID: 1, Members: ms, Joined: ms}, 0)
	}
	for i := uint64(0); i < 8; i++ {
		c.Sent(1, 1, i)
	}
	return c
}

// FuzzWatchLook feeds arbitrary packets to the transport watcher, which
// reads the stamp at the tail of the stack's outgoing data packets: it
// must never panic, and only casts of its own node that the stack accepted
// may count as sent.
func FuzzWatchLook(f *testing.F) {
	c := fuzzCollector(f)
	w := &watchTransport{self: 1, col: c, size: PayloadHeader}
	pkt := make([]byte, stack.FrameSize+4+PayloadHeader)
	stack.PutFrame(pkt, stack.Frame{Kind: event.Cast, Group: 1, Src: 1})
	PutStamp(pkt[len(pkt)-PayloadHeader:], Stamp{Sender: 1, Group: 1, Index: 3})
	f.Add(pkt)
	f.Add(pkt[:stack.FrameSize])
	f.Add([]byte{})
	bad := append([]byte(nil), pkt...)
	PutStamp(bad[len(bad)-PayloadHeader:], Stamp{Sender: 2, Group: 1, Index: 1 << 60})
	f.Add(bad)
	f.Fuzz(func(t *testing.T, p []byte) {
		w.look(p)
		if c.out[0] > c.sent[0]+1 {
			t.Fatalf("watcher marked %d casts sent of %d accepted", c.out[0], c.sent[0])
		}
	})
}

// FuzzCollectorDelivered feeds arbitrary payloads and views to the
// collector as deliveries: it must never panic, and counts stay consistent.
func FuzzCollectorDelivered(f *testing.F) {
	c := fuzzCollector(f)
	p := make([]byte, PayloadHeader)
	PutStamp(p, Stamp{Sender: 1, Group: 1, Index: 2})
	f.Add(p, uint32(2), uint32(1), uint32(1), false)
	f.Add([]byte{1, 2, 3}, uint32(9), uint32(0), uint32(7), true)
	f.Fuzz(func(t *testing.T, payload []byte, rx, from, g uint32, view bool) {
		if view {
			// A view at rx: n1 and rx only, rx listed as joined.
			ms := []event.NodeID{1, event.NodeID(rx)}
			if rx <= 1 {
				ms = ms[:1]
			}
			c.View(event.NodeID(rx), &event.ViewInfo{Group: event.GroupID(g), ID: 2, Members: ms, Joined: ms[len(ms)-1:]}, 1)
		}
		d := stack.Delivery{Group: event.GroupID(g), From: event.NodeID(from), Payload: payload}
		c.Delivered(event.NodeID(rx), &d, 2)
		r := c.Finish(Outcome{End: 3})
		if r.DeliveriesExpected != r.DeliveriesOfExpected+r.Missing || r.Missing != r.MissingExplained+r.MissingUnexplained {
			t.Fatalf("counts do not add up: %+v", r)
		}
	})
}

// FuzzSimDrop feeds arbitrary dropped packets to the simulator's drop hook
// as the collector sees them, interleaved with deliveries: it must never
// panic, every drop is counted once by a cause, and recovered never
// exceeds dropped.
func FuzzSimDrop(f *testing.F) {
	c := fuzzCollector(f)
	pkt := make([]byte, stack.FrameSize+4+PayloadHeader)
	stack.PutFrame(pkt, stack.Frame{Kind: event.Cast, Group: 1, Src: 1})
	PutStamp(pkt[len(pkt)-PayloadHeader:], Stamp{Sender: 1, Group: 1, Index: 3})
	f.Add(pkt, uint32(1), uint32(2), uint32(1), "loss", true)
	f.Add(pkt, uint32(1), uint32(0), uint32(1), "send-queue", false)
	f.Add([]byte{1}, uint32(5), uint32(7), uint32(9), "bogus", true)
	f.Add([]byte{}, uint32(0), uint32(0), uint32(0), "partition", false)
	var drops int64
	f.Fuzz(func(t *testing.T, p []byte, from, to, g uint32, reason string, deliver bool) {
		before := c.dropBy.Total()
		c.simDrop(event.NodeID(from), event.NodeID(to), event.GroupID(g), p, reason)
		n := c.dropBy.Total() - before
		if len(p) > 0 && p[0]&1 != 0 && n != 0 {
			t.Fatalf("a control packet counted as %d data drops", n)
		}
		if n < 0 || n > 3 { // one receiver, or a multicast's other members
			t.Fatalf("one drop counted %d times", n)
		}
		drops += n
		if deliver && len(p) >= PayloadHeader {
			d := stack.Delivery{Group: 1, From: 1, Payload: p[len(p)-PayloadHeader:], Recovery: event.Recovery{By: "nak"}}
			c.Delivered(event.NodeID(to), &d, 2)
		}
		r := c.Finish(Outcome{End: 3})
		l := r.Loss
		o := l.DropOutcome
		if l.Dropped != drops || l.Recovered > l.Dropped || o.Recovered+o.Missing+o.NotOwed+o.Again+o.Untied != l.Dropped || o.NotOwed < 0 {
			t.Fatalf("drops %d: loss %+v", drops, l)
		}
	})
}
