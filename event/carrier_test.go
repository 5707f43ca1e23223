package event

import (
	"bytes"
	"strings"
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

func newScribbler(data string) *scribbler { return newPinnedScribbler(data, nil) }

// newPinnedScribbler is newScribbler with a budget (NewPinnedCarrier).
func newPinnedScribbler(data string, pins *Pins) *scribbler {
	s := &scribbler{buf: []byte(data)}
	s.c = NewPinnedCarrier(func() {
		s.done++
		for i := range s.buf {
			s.buf[i] = 0xEE
		}
	}, pins)
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

// A carrier's budget (Pins): Compact holds a borrowed message (or a slice
// of one) in place while its carrier is pinned already or the budget has
// room, and copies it once Max carriers are pinned; a carrier leaves the
// budget when its last reference is released, and its place goes to the
// next.
func TestPinsBoundCarriersHeld(t *testing.T) {
	pins := &Pins{Max: 2}
	p := &Pool{}
	var ss []*scribbler
	var held []*Message
	inPlace := 0
	for i := range 5 {
		s := newPinnedScribbler(strings.Repeat(string(rune('a'+i)), 4), pins)
		s.c.Open()
		a := p.Borrow(s.c, s.buf[0:2], 16)
		b := p.Borrow(s.c, s.buf[2:4], 16)
		sl := b.Slice(1, 2)
		b.Release()
		for _, m := range []*Message{a, sl} {
			k := m.Compact()
			if k == m {
				inPlace++
			}
			held = append(held, k)
		}
		s.c.Release()
		ss = append(ss, s)
		if pins.Pinned() > pins.Max {
			t.Fatalf("%d carriers pinned, Max %d", pins.Pinned(), pins.Max)
		}
	}
	if inPlace != 4 || pins.Pinned() != 2 || pins.Copies() != 6 {
		t.Fatalf("%d held in place, %d pinned, %d copied; want 4, 2, 6", inPlace, pins.Pinned(), pins.Copies())
	}
	for i, s := range ss {
		if want := min(i/2, 1); s.done != want { // 0 and 1 pinned, the rest given back
			t.Fatalf("carrier %d done %d times, want %d", i, s.done, want)
		}
	}
	for i, m := range held {
		if want := string(rune('a' + i/2)); string(m.Bytes()[:1]) != want {
			t.Fatalf("held message %d = %q, want it to start with %s", i, m.Bytes(), want)
		}
	}
	held[0].Release()
	held[1].Release() // carrier 0's last reference
	if ss[0].done != 1 || pins.Pinned() != 1 {
		t.Fatalf("carrier 0 done %d times, %d pinned; want 1, 1", ss[0].done, pins.Pinned())
	}
	s := newPinnedScribbler("zz", pins)
	s.c.Open()
	m := p.Borrow(s.c, s.buf, 16)
	if m.Compact() != m || pins.Pinned() != 2 || pins.Peak() != 2 {
		t.Fatalf("a freed place is not taken: %d pinned, peak %d", pins.Pinned(), pins.Peak())
	}
	s.c.Release()
	m.Release()
	for _, h := range held[2:] {
		h.Release()
	}
	if pins.Pinned() != 0 || s.done != 1 || ss[1].done != 1 {
		t.Fatalf("%d pinned after every release", pins.Pinned())
	}
}

// Past Max, Room decides whether one more carrier is pinned: it is asked
// only for a carrier not pinned yet, once Max are (again for each message
// of a carrier it refused), and held messages are copied when it says no.
func TestPinsRoomPastMax(t *testing.T) {
	room, asked := 2, 0
	pins := &Pins{Max: 1, Room: func() bool { asked++; room--; return room >= 0 }}
	p := &Pool{}
	var held []*Message
	inPlace := 0
	for i := range 5 {
		s := newPinnedScribbler(strings.Repeat(string(rune('a'+i)), 4), pins)
		s.c.Open()
		for j := range 2 { // the second message of a carrier pins nothing new
			m := p.Borrow(s.c, s.buf[2*j:2*j+2], 16)
			k := m.Compact()
			if k == m {
				inPlace++
			}
			held = append(held, k)
		}
		s.c.Release()
	}
	// carrier 0 within Max, 1 and 2 by Room, 3 and 4 refused (for each message)
	if inPlace != 6 || pins.Pinned() != 3 || pins.Copies() != 4 || asked != 6 {
		t.Fatalf("%d held in place, %d pinned, %d copied, Room asked %d times; want 6, 3, 4, 6", inPlace, pins.Pinned(), pins.Copies(), asked)
	}
	for i, m := range held {
		if want := string(rune('a' + i/2)); string(m.Bytes()[:1]) != want {
			t.Fatalf("held message %d = %q, want it to start with %s", i, m.Bytes(), want)
		}
		m.Release()
	}
	if pins.Pinned() != 0 {
		t.Fatalf("%d pinned after every release", pins.Pinned())
	}
}
