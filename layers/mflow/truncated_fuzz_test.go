package mflow

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/testbed/layertest"
)

// FuzzTruncatedCounted cuts a valid data header or ACK short, or sends it
// with the wrong kind (an ACK multicast, data point to point), and checks
// node 1 drops it and counts it as malformed, exactly once. Packets come
// from node 2, a member of the group.
func FuzzTruncatedCounted(f *testing.F) {
	packets := []layertest.Cut{
		{B: append([]byte{tagData, 0, 0, 0, 0}, "payload"...), Kind: event.Cast, Min: dataHeaderSize},
		{B: ackBytes(ack{group: 1, epoch: 0, off: 0, amount: 25000}), Kind: event.Send, Min: ackSize},
	}
	layertest.SeedCuts(f, len(packets), 3, true)
	f.Fuzz(func(t *testing.T, typ byte, cut uint16, wrongKind bool) {
		p := layertest.PickCut(packets, typ)
		b, kind := p.Input(cut, wrongKind)
		c := newCluster(t, 2, EnsembleConfig(), time.Millisecond)
		c.lax = true
		before := c.layers[1].c.Malformed.Value()
		inject(c.stacks[1], kind, c.g, 2, b)
		layertest.CountedOnce(t, c.layers[1].c.Malformed.Value()-before, kind, b, len(p.B))
	})
}
