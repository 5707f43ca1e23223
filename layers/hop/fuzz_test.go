package hop

import (
	"bytes"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/wirecodec"
	"github.com/layercast/layercast/internal/wiretest"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

// FuzzHopHeaders: the decoders of hop's headers refuse bad input with an
// error (never a panic), and what they accept encodes back to the same
// bytes.
func FuzzHopHeaders(f *testing.F) {
	var b [dataHdrSize]byte
	h := dataHdr{Type: tData, LinkSeq: 7, Site: 3, Origin: 9, Seq: 4, Last: 4, LTS: 11, Mask: 0b1010, View: 5, Epoch: 3}
	h.put(b[:])
	f.Add(b[:])
	h = dataHdr{Type: tSkip, LinkSeq: 8, Site: 1, Seq: 5, Last: 90, LTS: 40}
	h.put(b[:])
	f.Add(b[:])
	h = dataHdr{Type: tStart, LinkSeq: 9, Site: 2, Seq: 41}
	h.put(b[:])
	f.Add(b[:])
	var a [ackHdrSize]byte
	(&ackHdr{Aru: 3, Highest: 9, AruEpoch: 2, Epoch: 1}).put(a[:])
	f.Add(a[:])
	var bt [beatSize]byte
	(&beat{Site: 2, Seq: 10, LTS: 99}).put(bt[:])
	f.Add(bt[:])
	full := beat{Site: 1, Seq: 3, LTS: 7, Has: 0b1011}
	full.Aru[0], full.Aru[1], full.Aru[3] = 5, 3, 9
	fb := make([]byte, full.size())
	full.put(fb)
	f.Add(fb)
	hb := make([]byte, full.size())
	full.Wait = 0b0100
	full.putAs(hb, tHolds)
	f.Add(hb)
	f.Add([]byte{tNack, 0x81, 0xa1, 's', 0x92, 1, 2})
	var pb [probeSize]byte
	(&probeHdr{Site: 2, Stage: probeAnswer, Down: 0b1001}).put(pb[:])
	f.Add(pb[:])
	var sb [seenSize]byte
	putSeen(sb[:], 41)
	f.Add(sb[:])
	codec := wirecodec.New(wirecodec.Options{Name: "hop", Malformed: errMalformed, MaxInitLen: 256})
	f.Fuzz(func(t *testing.T, in []byte) {
		wiretest.Header(t, "parseData", in, dataHdrSize, parseData, func(b []byte, h dataHdr) { h.put(b) }, errMalformed)
		if a, err := parseAck(in); err == nil {
			var out [ackHdrSize]byte
			a.put(out[:])
			if !bytes.Equal(out[2:], in[2:]) {
				t.Fatalf("parseAck(%x) = %+v, which encodes as %x", in, a, out)
			}
		}
		if b, err := parseBeat(in); err == nil {
			out := make([]byte, b.size())
			b.put(out)
			// Entries come back sorted by site: compare as decoded.
			if b2, err := parseBeat(out); err != nil || b2 != b || out[1] != in[1] || !bytes.Equal(out[4:beatSize], in[4:beatSize]) {
				t.Fatalf("parseBeat(%x) = %+v, which encodes as %x (%v)", in, b, out, err)
			}
		}
		if b, err := parseBeatAs(in, tHolds); err == nil {
			out := make([]byte, b.size())
			b.putAs(out, tHolds)
			if b2, err := parseBeatAs(out, tHolds); err != nil || b2 != b || out[1] != in[1] || !bytes.Equal(out[4:beatSize], in[4:beatSize]) {
				t.Fatalf("parseBeatAs(%x, tHolds) = %+v, which encodes as %x (%v)", in, b, out, err)
			}
		}
		if p, err := parseProbe(in); err == nil {
			var out [probeSize]byte
			p.put(out[:])
			if !bytes.Equal(out[:], in) {
				t.Fatalf("parseProbe(%x) = %+v, which encodes as %x", in, p, out)
			}
		}
		if seq, err := parseSeen(in); err == nil {
			var out [seenSize]byte
			putSeen(out[:], seq)
			if !bytes.Equal(out[:], in) {
				t.Fatalf("parseSeen(%x) = %d, which encodes as %x", in, seq, out)
			}
		}
		if len(in) > 0 {
			var body nackBody
			_ = codec.Decode(in[1:], &body)
		}
	})
}

// FuzzHopReceive feeds node 1 (site 0's representative, linked to the
// representatives of sites 1 and 2: nodes 2 and 3) arbitrary packets from
// them and from strangers, interleaved with its own casts, view changes and
// time: hop counts what it refuses and never panics.
func FuzzHopReceive(f *testing.F) {
	var b [dataHdrSize]byte
	for _, h := range []dataHdr{
		{Type: tData, LinkSeq: 1, Site: 1, Origin: 2, Seq: 1, Last: 1, LTS: 1, Mask: 7},
		{Type: tData, LinkSeq: 3, Site: 1, Origin: 2, Seq: 3, Last: 3, LTS: 5, Mask: 7},
		{Type: tSkip, LinkSeq: 2, Site: 1, Seq: 2, Last: 2, LTS: 2},
		{Type: tStart, LinkSeq: 4, Site: 1, Seq: 9, LTS: 3},
		{Type: tStart, LinkSeq: 5, Site: 1, Seq: 1 << 20},
	} {
		h.put(b[:])
		f.Add(append([]byte{0, byte(dataHdrSize + 20)}, append(b[:], make([]byte, 20)...)...))
	}
	var a [ackHdrSize]byte
	(&ackHdr{Highest: 5, Epoch: 1}).put(a[:])
	f.Add(append([]byte{5, 0, ackHdrSize}, a[:]...))
	var bt [beatSize]byte
	(&beat{Site: 2, Seq: 0, LTS: 99}).put(bt[:])
	f.Add(append([]byte{8, beatSize}, bt[:]...))
	f.Add([]byte{0, 7, tNack, 0x81, 0xa1, 's', 0x92, 1, 2, 6, 50})
	for _, st := range []byte{probeAsk, probeAnswer, probeConfirm} {
		var pb [probeSize]byte
		(&probeHdr{Site: 1, Stage: st}).put(pb[:])
		f.Add(append([]byte{0, probeSize}, pb[:]...)) // a Send from n2, site 1's representative
	}
	var sb [seenSize]byte
	putSeen(sb[:], 3)
	f.Add(append([]byte{0, seenSize}, sb[:]...)) // a member's word, from a node of another site
	f.Fuzz(func(t *testing.T, in []byte) {
		fuzzSites(t).Script(in)
	})
}

// fuzzSites is the cluster the fuzz targets feed: three nodes, each its
// own site (n1 in site 0, n2 in 1, n3 in 2), all in group 1, lax about
// what the fuzzer makes them deliver.
func fuzzSites(t *testing.T) *layertest.Cluster {
	t.Helper()
	c := layertest.New(t, sim.Config{Seed: 1, Latency: 1e6}, 3, layertest.Registered(nil, "hop"))
	c.Lax = true
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3}}
	sites := []event.SiteView{{Site: 0, ID: 1, Members: []event.NodeID{1}}, {Site: 1, ID: 1, Members: []event.NodeID{2}}, {Site: 2, ID: 1, Members: []event.NodeID{3}}}
	for _, id := range c.All() {
		st := c.Stacks[id]
		st.InstallView(v)
		nb := &event.Neighbourhood{Self: id, Groups: []event.GroupID{1}, Views: map[event.GroupID]*event.ViewInfo{1: v}, Own: -1, Sites: sites, OwnSite: int(id - 1)}
		st.InstallNeighbourhood(nb)
	}
	return c
}
