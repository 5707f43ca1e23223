package tokenring

import (
	"bytes"
	"errors"
	"testing"

	"github.com/layercast/layercast/internal/alloctest"
)

// FuzzWire decodes arbitrary bytes as each of tokenring's packets: the
// fixed headers (data, ACK, point-to-point) decode only from all their
// bytes and encode back to them; a token or a range list (pull, collective
// NAK) is refused with errMalformed, or passes check and then re-encodes
// to the same bytes and passes check again. Decoding a token allocates
// within allocBound however many records or ranges it claims. Seeds:
// testdata/fuzz/FuzzWire.
func FuzzWire(f *testing.F) {
	wc := newWireCodec()
	cfg := DefaultConfig()
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
		if a, err := parseAck(b); err == nil {
			out := make([]byte, ackSize)
			putAck(out, a)
			if !bytes.Equal(out, b) {
				t.Fatalf("parseAck(%x) = %+v, which encodes as %x", b, a, out)
			}
		}
		if h, err := parseP2P(b); err == nil {
			out := make([]byte, p2pHeaderSize)
			putP2P(out, h)
			if !bytes.Equal(out, b[:p2pHeaderSize]) {
				t.Fatalf("parseP2P(%x) = %+v, which encodes as %x", b[:p2pHeaderSize], h, out)
			}
			if _, err := parseP2P(b[:p2pHeaderSize-1]); err == nil {
				t.Fatalf("parseP2P accepted %d bytes", p2pHeaderSize-1)
			}
		}

		var tk tokenMsg
		var err error
		if n := alloctest.Bytes(func() { err = wc.Decode(b, &tk) }); n > alloctest.DecodeBound(len(b)) {
			t.Fatalf("decoding a %d-byte token allocated %d bytes, bound %d", len(b), n, alloctest.DecodeBound(len(b)))
		}
		if err == nil {
			err = tk.check(cfg.MaxSenders, cfg.MaxRanges, maxParts)
		}
		if err != nil && !errors.Is(err, errMalformed) {
			t.Fatalf("token: %v does not wrap errMalformed", err)
		}
		if err == nil {
			enc := bytes.Clone(wc.Encode(&tk))
			var back tokenMsg
			if err := wc.Decode(enc, &back); err != nil || back.check(cfg.MaxSenders, cfg.MaxRanges, maxParts) != nil {
				t.Fatalf("re-decoding token %+v: %v", tk, err)
			}
			if again := wc.Encode(&back); !bytes.Equal(again, enc) {
				t.Fatalf("token %+v encodes as %x, then as %x", tk, enc, again)
			}
		}

		var rm rangeMsg
		if err := wc.Decode(b, &rm); err == nil {
			if err := rm.check(cfg.MaxRanges); err == nil {
				enc := bytes.Clone(wc.Encode(&rm))
				var back rangeMsg
				if err := wc.Decode(enc, &back); err != nil || back.check(cfg.MaxRanges) != nil {
					t.Fatalf("re-decoding ranges %+v: %v", rm, err)
				}
				if again := wc.Encode(&back); !bytes.Equal(again, enc) {
					t.Fatalf("ranges %+v encode as %x, then as %x", rm, enc, again)
				}
			} else if !errors.Is(err, errMalformed) {
				t.Fatalf("ranges check: %v does not wrap errMalformed", err)
			}
		} else if !errors.Is(err, errMalformed) {
			t.Fatalf("ranges: %v does not wrap errMalformed", err)
		}
	})
}
