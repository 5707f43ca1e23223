package tokenring

import (
	"bytes"
	"testing"

	"github.com/layercast/layercast/internal/wiretest"
)

// FuzzWire decodes arbitrary bytes as each of tokenring's packets: the
// fixed headers (data, ACK, point-to-point) decode only from all their
// bytes and encode back to them; a token, a range list (pull, collective
// NAK) or a floor query or answer is refused with errMalformed, or passes check and then re-encodes
// to the same bytes and passes check again. Decoding a token allocates
// within allocBound however many records or ranges it claims. Seeds:
// testdata/fuzz/FuzzWire.
func FuzzWire(f *testing.F) {
	wc := newWireCodec()
	cfg := DefaultConfig()
	// the receiver's decoding: the codec, then check
	token := func(b []byte, tk *tokenMsg) error {
		*tk = tokenMsg{}
		if err := wc.Decode(b, tk); err != nil {
			return err
		}
		return tk.check(cfg.MaxSenders, cfg.MaxRanges, maxParts)
	}
	ranges := func(b []byte, rm *rangeMsg) error {
		*rm = rangeMsg{}
		if err := wc.Decode(b, rm); err != nil {
			return err
		}
		return rm.check(cfg.MaxRanges)
	}
	floor := func(b []byte, fm *floorMsg) error {
		*fm = floorMsg{}
		if err := wc.Decode(b, fm); err != nil {
			return err
		}
		return fm.check()
	}
	encFloor := func(fm *floorMsg) []byte { return wc.Encode(fm) }
	encToken := func(tk *tokenMsg) []byte { return wc.Encode(tk) }
	encRanges := func(rm *rangeMsg) []byte { return wc.Encode(rm) }
	f.Fuzz(func(t *testing.T, b []byte) {
		wiretest.Header(t, "parseData", b, dataHeaderSize, parseData, putData, errMalformed)
		if a, err := parseAck(b); err == nil {
			out := make([]byte, ackSize)
			putAck(out, a)
			if !bytes.Equal(out, b) {
				t.Fatalf("parseAck(%x) = %+v, which encodes as %x", b, a, out)
			}
		}
		wiretest.Header(t, "parseP2P", b, p2pHeaderSize, parseP2P, putP2P, errMalformed)

		var tk tokenMsg
		if wiretest.Decoded(t, "token", b, func() error { return token(b, &tk) }, errMalformed) {
			wiretest.ReEncodes(t, "token", &tk, encToken, token)
		}
		var rm rangeMsg
		if wiretest.Decoded(t, "ranges", b, func() error { return ranges(b, &rm) }, errMalformed) {
			wiretest.ReEncodes(t, "ranges", &rm, encRanges, ranges)
		}
		var fm floorMsg
		if wiretest.Decoded(t, "floor", b, func() error { return floor(b, &fm) }, errMalformed) {
			wiretest.ReEncodes(t, "floor", &fm, encFloor, floor)
		}
	})
}
