package wirecodec

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/layercast/layercast/internal/alloctest"
	"github.com/layercast/layercast/internal/wiretest"
)

// wide has a field of every container kind the layers' wire types use.
type wide struct {
	G uint32            `codec:"g"`
	R []uint32          `codec:"r"`
	N [][]uint32        `codec:"n"`
	E []wideEntry       `codec:"e"`
	P []*wideEntry      `codec:"p"`
	M map[uint32]uint32 `codec:"m"`
	S string            `codec:"s"`
	B []byte            `codec:"b"`
}

type wideEntry struct {
	A uint32   `codec:"a"`
	L []uint64 `codec:"l"`
}

// claim is a body whose field key claims a container of 2^32-1 elements
// (or bytes) with marker, then ends.
func claim(key string, marker byte) []byte {
	b := []byte{0x81, 0xa0 | byte(len(key))}
	b = append(b, key...)
	return append(b, marker, 0xff, 0xff, 0xff, 0xff, 1, 2, 3)
}

func TestClaimedLengthsAllocateLittle(t *testing.T) {
	c := New(Options{Malformed: errBad, MaxInitLen: 4096, WriteExt: true})
	cases := map[string][]byte{
		"array32 of uint32":      claim("r", 0xdd),
		"array32 of arrays":      claim("n", 0xdd),
		"array32 of structs":     claim("e", 0xdd),
		"array32 of pointers":    claim("p", 0xdd),
		"map32":                  claim("m", 0xdf),
		"str32":                  claim("s", 0xdb),
		"bin32":                  claim("b", 0xc6),
		"top-level map32":        {0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 'g', 1},
		"nested array32 in item": {0x81, 0xa1, 'e', 0x92, 0x81, 0xa1, 'l', 0xdd, 0xff, 0xff, 0xff, 0xff, 1},
		"inner array32":          {0x81, 0xa1, 'n', 0x91, 0xdd, 0xff, 0xff, 0xff, 0xff, 1},
	}
	for name, b := range cases {
		var w wide
		var err error
		n := alloctest.Bytes(func() { err = c.Decode(b, &w) })
		if !errors.Is(err, errBad) {
			t.Errorf("%s: Decode(% x) = %v, want an error wrapping errBad", name, b, err)
		}
		if n > alloctest.DecodeBound(len(b)) {
			t.Errorf("%s: decoding %d bytes allocated %d bytes, bound %d", name, len(b), n, alloctest.DecodeBound(len(b)))
		}
	}
}

// FuzzDecodeAllocs decodes into a type with every container kind: a body
// is accepted and then round-trips, or is refused with the Malformed error;
// either way the decoder allocates no more than allocBound, whatever
// lengths the body claims.
func FuzzDecodeAllocs(f *testing.F) {
	c := New(Options{Malformed: errBad, MaxInitLen: 4096, WriteExt: true})
	enc := func(w *wide) []byte { return bytes.Clone(c.Encode(w)) }
	f.Add(enc(&wide{G: 1, R: []uint32{1, 2}, N: [][]uint32{{3}, {}}, E: []wideEntry{{A: 1, L: []uint64{1 << 40}}},
		P: []*wideEntry{{A: 2}}, M: map[uint32]uint32{1: 2}, S: "s", B: []byte{0, 1}}))
	f.Add(enc(&wide{}))
	f.Add(claim("r", 0xdd))
	f.Add(claim("b", 0xc6))
	f.Fuzz(func(t *testing.T, b []byte) {
		var w wide
		if !wiretest.Decoded(t, "body", b, func() error { return c.Decode(b, &w) }, errBad) {
			return
		}
		var w2 wide
		if err := c.Decode(bytes.Clone(c.Encode(&w)), &w2); err != nil || !reflect.DeepEqual(norm(w), norm(w2)) {
			t.Fatalf("re-decoding %+v: %+v, %v", w, w2, err)
		}
	})
}

// norm maps empty containers to nil (the encoding does not tell them apart).
func norm(w wide) wide {
	if len(w.R) == 0 {
		w.R = nil
	}
	if len(w.N) == 0 {
		w.N = nil
	}
	for i := range w.N {
		if len(w.N[i]) == 0 {
			w.N[i] = nil
		}
	}
	if len(w.E) == 0 {
		w.E = nil
	}
	for i := range w.E {
		if len(w.E[i].L) == 0 {
			w.E[i].L = nil
		}
	}
	if len(w.P) == 0 {
		w.P = nil
	}
	for i := range w.P {
		if w.P[i] != nil && len(w.P[i].L) == 0 {
			w.P[i].L = nil
		}
	}
	if len(w.M) == 0 {
		w.M = nil
	}
	if len(w.B) == 0 {
		w.B = nil
	}
	return w
}
