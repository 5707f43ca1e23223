package wirecodec

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

type msg struct {
	G uint32   `codec:"g"`
	R []uint32 `codec:"r"`
	S string   `codec:"s"`
}

var errBad = errors.New("test: bad")

func TestRoundTripReusesBuffer(t *testing.T) {
	c := New(Options{Name: "test", Malformed: errBad})
	in := msg{G: 7, R: []uint32{1, 2, 1 << 20}, S: "x"}
	b := c.Encode(&in)
	var out msg
	if err := c.Decode(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.G != in.G || !slices.Equal(out.R, in.R) || out.S != in.S {
		t.Fatalf("decoded %+v, want %+v", out, in)
	}
	b2 := c.Encode(&msg{G: 8})
	if &b[:1][0] != &b2[:1][0] {
		t.Fatal("second Encode did not reuse the buffer")
	}
	allocs := testing.AllocsPerRun(100, func() { c.Encode(&in) })
	if allocs != 0 {
		t.Fatalf("Encode allocates %v times per call", allocs)
	}
}

func TestDecodeErrorsWrapMalformed(t *testing.T) {
	c := New(Options{Malformed: errBad})
	for _, b := range [][]byte{nil, {0xdc, 0xff, 0xff}, {0x81, 0xa1, 'r', 0xdd, 0x7f, 0xff, 0xff, 0xff}, {0xc1}} {
		var m msg
		if err := c.Decode(b, &m); !errors.Is(err, errBad) {
			t.Errorf("Decode(% x) = %v, want an error wrapping errBad", b, err)
		}
	}
	var m msg
	if err := New(Options{}).Decode([]byte{0xc1}, &m); !errors.Is(err, ErrMalformed) {
		t.Errorf("default Malformed: got %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	c := New(Options{Malformed: errBad, MaxInitLen: 64})
	f.Add(c.Encode(&msg{G: 1, R: []uint32{1, 5}, S: "a"}))
	f.Add([]byte{0x81, 0xa1, 'r', 0xdd, 0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var m msg
		err := c.Decode(b, &m)
		if err != nil {
			if !errors.Is(err, errBad) {
				t.Fatalf("error %v does not wrap errBad", err)
			}
			return
		}
		// what decodes must encode and decode to the same value
		var m2 msg
		if err := c.Decode(slices.Clone(c.Encode(&m)), &m2); err != nil || m2.G != m.G || !slices.Equal(m2.R, m.R) || m2.S != m.S {
			t.Fatalf("re-decoding %+v: %+v, %v", m, m2, err)
		}
	})
}

// PutUint32s and Uint32s are inverse, big-endian, and allocate nothing.
func TestUint32sRoundTrip(t *testing.T) {
	b := make([]byte, 12)
	PutUint32s(b, 1, 0x01020304, 0xffffffff)
	if want := []byte{0, 0, 0, 1, 1, 2, 3, 4, 0xff, 0xff, 0xff, 0xff}; !bytes.Equal(b, want) {
		t.Fatalf("PutUint32s wrote %x, want %x", b, want)
	}
	var x, y, z uint32
	Uint32s(b, &x, &y, &z)
	if x != 1 || y != 0x01020304 || z != 0xffffffff {
		t.Fatalf("Uint32s read %x %x %x", x, y, z)
	}
	if n := testing.AllocsPerRun(100, func() {
		PutUint32s(b, x, y, z)
		Uint32s(b, &x, &y, &z)
	}); n != 0 {
		t.Errorf("%v allocations per round trip, want 0", n)
	}
}
