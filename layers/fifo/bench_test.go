package fifo_test

import (
	"testing"

	"github.com/layercast/layercast/internal/layertest"
)

// BenchmarkCastDeliver is the per-message cost of fifo over reliable: a cast at one
// node delivered at another, with stability digests every 256 messages
// freeing the buffer.
func BenchmarkCastDeliver(b *testing.B) {
	for _, size := range []int{64, 1024} {
		name := "64B"
		if size == 1024 {
			name = "1KiB"
		}
		b.Run(name, func(b *testing.B) { layertest.BenchCastDeliver(b, size, fifoEntries(nil)) })
	}
}
