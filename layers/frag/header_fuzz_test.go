package frag

import (
	"bytes"
	"errors"
	"testing"

	"github.com/layercast/layercast/internal/alloctest"
)

// FuzzHeader decodes arbitrary bytes as a fragment header: it decodes only
// from all HeaderLen bytes (every prefix is refused with ErrMalformed) and
// encodes back to them. Then the rest of the input is that fragment's
// body, given to a fresh Reassembly that accepts messages of any length:
// what it allocates follows the body's bytes, never the total length the
// header claims (up to 2 GB). Seeds: testdata/fuzz/FuzzHeader.
func FuzzHeader(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseHeader: %v does not wrap ErrMalformed", err)
			}
			return
		}
		out := make([]byte, HeaderLen)
		putHeader(out, h)
		if !bytes.Equal(out, b[:HeaderLen]) {
			t.Fatalf("ParseHeader(%x) = %+v, which encodes as %x", b[:HeaderLen], h, out)
		}
		for k := range HeaderLen {
			if _, err := ParseHeader(b[:k]); !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseHeader of a %d-byte prefix: %v, want ErrMalformed", k, err)
			}
		}
		body := b[HeaderLen:]
		var r Reassembly
		var msg []byte
		var done bool
		n := alloctest.Bytes(func() { msg, done, err = r.Add(h, body, 1<<31) })
		if bound := 1024 + 2*uint64(len(body)); n > bound {
			t.Fatalf("a %d-byte fragment of a %d-byte message allocated %d bytes, bound %d", len(body), h.Total, n, bound)
		}
		if done != (err == nil && h.First && h.Last) || (done && !bytes.Equal(msg, body)) {
			t.Fatalf("Add(%+v, %d bytes) = %d bytes, %v, %v", h, len(body), len(msg), done, err)
		}
	})
}
