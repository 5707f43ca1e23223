package layertest

import (
	"testing"

	"github.com/layercast/layercast/event"
)

// Cut is a valid packet a layer's FuzzTruncatedCounted cuts short: the kind
// it travels as, and the length below which it is malformed (Min; -1: any
// strict prefix of B is).
type Cut struct {
	B    []byte
	Kind event.Kind
	Min  int
}

// PickCut is the packet a fuzz input's typ names: cuts[typ % len(cuts)].
func PickCut(cuts []Cut, typ byte) Cut { return cuts[int(typ)%len(cuts)] }

// Input is what a truncation fuzz target injects for one input: the prefix
// of B that cut picks (cut % Min bytes, or cut % len(B) when Min < 0) as
// its own kind, or with wrongKind the whole packet as the other kind (a
// Cast as a Send, a Send as a Cast), which the layer must refuse as well.
func (c Cut) Input(cut uint16, wrongKind bool) ([]byte, event.Kind) {
	if wrongKind {
		return c.B, event.Send + event.Cast - c.Kind
	}
	n := c.Min
	if n < 0 {
		n = len(c.B)
	}
	return c.B[:int(cut)%n], c.Kind
}

// SeedCuts gives f, for every one of n packets, the empty prefix and the
// prefix of cut bytes, and with wrongKind also the whole packet sent as
// the wrong kind: inputs (typ, cut) or, with wrongKind, (typ, cut, wrong).
func SeedCuts(f *testing.F, n int, cut uint16, wrongKind bool) {
	for typ := range byte(n) {
		if !wrongKind {
			f.Add(typ, uint16(0))
			f.Add(typ, cut)
			continue
		}
		f.Add(typ, uint16(0), false)
		f.Add(typ, cut, false)
		f.Add(typ, uint16(0), true)
	}
}

// CountedOnce fails t unless a layer counted packet b (a cut of a packet of
// whole bytes, sent as kind) as malformed exactly once: counted is how far
// its malformed counter moved.
func CountedOnce(t testing.TB, counted int64, kind event.Kind, b []byte, whole int) {
	t.Helper()
	if counted != 1 {
		t.Fatalf("%v packet %x (%d bytes of %d): malformed counted %d times, want 1", kind, b, len(b), whole, counted)
	}
}
