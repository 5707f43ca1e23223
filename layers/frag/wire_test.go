package frag

import (
	"errors"
	"testing"
)

// TestReassemblyRefuses: fragments that do not fit are refused and drop
// what was gathered; the next message reassembles.
func TestReassemblyRefuses(t *testing.T) {
	var r Reassembly
	for _, c := range []struct {
		name string
		h    Header
		body string
	}{
		{"middle without first", Header{Total: 4}, "ab"},
		{"longer than max", Header{First: true, Total: 11}, "ab"},
		{"longer than announced", Header{First: true, Last: true, Total: 1}, "ab"},
	} {
		if _, _, err := r.Add(c.h, []byte(c.body), 10); !errors.Is(err, ErrMalformed) || r.Open() {
			t.Errorf("%s: err %v open %v, want ErrMalformed and nothing held", c.name, err, r.Open())
		}
	}
	if _, _, err := r.Add(Header{First: true, Total: 4}, []byte("ab"), 10); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Add(Header{Last: true, Total: 4}, []byte("c"), 10); !errors.Is(err, ErrMalformed) {
		t.Errorf("a message ending short: %v, want ErrMalformed", err)
	}
	if _, _, err := r.Add(Header{First: true, Total: 3}, []byte("xy"), 10); err != nil {
		t.Fatal(err)
	}
	msg, done, err := r.Add(Header{Last: true, Total: 3}, []byte("z"), 10)
	if err != nil || !done || string(msg) != "xyz" {
		t.Errorf("reassembled %q %v %v, want xyz", msg, done, err)
	}
}

// FuzzReassembly feeds arbitrary fragment sequences (each: a header and a
// body length) to a reassembly: no panic, never more held than max, and
// every message it completes has the length its header announced.
func FuzzReassembly(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 9, 4, 2, 0, 0, 0, 9, 5})
	f.Add([]byte{3, 0, 0, 0, 3, 3})
	f.Add([]byte{2, 0, 0, 0, 1, 1, 0xff})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const max = 64
		var r Reassembly
		body := make([]byte, 256)
		for len(ops) >= HeaderLen+1 {
			h, err := ParseHeader(ops[:HeaderLen])
			n := int(ops[HeaderLen])
			ops = ops[HeaderLen+1:]
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("ParseHeader error %v does not wrap ErrMalformed", err)
				}
				continue
			}
			msg, done, err := r.Add(h, body[:n], max)
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("Add error %v does not wrap ErrMalformed", err)
			}
			if r.Held() > max {
				t.Fatalf("holds %d bytes, more than max %d", r.Held(), max)
			}
			if done && len(msg) != h.Total {
				t.Fatalf("completed %d bytes, header said %d", len(msg), h.Total)
			}
		}
	})
}
