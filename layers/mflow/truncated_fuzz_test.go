package mflow

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
)

// FuzzTruncatedCounted cuts a valid data header or ACK short, or sends it
// with the wrong kind (an ACK multicast, data point to point), and checks
// node 1 drops it and counts it as malformed, exactly once. Packets come
// from node 2, a member of the group.
func FuzzTruncatedCounted(f *testing.F) {
	for typ := range byte(2) {
		f.Add(typ, uint16(0), false)
		f.Add(typ, uint16(3), false)
		f.Add(typ, uint16(0), true)
	}
	packets := []struct {
		b    []byte
		kind event.Kind
		min  int // shorter than this is malformed
	}{
		{append([]byte{tagData, 0, 0, 0, 0}, "payload"...), event.Cast, dataHeaderSize},
		{ackBytes(ack{group: 1, epoch: 0, off: 0, amount: 25000}), event.Send, ackSize},
	}
	f.Fuzz(func(t *testing.T, typ byte, cut uint16, wrongKind bool) {
		p := packets[int(typ)%len(packets)]
		b, kind := p.b, p.kind
		if wrongKind {
			kind = event.Send + event.Cast - kind
		} else {
			b = b[:int(cut)%p.min]
		}
		c := newCluster(t, 2, DefaultConfig(), time.Millisecond)
		c.lax = true
		before := c.layers[1].c.Malformed.Value()
		inject(c.stacks[1], kind, c.g, 2, b)
		if got := c.layers[1].c.Malformed.Value() - before; got != 1 {
			t.Fatalf("%v packet %x (%d bytes of %d): malformed counted %d times, want 1", kind, b, len(b), len(p.b), got)
		}
	})
}
