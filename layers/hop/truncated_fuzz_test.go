package hop

import (
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/layertest"
	"github.com/layercast/layercast/transport/sim"
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
	putAck(ack[:], 0, 5)
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
		c := layertest.New(t, sim.Config{Seed: 1, Latency: 1e6}, 3, layertest.Registered(nil, "hop"))
		c.Lax = true
		v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3}}
		sites := []event.SiteView{{Site: 0, ID: 1, Members: []event.NodeID{1}}, {Site: 1, ID: 1, Members: []event.NodeID{2}}, {Site: 2, ID: 1, Members: []event.NodeID{3}}}
		for _, id := range c.All() {
			st := c.Stacks[id]
			st.InstallView(v)
			st.InstallNeighbourhood(&event.Neighbourhood{Self: id, Groups: []event.GroupID{1}, Views: map[event.GroupID]*event.ViewInfo{1: v}, Own: -1, Sites: sites, OwnSite: int(id - 1)})
		}
		before := c.Counter("hop", "malformed", 1)
		c.Stacks[1].Inject(c.Stacks[1].NumLayers()-1, true, event.Event{Kind: kind, Group: 1, Peer: 2, Msg: event.DefaultPool.FromBytes(b)})
		layertest.CountedOnce(t, c.Counter("hop", "malformed", 1)-before, kind, b, len(p.B))
	})
}
