package ring

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

// FuzzTruncatedCounted cuts a valid data header, token or token ACK short,
// or sends it with the wrong kind (data point to point, a token
// multicast), and checks node 1 of a four-member ring drops it and counts
// it as malformed, exactly once. Packets come from node 2, a member.
func FuzzTruncatedCounted(f *testing.F) {
	wc := newWireCodec()
	tk := token{Ring: ringID(ids(4), 0), Seq: 3, LinkSeq: 3, LinkAru: 1, Rtr: []uint32{2}, Age: []uint32{1}, SiteSeq: 3, SiteLTS: 3}
	d := make([]byte, dataHeaderSize+8)
	putData(d, dataHeader{ring: ringID(ids(4), 0), seq: 2, siteSeq: 2, lts: 2, origin: 2})
	a := make([]byte, tokenAckSize)
	putTokenAck(a, ringID(ids(4), 0), 5, 1)
	packets := []layertest.Cut{
		{B: d, Kind: event.Cast, Min: dataHeaderSize},
		{B: append([]byte{tToken, 0}, wc.Encode(&tk)...), Kind: event.Send, Min: -1},
		{B: a, Kind: event.Send, Min: tokenAckSize},
	}
	layertest.SeedCuts(f, len(packets), 7, true)
	f.Fuzz(func(t *testing.T, typ byte, cut uint16, wrongKind bool) {
		p := layertest.PickCut(packets, typ)
		b, kind := p.Input(cut, wrongKind)
		c := newCluster(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 4, testConfig())
		c.lax = true
		c.install(&event.ViewInfo{Group: 1, ID: 1, Members: ids(4)})
		before := c.counter(1, "malformed")
		c.stacks[1].Inject(0, true, event.Event{Kind: kind, Group: 1, Peer: 2, Msg: event.DefaultPool.FromBytes(b)})
		layertest.CountedOnce(t, c.counter(1, "malformed")-before, kind, b, len(p.B))
	})
}
