package ring

import (
	"errors"
	"testing"

	"github.com/layercast/layercast/internal/alloctest"
)

// TestTokenClaimsAllocateLittle: a token whose lists claim 2^32-1 entries
// (and carry one) is refused as malformed, and decoding it allocates at
// most 4 MB: the codec allocates MaxInitLen entries ahead of the data at
// most, never what the sender claims.
func TestTokenClaimsAllocateLittle(t *testing.T) {
	huge := []byte{0xdd, 0xff, 0xff, 0xff, 0xff, 1}
	field := func(key string, rest ...byte) []byte {
		b := append([]byte{0x81, 0xa0 | byte(len(key))}, key...)
		return append(b, rest...)
	}
	cases := map[string][]byte{
		"rtr":           field("rtr", huge...),
		"age":           field("a", huge...),
		"lost":          field("x", huge...),
		"old rings":     field("o", huge...),
		"old ring rtr":  field("o", append([]byte{0x91, 0x81, 0xa1, 'q'}, huge...)...),
		"old ring lost": field("o", append([]byte{0x91, 0x81, 0xa1, 'l'}, huge...)...),
	}
	wc := newWireCodec()
	for name, b := range cases {
		var tk token
		var err error
		n := alloctest.Bytes(func() { err = decodeToken(wc, b, &tk, 256) })
		if !errors.Is(err, errMalformed) {
			t.Errorf("%s: decodeToken(% x) = %v, want errMalformed", name, b, err)
		}
		if bound := uint64(4 << 20); n > bound {
			t.Errorf("%s: decoding %d bytes allocated %d bytes, bound %d", name, len(b), n, bound)
		}
	}
}
