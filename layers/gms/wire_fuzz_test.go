package gms

import (
	"bytes"
	"errors"
	"testing"

	"github.com/layercast/layercast/internal/alloctest"
)

// FuzzWireRoundTrip decodes arbitrary bytes as a membership packet (what
// both the layer and the service receive): refused with ErrMalformed, or
// accepted, and then it encodes, decodes and passes check again, encoding
// to the same bytes the second time. Decoding allocates within allocBound
// however many views, members or groups the packet claims. Seeds:
// testdata/fuzz/FuzzWireRoundTrip (one packet of each kind of content).
func FuzzWireRoundTrip(f *testing.F) {
	c := newCodec()
	f.Fuzz(func(t *testing.T, b []byte) {
		var m wireMsg
		var err error
		if n := alloctest.Bytes(func() { err = c.decode(b, &m) }); n > alloctest.DecodeBound(len(b)) {
			t.Fatalf("decoding a %d-byte packet allocated %d bytes, bound %d", len(b), n, alloctest.DecodeBound(len(b)))
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("decode: %v does not wrap ErrMalformed", err)
			}
			return
		}
		enc := bytes.Clone(c.encode(&m))
		var back wireMsg
		if err := c.decode(enc, &back); err != nil {
			t.Fatalf("re-decoding %+v: %v", m, err)
		}
		if again := c.encode(&back); !bytes.Equal(again, enc) {
			t.Fatalf("%+v encodes as %x, then as %x", m, enc, again)
		}
	})
}
