package prefetch

import (
	"testing"
	"unsafe"
)

// Hints leave memory as it was and accept nil, zero and odd lengths.
func TestLinesChangesNothing(t *testing.T) {
	b := make([]byte, 1024)
	for i := range b {
		b[i] = byte(i)
	}
	Lines(unsafe.Pointer(&b[0]), len(b)/LineSize)
	Lines(unsafe.Pointer(&b[3]), 1)
	Lines(nil, 4)
	Lines(unsafe.Pointer(&b[0]), 0)
	Lines(unsafe.Pointer(&b[0]), -1)
	for i := range b {
		if b[i] != byte(i) {
			t.Fatalf("b[%d] = %d after the hints, want %d", i, b[i], byte(i))
		}
	}
}

func BenchmarkLines(b *testing.B) {
	buf := make([]byte, 4096)
	for i := 0; i < b.N; i++ {
		Lines(unsafe.Pointer(&buf[(i*64)%4096]), 2)
	}
}
