package vsync

import (
	"errors"
	"reflect"
	"testing"
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
			if len(r.Entries) > maxEntries || r.Old >= r.Target {
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
	return reflect.DeepEqual(a, b)
}
