package reliable

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/wiretest"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

// FuzzWire decodes arbitrary bytes as a data header, as the echo that
// follows one (flagEcho) and as a NAK body. A data header and an echo
// decode only from all their bytes (every shorter prefix is refused) and
// encode back to them; a NAK body is accepted and then
// round-trips, or refused with errMalformed; its decoding allocates within
// allocBound however long the range list claims to be. Seeds:
// testdata/fuzz/FuzzWire.
func FuzzWire(f *testing.F) {
	wc := newWireCodec()
	f.Add(dataPacket(3, 9, 0))
	f.Add(bytes.Clone(wc.Encode(&nakMsg{G: 1, R: []uint32{1, 5, 9, 9}, T: 1200})))
	f.Add(bytes.Clone(wc.Encode(&nakMsg{G: 1, R: []uint32{3, 3}, T: 300, C: 2})))    // copies asked (nak_copies_loss)
	f.Add(bytes.Clone(wc.Encode(&nakMsg{G: 1, R: []uint32{2, 4}, T: 900, S: 4242}))) // stamped, for the echo
	f.Add(echoPacket(1, 5, 4242, 8))
	f.Fuzz(func(t *testing.T, b []byte) {
		wiretest.Header(t, "parseData", b, dataHeaderSize, parseData, putData, errMalformed)
		wiretest.Header(t, "parseEcho", b, echoSize, parseEcho, putEcho, errMalformed)

		var m nakMsg
		if !wiretest.Decoded(t, "NAK", b, func() error { return wc.Decode(b, &m) }, errMalformed) {
			return
		}
		var back nakMsg
		if err := wc.Decode(bytes.Clone(wc.Encode(&m)), &back); err != nil {
			t.Fatalf("re-decoding %+v: %v", m, err)
		}
		if len(m.R) == 0 {
			m.R = nil
		}
		if len(back.R) == 0 {
			back.R = nil
		}
		if !reflect.DeepEqual(m, back) {
			t.Fatalf("NAK round trip: %+v became %+v", m, back)
		}
	})
}

// FuzzTruncatedCounted cuts a valid packet of each of reliable's types
// short of a whole header or body, or sends it with the wrong kind (a
// multicast type point to point, or the reverse), and checks the receiver
// drops it and counts it as malformed, exactly once.
func FuzzTruncatedCounted(f *testing.F) {
	wc := newWireCodec()
	nak := append([]byte{tNak}, wc.Encode(&nakMsg{G: 1, R: []uint32{1, 1}, T: 5})...)
	// a strict prefix of the header, or of the whole control body (-1)
	packets := []layertest.Cut{
		{B: dataPacket(1, 1, 8), Kind: event.Cast, Min: dataHeaderSize},
		{B: echoPacket(1, 1, 7, 8), Kind: event.Cast, Min: dataHeaderSize + echoSize},
		{B: encDigest(&digestMsg{G: 1, V: 1, U: true, E: []uint32{1, 1, 1, 2, 0, 1}}), Kind: event.Cast, Min: -1},
		{B: nak, Kind: event.Send, Min: -1},
		{B: p2pPacket(1, 1, 8), Kind: event.Send, Min: p2pFullHeader},
		{B: []byte{tP2PAck, 0, 0, 0, 1}, Kind: event.Send, Min: p2pAckSize},
		{B: []byte{tPass, 'x'}, Kind: event.Cast, Min: 1},
	}
	layertest.SeedCuts(f, len(packets), 3, true)
	f.Fuzz(func(t *testing.T, typ byte, cut uint16, wrongKind bool) {
		p := layertest.PickCut(packets, typ)
		b, kind := p.Input(cut, wrongKind)
		c := layertest.New(t, sim.Config{Seed: 1}, 2, layertest.Registered(map[string]map[string]string{"reliable": nil}, "reliable"))
		c.Lax = true
		c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}})
		before := c.Counter("reliable", "malformed", 1)
		c.Stacks[1].Inject(0, true, event.Event{Kind: kind, Group: 1, Peer: 2, Msg: event.DefaultPool.FromBytes(b)})
		c.Net.Run(100 * time.Millisecond)
		layertest.CountedOnce(t, c.Counter("reliable", "malformed", 1)-before, kind, b, len(p.B))
	})
}

// echoPacket is a retransmission of seq in view with size bytes of payload
// that echoes the NAK stamp echo (flagEcho).
func echoPacket(view, seq, echo uint32, size int) []byte {
	b := make([]byte, dataHeaderSize+echoSize+size)
	putData(b, dataHeader{flags: flagRetrans | flagEcho, view: view, base: 1, seq: seq})
	putEcho(b[dataHeaderSize:], echo)
	return b
}
