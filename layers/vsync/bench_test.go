package vsync_test

import (
	"testing"

	_ "github.com/layercast/layercast/layers/all"
	"github.com/layercast/layercast/testbed/layertest"
)

// BenchmarkCastDeliver is the per-message cost of vsync over fifo and
// reliable: a cast at one node delivered at another, kept by its sender
// until the members' stability gossip lets it go (no view change).
func BenchmarkCastDeliver(b *testing.B) {
	layertest.BenchCastDeliverSizes(b, layertest.Registered(nil, "vsync", "fifo", "reliable"))
}

// BenchmarkCastDeliverBaseline is the same without vsync, for the ratio.
func BenchmarkCastDeliverBaseline(b *testing.B) {
	layertest.BenchCastDeliverSizes(b, layertest.Registered(nil, "fifo", "reliable"))
}
