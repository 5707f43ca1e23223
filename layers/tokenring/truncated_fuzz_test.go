package tokenring

import (
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/testbed/layertest"
)

// FuzzTruncatedCounted cuts a valid packet of each of tokenring's types
// short of its whole header (or, for a token or a range list, of its whole
// body), and checks node 1 drops it and counts it as malformed, exactly
// once. Packets come from node 2, a member of the region.
func FuzzTruncatedCounted(f *testing.F) {
	l := New(fuzzConfig())
	packets := []layertest.Cut{
		{B: seedData(), Kind: event.Cast, Min: dataHeaderSize},
		{B: seedToken(l), Kind: event.Send, Min: -1},
		{B: seedAck(), Kind: event.Send, Min: ackSize},
		{B: seedRanges(l, tNak), Kind: event.Send, Min: -1},
		{B: seedRanges(l, tPull), Kind: event.Send, Min: -1},
		{B: seedP2P(tP2P), Kind: event.Send, Min: p2pHeaderSize},
		{B: seedP2P(tP2PAck), Kind: event.Send, Min: p2pHeaderSize},
	}
	layertest.SeedCuts(f, len(packets), 5, false)
	f.Fuzz(func(t *testing.T, typ byte, cut uint16) {
		p := layertest.PickCut(packets, typ)
		b, kind := p.Input(cut, false)
		fn := newFuzzNode(t)
		before := fn.l.c.Malformed.Value()
		fn.packet(kind, 2, b)
		layertest.CountedOnce(t, fn.l.c.Malformed.Value()-before, kind, b, len(p.B))
	})
}
