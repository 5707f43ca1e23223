package event

import (
	"bytes"
	"testing"
)

// TestSliceSharesAndPins: a Slice has the bytes of its range without a
// copy, keeps its parent alive until the last slice is released, and
// never writes outside its range: a header prepended or bytes appended
// move it to a buffer of its own.
func TestSliceSharesAndPins(t *testing.T) {
	p := &Pool{}
	m := p.FromBytes([]byte("aaaa|bbbb|cccc"))
	a, b := m.Slice(0, 4), m.Slice(5, 9)
	if string(a.Bytes()) != "aaaa" || string(b.Bytes()) != "bbbb" {
		t.Fatalf("slices = %q, %q", a.Bytes(), b.Bytes())
	}
	if &a.Bytes()[0] != &m.Bytes()[0] {
		t.Errorf("the slice copied its bytes")
	}
	m.Release() // the slices still hold it
	if m.refs != 2 {
		t.Fatalf("parent refs = %d after its own release, want 2 (one per slice)", m.refs)
	}
	copy(b.Prepend(3), "hdr")
	copy(b.Append(2), "!!")
	if string(b.Bytes()) != "hdrbbbb!!" {
		t.Errorf("slice after Prepend and Append = %q", b.Bytes())
	}
	if got := string(m.buf[m.off:]); got != "aaaa|bbbb|cccc" {
		t.Errorf("parent bytes = %q after the slice grew, want them untouched", got)
	}
	a.Release()
	b.Release()
	if m.refs != 0 || a.parent != nil || b.parent != nil {
		t.Errorf("after releasing both slices: parent refs %d, slice parents %p %p; want 0, nil, nil", m.refs, a.parent, b.parent)
	}
}

// TestCompactCopiesSlice: Compact copies a slice into a buffer of its own
// and lets go of the parent, so a held message never pins a pack.
func TestCompactCopiesSlice(t *testing.T) {
	p := &Pool{}
	m := p.FromBytes(bytes.Repeat([]byte("x"), 60000))
	s := m.Slice(100, 1100)
	m.Release()
	c := s.Compact()
	if c == s || c.parent != nil || len(c.Bytes()) != 1000 {
		t.Fatalf("Compact of a slice = same %v, parent %p, %d bytes; want a 1000-byte copy of its own", c == s, c.parent, len(c.Bytes()))
	}
	if m.refs != 0 {
		t.Errorf("parent refs = %d after Compact, want 0", m.refs)
	}
	c.Release()
}
