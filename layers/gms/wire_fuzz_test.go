package gms

import (
	"bytes"
	"errors"
	"runtime"
	"testing"
)

// allocated is how many bytes fn allocates (the process's total: run it
// where nothing else runs, a test or a fuzz worker).
func allocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// allocBound is what decoding n bytes may allocate whatever lengths they
// claim: the codec allocates at most MaxInitLen elements ahead of the data.
func allocBound(n int) uint64 { return 4<<20 + 64*uint64(n) }

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
		if n := allocated(func() { err = c.decode(b, &m) }); n > allocBound(len(b)) {
			t.Fatalf("decoding a %d-byte packet allocated %d bytes, bound %d", len(b), n, allocBound(len(b)))
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
