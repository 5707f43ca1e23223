package event

import (
	"bytes"
	"testing"
)

// scribbler is a transport's read buffer as a carrier: done counts its
// calls and scribbles over the buffer, as a transport reading into it
// again would.
type scribbler struct {
	buf  []byte
	done int
	c    *Message
}

func newScribbler(data string) *scribbler {
	s := &scribbler{buf: []byte(data)}
	s.c = NewCarrier(func() {
		s.done++
		for i := range s.buf {
			s.buf[i] = 0xEE
		}
	})
	return s
}

// The carrier's done runs exactly once, when the last of its own reference
// and its borrowed messages' (and their slices') is released; a compacted
// message keeps its bytes after the buffer is scribbled over.
func TestCarrierReturnsOnceAfterLastReference(t *testing.T) {
	s := newScribbler("aaaabbbbcccc")
	p := &Pool{}
	s.c.Open()
	a := p.Borrow(s.c, s.buf[0:4], 16)
	b := p.Borrow(s.c, s.buf[4:8], 16)
	c := p.Borrow(s.c, s.buf[8:12], 16)
	sl := c.Slice(1, 3) // pack's messages going up: a slice of a borrowed one
	c.Release()
	kept := b.Compact() // a layer holding b keeps a copy
	if kept == b {
		t.Fatal("Compact kept a borrowed message in the shared buffer")
	}
	a.Release()
	s.c.Release() // the caller's own reference: sl still holds one
	if s.done != 0 {
		t.Fatalf("done ran %d times while a slice still held the buffer", s.done)
	}
	if got := string(sl.Bytes()); got != "cc" {
		t.Fatalf("slice = %q, want cc", got)
	}
	sl.Release()
	if s.done != 1 {
		t.Fatalf("done ran %d times after the last reference, want 1", s.done)
	}
	if got := string(kept.Bytes()); got != "bbbb" {
		t.Fatalf("kept message = %q after the buffer was reused, want bbbb", got)
	}
	copy(kept.Prepend(4), "hdr:") // a compacted copy has headroom again
	if got := string(kept.Bytes()); got != "hdr:bbbb" {
		t.Fatalf("kept message = %q, want hdr:bbbb", got)
	}
	kept.Release()
	if s.done != 1 {
		t.Fatalf("done ran %d times, want 1", s.done)
	}
	// The same carrier serves the next batch.
	copy(s.buf, "ddddeeeeffff")
	s.c.Open()
	d := p.Borrow(s.c, s.buf[0:4], 16)
	s.c.Release()
	if !bytes.Equal(d.Bytes(), []byte("dddd")) || s.done != 1 {
		t.Fatalf("second batch: %q, done %d", d.Bytes(), s.done)
	}
	d.Release()
	if s.done != 2 {
		t.Fatalf("done ran %d times after two batches, want 2", s.done)
	}
}

// A borrowed message goes back to its pool with the buffer it had, not
// the carrier's: the next message from the pool never writes into it.
func TestBorrowedMessageReturnsItsOwnBuffer(t *testing.T) {
	s := newScribbler("xxxxyyyy")
	p := &Pool{}
	s.c.Open()
	m := p.Borrow(s.c, s.buf[0:4], 16)
	m.Release()
	s.c.Release()
	n := p.FromBytesRoom([]byte("zzzzzzzz"), 16)
	defer n.Release()
	if s.done != 1 || string(s.buf) != string(bytes.Repeat([]byte{0xEE}, 8)) {
		t.Fatalf("carrier buffer %q, done %d", s.buf, s.done)
	}
	if string(n.Bytes()) != "zzzzzzzz" {
		t.Fatalf("pooled message = %q", n.Bytes())
	}
}

// Releasing a carrier more often than it was referenced, or opening one
// still referenced, panics: a batch never goes back twice.
func TestCarrierMisusePanics(t *testing.T) {
	for name, f := range map[string]func(s *scribbler){
		"double release": func(s *scribbler) { s.c.Open(); s.c.Release(); s.c.Release() },
		"open while held": func(s *scribbler) {
			s.c.Open()
			_ = (&Pool{}).Borrow(s.c, s.buf, 0)
			s.c.Release()
			s.c.Open()
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := newScribbler("abcd")
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
				if s.done > 1 {
					t.Errorf("done ran %d times", s.done)
				}
			}()
			f(s)
		})
	}
}
