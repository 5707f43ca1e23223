package tokenring

import (
	"testing"

	"github.com/layercast/layercast/event"
)

// FuzzTruncatedCounted cuts a valid packet of each of tokenring's types
// short of its whole header (or, for a token or a range list, of its whole
// body), and checks node 1 drops it and counts it as malformed, exactly
// once. Packets come from node 2, a member of the region.
func FuzzTruncatedCounted(f *testing.F) {
	for typ := range byte(7) {
		f.Add(typ, uint16(0))
		f.Add(typ, uint16(5))
	}
	l := New(fuzzConfig())
	ack := make([]byte, ackSize)
	putAck(ack, ackMsg{Region: 1, View: 1, Stable: 1, Rate: 1000})
	p2p := make([]byte, p2pHeaderSize+3)
	putP2P(p2p, p2pHeader{typ: tP2P, seq: 1, floor: 1, session: 1})
	pa := make([]byte, p2pHeaderSize)
	putP2P(pa, p2pHeader{typ: tP2PAck, seq: 1, session: 1})
	packets := []struct {
		b    []byte
		kind event.Kind
		min  int // shorter than this is malformed (-1: any strict prefix)
	}{
		{seedData(), event.Cast, dataHeaderSize},
		{seedToken(l), event.Send, -1},
		{ack, event.Send, ackSize},
		{seedRanges(l, tNak), event.Send, -1},
		{seedRanges(l, tPull), event.Send, -1},
		{p2p, event.Send, p2pHeaderSize},
		{pa, event.Send, p2pHeaderSize},
	}
	f.Fuzz(func(t *testing.T, typ byte, cut uint16) {
		p := packets[int(typ)%len(packets)]
		n := p.min
		if n < 0 {
			n = len(p.b)
		}
		b := p.b[:int(cut)%n]
		fn := newFuzzNode(t)
		before := fn.l.c.Malformed.Value()
		fn.packet(p.kind, 2, b)
		if got := fn.l.c.Malformed.Value() - before; got != 1 {
			t.Fatalf("%v packet %x (%d bytes of %d): malformed counted %d times, want 1", p.kind, b, len(b), len(p.b), got)
		}
	})
}
