package event

import (
	"bytes"
	"testing"
)

// A held message in a buffer far larger than its charge is copied into one
// of its own size; one in an ordinary buffer is kept as it is.
func TestCompact(t *testing.T) {
	p := &Pool{}
	big := p.FromBytes(make([]byte, 16<<10))
	big.Truncate(10) // a pooled buffer that once carried 16 KB, now 10 bytes
	copy(big.Bytes(), "0123456789")
	c := big.Compact()
	if c == big {
		t.Fatal("Compact kept a 16 KB buffer for 10 bytes")
	}
	if b := c.Bytes(); !bytes.Equal(b, []byte("0123456789")) || Oversized(len(b), cap(b)) {
		t.Fatalf("Compact() = %q in a %d-byte buffer", b, cap(b))
	}
	c.Release()

	small := (&Pool{}).FromBytes([]byte("abc")) // a fresh pool: p now holds the 16 KB buffer
	if small.Compact() != small {
		t.Fatal("Compact copied a message in an ordinary pooled buffer")
	}
	small.Release()

	if HeldCost(10) != HeldCost(1500) || HeldCost(3000) <= HeldCost(1500) {
		t.Fatalf("HeldCost: 10 -> %d, 1500 -> %d, 3000 -> %d", HeldCost(10), HeldCost(1500), HeldCost(3000))
	}
}

// TestCompactReusedCopyNeverOversized: Compact's copies are recycled, but a
// recycled buffer left by a large message is not reused for a small one
// (it would pin the large buffer under the small one's charge), and the
// bytes are the slice's.
func TestCompactReusedCopyNeverOversized(t *testing.T) {
	for range 4 {
		big := (&Pool{}).FromBytes(bytes.Repeat([]byte{'x'}, 60<<10))
		bs := big.Slice(0, 50<<10)
		big.Release()
		c := bs.Compact()
		if len(c.Bytes()) != 50<<10 || Oversized(len(c.Bytes()), cap(c.Bytes())) {
			t.Fatalf("50 KB slice compacted to %d bytes in %d", len(c.Bytes()), cap(c.Bytes()))
		}
		c.Release() // its 50 KB buffer may go back to Compact's pool

		dgram := (&Pool{}).FromBytes([]byte("0123456789abcdef"))
		s := dgram.Slice(4, 14)
		dgram.Release()
		c = s.Compact()
		if b := c.Bytes(); !bytes.Equal(b, []byte("456789abcd")) || Oversized(len(b), cap(b)) {
			t.Fatalf("10-byte slice compacted to %q in a %d-byte buffer", b, cap(b))
		}
		c.Release()
	}
}

// BenchmarkCompactSlice is fifo's cost for each message of a pack's
// datagram it holds behind a gap: a 1,000-byte slice of a 60 KB packet
// compacted into a buffer of its own, then released when delivered.
func BenchmarkCompactSlice(b *testing.B) {
	p := &Pool{}
	dgram := p.FromBytes(make([]byte, 60<<10))
	b.ReportAllocs()
	b.SetBytes(1000)
	for i := 0; b.Loop(); i++ {
		off := (i % 60) * 1000
		dgram.Retain()
		s := dgram.Slice(off, off+1000)
		dgram.Release()
		s.Compact().Release()
	}
}
