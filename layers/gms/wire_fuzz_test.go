package gms

import (
	"testing"

	"github.com/layercast/layercast/internal/wiretest"
)

// FuzzWireRoundTrip decodes arbitrary bytes as a membership packet (what
// both the layer and the service receive): refused with ErrMalformed, or
// accepted, and then it encodes, decodes and passes check again, encoding
// to the same bytes the second time. Decoding allocates within allocBound
// however many views, members or groups the packet claims. Seeds:
// testdata/fuzz/FuzzWireRoundTrip (one packet of each kind of content,
// and a cut report with its sites).
func FuzzWireRoundTrip(f *testing.F) {
	c := newCodec()
	f.Fuzz(func(t *testing.T, b []byte) {
		var m wireMsg
		if wiretest.Decoded(t, "packet", b, func() error { return c.decode(b, &m) }, ErrMalformed) {
			wiretest.ReEncodes(t, "packet", &m, c.encode, c.decode)
		}
	})
}
