package frag

import (
	"bytes"
	"testing"

	"github.com/layercast/layercast/internal/alloctest"
	"github.com/layercast/layercast/internal/wiretest"
)

// FuzzHeader decodes arbitrary bytes as a fragment header: it decodes only
// from all HeaderLen bytes (every prefix is refused with ErrMalformed) and
// encodes back to them. Then the rest of the input is that fragment's
// body, given to a fresh Reassembly that accepts messages of any length:
// what it allocates follows the body's bytes, never the total length the
// header claims (up to 2 GB). Seeds: testdata/fuzz/FuzzHeader.
func FuzzHeader(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		h, ok := wiretest.Header(t, "ParseHeader", b, HeaderLen, ParseHeader, putHeader, ErrMalformed)
		if !ok {
			return
		}
		body := b[HeaderLen:]
		var msg []byte
		var done bool
		var err error
		// The least of three: the bound is tight enough for the fuzz
		// worker's own allocations to cross it now and then.
		n := alloctest.MinBytes(3, func() {
			var r Reassembly
			msg, done, err = r.Add(h, body, 1<<31)
		})
		if bound := 1024 + 2*uint64(len(body)); n > bound {
			t.Fatalf("a %d-byte fragment of a %d-byte message allocated %d bytes, bound %d", len(body), h.Total, n, bound)
		}
		if done != (err == nil && h.First && h.Last) || (done && !bytes.Equal(msg, body)) {
			t.Fatalf("Add(%+v, %d bytes) = %d bytes, %v, %v", h, len(body), len(msg), done, err)
		}
	})
}
