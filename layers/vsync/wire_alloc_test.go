package vsync

import (
	"errors"
	"testing"

	"github.com/layercast/layercast/internal/alloctest"
)

// TestClaimedEntriesAllocateLittle: a report or a stability gossip whose
// entry list claims 2^32-1 entries (and carries one) is refused as
// malformed, and decoding it allocates at most 4 MB (maxEntries entries
// ahead of the data at most), never what the sender claims.
func TestClaimedEntriesAllocateLittle(t *testing.T) {
	b := []byte{0x81, 0xa1, 'e', 0xdd, 0xff, 0xff, 0xff, 0xff, 0x82, 0xa1, 'n', 1, 0xa1, 'h', 1}
	wc := newCodec()
	for name, decode := range map[string]func() error{
		"report": func() error { _, err := decodeReport(wc, b); return err },
		"stable": func() error { _, err := decodeStable(wc, b); return err },
	} {
		var err error
		n := alloctest.Bytes(func() { err = decode() })
		if !errors.Is(err, errMalformed) {
			t.Errorf("%s of % x: %v, want errMalformed", name, b, err)
		}
		if bound := uint64(4 << 20); n > bound {
			t.Errorf("%s: decoding %d bytes allocated %d bytes, bound %d", name, len(b), n, bound)
		}
	}
}
