package reliable

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

// encDigest is a whole digest packet (type byte and body).
func encDigest(d *digestMsg) []byte {
	b := appendDigest([]byte{tDigest}, d)
	if len(b) != 1+digestSize(d) {
		panic("digestSize disagrees with appendDigest")
	}
	return b
}

func TestDigestRoundTrip(t *testing.T) {
	for _, d := range []digestMsg{
		{G: 1, V: 7, E: []uint32{2, 5, 0}},
		{G: 1 << 31, V: 1<<32 - 1, U: true, H: true, E: []uint32{9, 1, 2, 3, 4, 5, 6, 7, 8}},
		{G: 3, V: 2, H: true, E: nil},
	} {
		b := encDigest(&d)
		var got digestMsg
		got.E = make([]uint32, 0, 1)
		if err := parseDigest(b[1:], &got); err != nil {
			t.Fatalf("%+v: %v", d, err)
		}
		if got.G != d.G || got.V != d.V || got.U != d.U || got.H != d.H || !slices.Equal(got.E, d.E) {
			t.Errorf("decoded %+v, want %+v", got, d)
		}
	}
}

func TestDigestRejectsBadBodies(t *testing.T) {
	good := encDigest(&digestMsg{G: 1, V: 1, U: true, E: []uint32{2, 5, 0, 1, 3, 1}})[1:]
	flags := bytes.Clone(good)
	flags[2] |= 0x80
	for name, b := range map[string][]byte{
		"empty":           nil,
		"no flags":        good[:2],
		"truncated entry": good[:len(good)-1],
		"trailing byte":   append(bytes.Clone(good), 0),
		"unknown flag":    flags,
		"long varint":     {0x81, 0x00, 1, 0, 0},
		"over 32 bits":    {0x80, 0x80, 0x80, 0x80, 0x10, 1, 0, 0},
		"count too large": {1, 1, 0, 5, 1, 1, 1},
	} {
		var d digestMsg
		if err := parseDigest(b, &d); !errors.Is(err, errMalformed) {
			t.Errorf("%s: got %v, want errMalformed", name, err)
		}
	}
}

// FuzzDigest: any body either fails to parse with errMalformed or parses to
// a digest that encodes back to exactly the same bytes (one encoding per
// digest: nothing the decoder accepts is ambiguous or ignored).
func FuzzDigest(f *testing.F) {
	f.Add(encDigest(&digestMsg{G: 1, V: 1, U: true, E: []uint32{2, 5, 0, 1, 3, 1}})[1:])
	f.Add(encDigest(&digestMsg{G: 9, V: 3, H: true})[1:])
	f.Add([]byte{1, 1, 3, 0xff, 0xff, 0x03, 1, 2, 3})
	f.Add(encDigest(&digestMsg{G: 1 << 31, V: 1<<32 - 1, E: []uint32{1<<32 - 1, 1 << 31, 128}})[1:])
	f.Fuzz(func(t *testing.T, b []byte) {
		var d digestMsg
		if err := parseDigest(b, &d); err != nil {
			if !errors.Is(err, errMalformed) {
				t.Fatalf("error %v does not wrap errMalformed", err)
			}
			return
		}
		if len(d.E)%3 != 0 {
			t.Fatalf("%d values: not whole entries", len(d.E))
		}
		if again := encDigest(&d)[1:]; !bytes.Equal(again, b) {
			t.Fatalf("re-encoded %x, was %x", again, b)
		}
	})
}
