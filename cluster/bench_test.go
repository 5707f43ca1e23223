package cluster_test

import (
	"testing"
	"time"

	"github.com/layercast/layercast/cluster"
)

// BenchmarkCastDeliver measures one cast to a group of 3 delivered at the
// two other members, through the cluster's callbacks, in the simulator.
func BenchmarkCastDeliver(b *testing.B) {
	c, err := cluster.New("fifo : reliable")
	if err != nil {
		b.Fatal(err)
	}
	c.Group("g", 1, 2, 3)
	n := 0
	c.OnDeliver(func(cluster.Delivery) { n++ })
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 100)
	warm := func(k int) {
		for i := 0; i < k; i++ {
			if err := c.Cast(1, "g", payload); err != nil {
				b.Fatal(err)
			}
			c.Run(100 * time.Microsecond)
		}
	}
	warm(20000) // fill every pool and window once
	b.ReportAllocs()
	b.ResetTimer()
	warm(b.N)
	b.StopTimer()
	if n < 2*b.N {
		b.Fatalf("%d deliveries for %d casts", n, b.N)
	}
}
