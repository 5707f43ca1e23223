// Package seqwin records which sequence numbers of a stream have arrived,
// over a bounded window: a Bitmap is a ring of bits its owner slides
// itself (reliable's receive window, bounded by its window parameter); a
// Window slides on its own as higher numbers arrive and takes everything
// below it as present (lec's window over a sender's stream has that
// shape). Neither allocates after it is made, but for a Bitmap's Grow.
package seqwin

import (
	"math/bits"
	"unsafe"

	"github.com/layercast/layercast/internal/prefetch"
)

// Bitmap is a ring of bits over size consecutive sequence numbers: bit
// seq mod size. The owner keeps the numbers it asks about within one
// window (for example [next, next+size)); numbers size apart share a bit.
type Bitmap struct {
	bits []uint64
	mask uint32
}

// PowerOfTwo is the smallest power of two that is at least n and at least
// least (itself a power of two): the size of a ring over at least n
// sequence numbers, whose slot for a number is the number masked.
func PowerOfTwo(n, least int) int {
	p := least
	for p < n {
		p *= 2
	}
	return p
}

// NewBitmap returns a Bitmap over size numbers; size is rounded up to a
// power of two and at least 64.
func NewBitmap(size int) Bitmap {
	n := PowerOfTwo(size, 64)
	return Bitmap{bits: make([]uint64, n/64), mask: uint32(n - 1)}
}

// Grow makes the bitmap cover at least size numbers (rounded up to a power
// of two), keeping the marks of the numbers in [from, from+Size()): an owner
// whose window is usually narrow can start small and grow on demand (one
// allocation per doubling, none once grown). Nothing changes when the
// bitmap is already that large.
func (b *Bitmap) Grow(size int, from uint32) {
	n := PowerOfTwo(size, 64)
	if n <= b.Size() {
		return
	}
	nb := Bitmap{bits: make([]uint64, n/64), mask: uint32(n - 1)}
	old := uint32(b.Size())
	for off := uint32(0); off < old; {
		i := (from + off) & b.mask
		w := b.bits[i>>6] >> (i & 63)
		if w == 0 {
			off += 64 - i&63 // the rest of this word is clear
			continue
		}
		if w&1 != 0 {
			nb.Set(from + off)
		}
		off++
	}
	*b = nb
}

// Size is the number of sequence numbers the bitmap covers.
func (b *Bitmap) Size() int { return len(b.bits) * 64 }

// Has says whether seq is marked.
func (b *Bitmap) Has(seq uint32) bool {
	i := seq & b.mask
	return b.bits[i>>6]&(1<<(i&63)) != 0
}

// Prefetch asks the CPU to start loading the word that holds seq, for a
// caller that knows a lookup of seq (or a number near it) is coming (a
// stack.Warmer). It changes nothing.
func (b *Bitmap) Prefetch(seq uint32) {
	if len(b.bits) == 0 {
		return
	}
	prefetch.Lines(unsafe.Pointer(&b.bits[(seq&b.mask)>>6]), 1)
}

// Set marks seq.
func (b *Bitmap) Set(seq uint32) {
	i := seq & b.mask
	b.bits[i>>6] |= 1 << (i & 63)
}

// Clear unmarks seq.
func (b *Bitmap) Clear(seq uint32) {
	i := seq & b.mask
	b.bits[i>>6] &^= 1 << (i & 63)
}

// NextUnset returns the first number from seq on, below limit, that is not
// marked (limit if there is none), a word at a time.
func (b *Bitmap) NextUnset(seq, limit uint32) uint32 {
	for seq < limit {
		i := seq & b.mask
		word := ^b.bits[i>>6] >> (i & 63)
		if word != 0 {
			return min(limit, seq+uint32(bits.TrailingZeros64(word)))
		}
		seq += 64 - i&63
	}
	return limit
}

// Window is a Bitmap that slides on its own: numbers below Base are taken
// as present (too old to matter), and marking a number at or beyond
// Base+Size moves Base forward, a multiple of 64 at a time, until it fits.
type Window struct {
	base uint32
	bm   Bitmap
}

// NewWindow returns a Window over size numbers (see NewBitmap) starting at
// base.
func NewWindow(base uint32, size int) Window {
	return Window{base: base, bm: NewBitmap(size)}
}

// Base is the lowest number the window still tracks.
func (w *Window) Base() uint32 { return w.base }

// Has says whether seq arrived (true below Base, false beyond the window).
func (w *Window) Has(seq uint32) bool {
	if seq < w.base {
		return true
	}
	if seq-w.base >= uint32(w.bm.Size()) {
		return false
	}
	return w.bm.Has(seq)
}

// Mark records that seq arrived, sliding the window forward if seq is
// beyond it. Numbers below Base are ignored.
func (w *Window) Mark(seq uint32) {
	if seq < w.base {
		return
	}
	size := uint32(w.bm.Size())
	if off := seq - w.base; off >= size {
		shift := (off-size)/64*64 + 64 // whole words, enough to fit seq
		if shift >= size {
			clear(w.bm.bits)
		} else {
			for s := w.base; s != w.base+shift; s++ {
				w.bm.Clear(s)
			}
		}
		w.base += shift
	}
	w.bm.Set(seq)
}
