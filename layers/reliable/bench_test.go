package reliable_test

import (
	"testing"

	"github.com/layercast/layercast/testbed/layertest"
)

// BenchmarkCastDeliver is the per-message cost of reliable: a cast at one
// node delivered at another, with stability digests every 256 messages
// freeing the buffer.
func BenchmarkCastDeliver(b *testing.B) {
	layertest.BenchCastDeliverSizes(b, relEntries(nil))
}
