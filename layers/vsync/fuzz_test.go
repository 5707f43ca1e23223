package vsync

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// FuzzDecode feeds arbitrary packets to every vsync decoder: each either
// decodes or returns one error wrapping errMalformed, never panics, and
// what decodes survives a round trip.
func FuzzDecode(f *testing.F) {
	wc := newCodec()
	var data [dataHeaderSize]byte
	putData(data[:], 3, 7)
	f.Add(data[:])
	var rs [resendHeaderSize]byte
	putResend(rs[:], 4, 3, 9)
	f.Add(rs[:])
	f.Add(append([]byte{tReport}, wc.Encode(&report{Old: 2, Target: 3, Entries: []entry{{1, 5}, {2, 0}}})...))
	f.Add(append([]byte{tReport}, wc.Encode(&report{Old: 2, Target: 3, Entries: []entry{{1, 5}, {2, 0}}, Gone: []uint32{2, 4}})...))
	f.Add(append([]byte{tReport}, wc.Encode(&report{Old: 2, Target: 3, Gone: []uint32{4, 2}})...))
	f.Add(append([]byte{tStable}, wc.Encode(&stable{View: 3, Entries: []entry{{1, 5}}})...))
	f.Add([]byte{tReport, 0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := readHeader(b)
		if err != nil && !errors.Is(err, errMalformed) {
			t.Fatalf("readHeader: %v does not wrap errMalformed", err)
		}
		if err == nil {
			if h.seq == 0 || n > len(b) {
				t.Fatalf("readHeader(%x) = %+v, %d", b, h, n)
			}
			var again [maxHeader]byte
			if b[0] == tData {
				putData(again[:], h.tag, h.seq)
			} else {
				putResend(again[:], h.from, h.tag, h.seq)
			}
			if h2, n2, err := readHeader(again[:n]); err != nil || h2 != h || n2 != n {
				t.Fatalf("round trip of %+v: %+v, %d, %v", h, h2, n2, err)
			}
		}
		if len(b) == 0 {
			return
		}
		if r, err := decodeReport(wc, b[1:]); err != nil {
			if !errors.Is(err, errMalformed) {
				t.Fatalf("decodeReport: %v does not wrap errMalformed", err)
			}
		} else {
			if len(r.Entries) > maxEntries || r.Old >= r.Target || !slices.IsSorted(r.Gone) || slices.Contains(r.Gone, 0) {
				t.Fatalf("decodeReport accepted %+v", r)
			}
			body := append([]byte(nil), wc.Encode(&r)...)
			if r2, err := decodeReport(wc, body); err != nil || !sameReport(r, r2) {
				t.Fatalf("report round trip: %+v, %+v, %v", r, r2, err)
			}
		}
		if s, err := decodeStable(wc, b[1:]); err != nil {
			if !errors.Is(err, errMalformed) {
				t.Fatalf("decodeStable: %v does not wrap errMalformed", err)
			}
		} else if len(s.Entries) > maxEntries || s.View == 0 {
			t.Fatalf("decodeStable accepted %+v", s)
		}
	})
}

func sameReport(a, b report) bool {
	if len(a.Entries) == 0 && len(b.Entries) == 0 {
		a.Entries, b.Entries = nil, nil
	}
	if len(a.Gone) == 0 && len(b.Gone) == 0 {
		a.Gone, b.Gone = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

// seedPackets are one valid packet of each of vsync's types, as a member
// sends them: a data header, a resend header (each with 8 bytes of
// payload), a flush report, a stability gossip and a passed control cast.
func seedPackets() (data, resend, rep, stab, pass []byte) {
	wc := newCodec()
	data = make([]byte, dataHeaderSize+8)
	putData(data, 1, 1)
	resend = make([]byte, resendHeaderSize+8)
	putResend(resend, 3, 1, 2)
	rep = append([]byte{tReport}, wc.Encode(&report{Old: 1, Target: 2, Entries: []entry{{1, 5}, {3, 9}}})...)
	stab = append([]byte{tStable}, wc.Encode(&stable{View: 1, Entries: []entry{{1, 5}}})...)
	return data, resend, rep, stab, []byte{tPass, 1, 2}
}

// fuzzNode is node 1 running vsync alone (64 KiB of max_bytes), its clock
// stopped at 0, with view 1 of group 1 ({n1, n2, n3}, all joined)
// installed. The stack is closed when the test ends.
func fuzzNode(t *testing.T) (*Layer, *stack.Stack) {
	l := New(Config{MaxBytes: 64 << 10, StableInterval: 200 * time.Millisecond, FlushTimeout: time.Second})
	st, err := stack.New(stack.Config{Self: 1, Layers: []stack.Entry{{Name: "vsync", Layer: l}},
		Transport: &testkit.Transport{}, Clock: stack.ClockFunc(func() event.Time { return 0 })})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	st.InstallView(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3}, Joined: []event.NodeID{1, 2, 3}})
	return l, st
}

// FuzzUp injects arbitrary packets into a member's vsync layer, as casts
// from another member, interleaved with a view change: the layer drops what
// it cannot read (counted malformed), never panics, and holds within
// max_bytes.
func FuzzUp(f *testing.F) {
	wc := newCodec()
	data, resend, rep, stab, pass := seedPackets()
	f.Add(data, byte(0))
	f.Add(resend, byte(1))
	f.Add(rep, byte(2))
	f.Add(append([]byte{tReport}, wc.Encode(&report{Old: 1, Target: 2, Entries: []entry{{1, 5}, {3, 9}}, Gone: []uint32{3}})...), byte(2))
	f.Add(stab, byte(3))
	f.Add(pass, byte(4))
	f.Fuzz(func(t *testing.T, b []byte, when byte) {
		l, st := fuzzNode(t)
		v2 := &event.ViewInfo{Group: 1, ID: 2, Members: []event.NodeID{1, 2}, Left: []event.NodeID{3}}
		for i := 0; i < 3; i++ {
			if int(when%3) == i {
				st.InstallView(v2)
			}
			m := event.DefaultPool.FromBytes(b)
			st.Inject(0, true, event.Event{Kind: event.Cast, Group: 1, Peer: event.NodeID(2 + i%2), Control: when&4 != 0, Msg: m})
		}
		if l.held < 0 || l.held > 4*(64<<10)+4*event.HeldCost(len(b)) {
			t.Fatalf("holds %d bytes", l.held)
		}
	})
}
