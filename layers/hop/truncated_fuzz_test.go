package hop

import (
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/testbed/layertest"
)

// FuzzTruncatedCounted cuts a valid packet of each of hop's types short of
// its whole header (or, for a nack, of its whole body), and checks node 1
// (site 0's representative) drops it and counts it as malformed, exactly
// once. Packets come from node 2, site 1's representative, which node 1
// has a link to.
func FuzzTruncatedCounted(f *testing.F) {
	var data [dataHdrSize]byte
	(&dataHdr{Type: tData, LinkSeq: 1, Site: 1, Origin: 2, Seq: 1, Last: 1, LTS: 1, Mask: 7}).put(data[:])
	var ack [ackHdrSize]byte
	(&ackHdr{Highest: 5, Epoch: 1}).put(ack[:])
	full := beat{Site: 1, Seq: 3, LTS: 7, Has: 0b11}
	full.Aru[0], full.Aru[1] = 5, 3
	bt := make([]byte, full.size())
	full.put(bt)
	var pb [probeSize]byte
	(&probeHdr{Site: 1, Stage: probeAsk}).put(pb[:])
	packets := []layertest.Cut{
		{B: data[:], Kind: event.Send, Min: dataHdrSize},
		{B: ack[:], Kind: event.Send, Min: ackHdrSize},
		{B: []byte{tNack, 0x81, 0xa1, 's', 0x92, 1, 2}, Kind: event.Send, Min: -1},
		{B: bt, Kind: event.Cast, Min: len(bt)},
		{B: pb[:], Kind: event.Send, Min: probeSize},
	}
	layertest.SeedCuts(f, 6, 5, false) // one typ past the five: typ is taken modulo
	f.Fuzz(func(t *testing.T, typ byte, cut uint16) {
		p := layertest.PickCut(packets, typ)
		b, kind := p.Input(cut, false)
		c := fuzzSites(t)
		before := c.Counter("hop", "malformed", 1)
		c.Stacks[1].Inject(c.Stacks[1].NumLayers()-1, true, event.Event{Kind: kind, Group: 1, Peer: 2, Msg: event.DefaultPool.FromBytes(b)})
		layertest.CountedOnce(t, c.Counter("hop", "malformed", 1)-before, kind, b, len(p.B))
	})
}
