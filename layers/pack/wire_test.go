package pack

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzUnpack: any body either unpacks into entries that, packed again,
// give back exactly the bytes read, or fails with ErrMalformed after the
// entries before the bad one; it never panics nor reads past the body.
func FuzzUnpack(f *testing.F) {
	f.Add([]byte{0, 3, 'a', 'b', 'c', 0, 0})
	f.Add([]byte{0, 5, 'a'})
	f.Add([]byte{0})
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		var again []byte
		n := 0
		err := Unpack(b, func(msg []byte) {
			e := make([]byte, entryHead+len(msg))
			putEntry(e, msg)
			again = append(again, e...)
			n++
		})
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("Unpack error %v does not wrap ErrMalformed", err)
		}
		if !bytes.Equal(again, b[:len(again)]) {
			t.Fatalf("entries packed again = %x, want the body's first %d bytes %x", again, len(again), b[:len(again)])
		}
		if err == nil && len(again) != len(b) {
			t.Fatalf("Unpack accepted %d bytes of %d", len(again), len(b))
		}
		if err == nil && n == 0 {
			t.Fatal("Unpack accepted a pack without entries")
		}
	})
}
