package experiment_test

import (
	"context"
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/experiment"
)

// BenchmarkScale is issue 9's scaling figure: the baseline stack with the
// same per-node load (4 groups of 8, 100 msgs/s, 1% uniform loss, 2
// virtual seconds) on 32 and on 2,048 nodes. A simulator whose cost
// follows the work gives about the same deliveries per wall second at
// both sizes. One op is one whole run.
func BenchmarkScale(b *testing.B) {
	spec, err := compose.Load("fifo : reliable")
	if err != nil {
		b.Fatal(err)
	}
	for _, nodes := range []string{"32", "2048"} {
		b.Run("nodes="+nodes, func(b *testing.B) {
			sc := experiment.Default()
			for k, v := range map[string]string{
				"nodes": nodes, "groups-per-node": "4", "group-size": "8", "rate": "100",
				"duration": "2s", "loss": "uniform:1%",
			} {
				if err := sc.Set(k, v); err != nil {
					b.Fatal(err)
				}
			}
			var deliveries int64
			var wall float64
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				rep, err := experiment.Run(context.Background(), "sim", spec, sc, nil)
				if err != nil {
					b.Fatal(err)
				}
				deliveries += rep.Deliveries
				wall += rep.WallSeconds
			}
			b.ReportMetric(float64(deliveries)/wall, "deliveries/s")
		})
	}
}
