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
