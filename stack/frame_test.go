package stack

import (
	"bytes"
	"errors"
	"testing"

	"github.com/layercast/layercast/event"
)

// FuzzParseFrame: any bytes parse to a frame or to an error wrapping
// ErrFrame, never a panic; a parsed frame is a packet kind from a real
// node, and writing it back with PutFrame gives the same header (up to
// flag bits PutFrame does not write).
func FuzzParseFrame(f *testing.F) {
	for _, fr := range []Frame{
		{Kind: event.Cast, Group: 1, Src: 2},
		{Kind: event.Send, Control: true, Group: 0, Src: 7},
		{Kind: event.Membership, Group: 0xffffffff, Src: 0xffffffff},
	} {
		b := make([]byte, FrameSize+3)
		PutFrame(b, fr)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add(make([]byte, FrameSize))
	f.Add([]byte{0x1f, byte(event.Cast), 0, 0, 0, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, pkt []byte) {
		fr, err := ParseFrame(pkt)
		if err != nil {
			if !errors.Is(err, ErrFrame) {
				t.Fatalf("error %v does not wrap ErrFrame", err)
			}
			return
		}
		if fr.Src == event.NoNode || (fr.Kind != event.Cast && fr.Kind != event.Send && fr.Kind != event.Membership) {
			t.Fatalf("accepted %+v", fr)
		}
		out := make([]byte, FrameSize)
		PutFrame(out, fr)
		want := bytes.Clone(pkt[:FrameSize])
		want[0] &= 0xf0 | flagControl
		if !bytes.Equal(out, want) {
			t.Fatalf("round trip: %x -> %+v -> %x", want, fr, out)
		}
		again, err := ParseFrame(out)
		if err != nil || again != fr {
			t.Fatalf("re-parse: %+v, %v; want %+v", again, err, fr)
		}
	})
}

// TestFrameRoundTrip: every packet kind, with and without the control
// flag, at the extremes of group and node ids, parses back to itself.
func TestFrameRoundTrip(t *testing.T) {
	for _, k := range []event.Kind{event.Cast, event.Send, event.Membership} {
		for _, ctl := range []bool{false, true} {
			for _, id := range []uint32{1, 0x7fffffff, 0xffffffff} {
				fr := Frame{Kind: k, Control: ctl || k == event.Membership, Group: event.GroupID(id - 1), Src: event.NodeID(id)}
				b := make([]byte, FrameSize)
				PutFrame(b, fr)
				got, err := ParseFrame(b)
				if err != nil || got != fr {
					t.Errorf("%+v: parsed %+v, %v", fr, got, err)
				}
			}
		}
	}
	for _, bad := range [][]byte{nil, make([]byte, FrameSize-1), {0x20, byte(event.Cast), 0, 0, 0, 1, 0, 0, 0, 1}, {0x10, byte(event.View), 0, 0, 0, 1, 0, 0, 0, 1}, {0x10, byte(event.Cast), 0, 0, 0, 1, 0, 0, 0, 0}} {
		if _, err := ParseFrame(bad); !errors.Is(err, ErrFrame) {
			t.Errorf("%x: error %v, want ErrFrame", bad, err)
		}
	}
}
