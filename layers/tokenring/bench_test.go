package tokenring_test

import (
	"testing"

	"github.com/layercast/layercast/testbed/layertest"
)

// BenchmarkCastDeliver is one cast through fifo : tokenring at node 1,
// multicast on the region's channel and delivered at node 2 (the clock
// steps every 256 casts, so token rounds ACK and purge). The steady state
// allocates nothing per message. Rate control is off: the benchmark's
// clock stands still between steps.
func BenchmarkCastDeliver(b *testing.B) {
	layertest.BenchCastDeliverSizes(b, entries(map[string]string{"rate_control": "off"}))
}
