// Package wiretest holds the checks the layers' wire fuzz targets make of
// their codecs on arbitrary bytes, written once: a fixed header decodes
// only from all its bytes and encodes back to them; a body decodes within
// the allocation bound or is refused as malformed, and an accepted one
// encodes, decodes and encodes again to the same bytes.
package wiretest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/layercast/layercast/internal/alloctest"
)

// Header checks a fixed header of size bytes on arbitrary bytes b, and
// returns what parse read and whether it accepted b: when it does, put
// encodes the header back to b's first size bytes and parse refuses every
// shorter prefix as malformed; when it refuses b, its error wraps
// malformed. name is the parser's, for the messages.
func Header[H any](t testing.TB, name string, b []byte, size int, parse func([]byte) (H, error), put func([]byte, H), malformed error) (H, bool) {
	t.Helper()
	h, err := parse(b)
	if err != nil {
		if !errors.Is(err, malformed) {
			t.Fatalf("%s: %v does not wrap %v", name, err, malformed)
		}
		return h, false
	}
	out := make([]byte, size)
	put(out, h)
	if !bytes.Equal(out, b[:size]) {
		t.Fatalf("%s(%x) = %+v, which encodes as %x", name, b[:size], h, out)
	}
	for k := range size {
		if _, err := parse(b[:k]); !errors.Is(err, malformed) {
			t.Fatalf("%s of a %d-byte prefix of %x: %v, want %v", name, k, b[:size], err, malformed)
		}
	}
	return h, true
}

// Decoded runs decode (which decodes b) and says whether it accepted b. It
// fails t if decoding allocated more than alloctest.DecodeBound(len(b)),
// whatever lengths the bytes claim, or if it refused b with an error that
// does not wrap malformed. what names the message, for the messages.
func Decoded(t testing.TB, what string, b []byte, decode func() error, malformed error) bool {
	t.Helper()
	var err error
	if n := alloctest.Bytes(func() { err = decode() }); n > alloctest.DecodeBound(len(b)) {
		t.Fatalf("decoding a %d-byte %s allocated %d bytes, bound %d", len(b), what, n, alloctest.DecodeBound(len(b)))
	}
	if err != nil && !errors.Is(err, malformed) {
		t.Fatalf("%s: %v does not wrap %v", what, err, malformed)
	}
	return err == nil
}

// ReEncodes checks an accepted message m: its encoding decodes again
// (decode may check the result as the receiver does) and encodes to the
// same bytes. encode's result may be a buffer it reuses.
func ReEncodes[T any](t testing.TB, what string, m *T, encode func(*T) []byte, decode func([]byte, *T) error) {
	t.Helper()
	enc := bytes.Clone(encode(m))
	var back T
	if err := decode(enc, &back); err != nil {
		t.Fatalf("re-decoding %s %+v: %v", what, *m, err)
	}
	if again := encode(&back); !bytes.Equal(again, enc) {
		t.Fatalf("%s %+v encodes as %x, then as %x", what, *m, enc, again)
	}
}
