package hop

import (
	"testing"

	"github.com/layercast/layercast/testbed/layertest"
)

// BenchmarkHopLink measures one message's cost across a Hop link: a cast at
// site 1's representative, sent over the link (token bucket, window, acks)
// and delivered in agreed order at site 2's. The steady state allocates
// nothing. The link's rate is set out of the way (the benchmark's clock
// moves 100 ms per 256 messages).
func BenchmarkHopLink(b *testing.B) {
	layertest.BenchSitesCastDeliverSizes(b, layertest.Registered(map[string]map[string]string{
		"hop": {"link_rate": "1000GB", "bucket": "1GB", "window": "1024", "dead_after": "3600s", "max_queue": "65536"},
	}, "hop"))
}
