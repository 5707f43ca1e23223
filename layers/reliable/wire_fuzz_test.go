package reliable

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/alloctest"
	"github.com/layercast/layercast/internal/layertest"
	"github.com/layercast/layercast/transport/sim"
)

// FuzzWire decodes arbitrary bytes as a data header and as a NAK body. A
// data header decodes only from all its bytes (every shorter prefix is
// refused) and encodes back to them; a NAK body is accepted and then
// round-trips, or refused with errMalformed; its decoding allocates within
// allocBound however long the range list claims to be. Seeds:
// testdata/fuzz/FuzzWire.
func FuzzWire(f *testing.F) {
	wc := newWireCodec()
	f.Add(dataPacket(3, 9, 0))
	f.Add(bytes.Clone(wc.Encode(&nakMsg{G: 1, R: []uint32{1, 5, 9, 9}, T: 1200})))
	f.Fuzz(func(t *testing.T, b []byte) {
		if h, err := parseData(b); err == nil {
			out := make([]byte, dataHeaderSize)
			putData(out, h)
			if !bytes.Equal(out, b[:dataHeaderSize]) {
				t.Fatalf("parseData(%x) = %+v, which encodes as %x", b[:dataHeaderSize], h, out)
			}
			for k := range dataHeaderSize {
				if _, err := parseData(b[:k]); err == nil {
					t.Fatalf("parseData accepted a %d-byte prefix of %x", k, b[:dataHeaderSize])
				}
			}
		} else if !errors.Is(err, errMalformed) {
			t.Fatalf("parseData: %v does not wrap errMalformed", err)
		}

		var m nakMsg
		var err error
		if n := alloctest.Bytes(func() { err = wc.Decode(b, &m) }); n > alloctest.DecodeBound(len(b)) {
			t.Fatalf("decoding a %d-byte NAK allocated %d bytes, bound %d", len(b), n, alloctest.DecodeBound(len(b)))
		}
		if err != nil {
			if !errors.Is(err, errMalformed) {
				t.Fatalf("NAK decode: %v does not wrap errMalformed", err)
			}
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
	for typ := range byte(6) {
		f.Add(typ, uint16(0), false)
		f.Add(typ, uint16(3), false)
		f.Add(typ, uint16(0), true)
	}
	wc := newWireCodec()
	nak := append([]byte{tNak}, wc.Encode(&nakMsg{G: 1, R: []uint32{1, 1}, T: 5})...)
	packets := []struct {
		b    []byte
		kind event.Kind
		min  int // shorter than this is malformed
	}{
		{dataPacket(1, 1, 8), event.Cast, dataHeaderSize},
		{encDigest(&digestMsg{G: 1, V: 1, U: true, E: []uint32{1, 1, 1, 2, 0, 1}}), event.Cast, -1},
		{nak, event.Send, -1},
		{p2pPacket(1, 1, 8), event.Send, p2pFullHeader},
		{[]byte{tP2PAck, 0, 0, 0, 1}, event.Send, p2pAckSize},
		{[]byte{tPass, 'x'}, event.Cast, 1},
	}
	f.Fuzz(func(t *testing.T, typ byte, cut uint16, wrongKind bool) {
		p := packets[int(typ)%len(packets)]
		b, kind := p.b, p.kind
		if wrongKind {
			kind = event.Send + event.Cast - kind
		} else {
			// a strict prefix: of the header, or of the whole control body
			n := p.min
			if n < 0 {
				n = len(b)
			}
			b = b[:int(cut)%n]
		}
		c := layertest.New(t, sim.Config{Seed: 1}, 2, layertest.Registered(map[string]map[string]string{"reliable": nil}, "reliable"))
		c.Lax = true
		c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}})
		before := c.Counter("reliable", "malformed", 1)
		c.Stacks[1].Inject(0, true, event.Event{Kind: kind, Group: 1, Peer: 2, Msg: event.DefaultPool.FromBytes(b)})
		c.Net.Run(100 * time.Millisecond)
		if got := c.Counter("reliable", "malformed", 1) - before; got != 1 {
			t.Fatalf("%v packet %x: malformed counted %d times, want 1", kind, b, got)
		}
	})
}
