package experiment_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/experiment"
	_ "github.com/layercast/layercast/layers/all"
)

// BenchmarkRun64 is the end-to-end figure: the baseline stack
// (fifo : reliable) on 64 simulated nodes, each in 4 groups of 8 and
// sending 1000 messages/s for 10 virtual seconds (no loss; latency
// 1ms, jitter 100µs). It reports
// wall time per run (ns/op), the peak heap in use, and simulated
// deliveries per wall-clock second.
func BenchmarkRun64(b *testing.B) {
	spec, sc := benchScenario(b, "fifo : reliable", map[string]string{
		"nodes": "64", "groups-per-node": "4", "group-size": "8", "rate": "1000", "duration": "10s",
	})
	var peak uint64
	var ms runtime.MemStats
	sample := func(experiment.ProgressInfo) {
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	var deliveries int64
	var wall float64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := experiment.Run(context.Background(), "sim", spec, sc, sample)
		if err != nil {
			b.Fatal(err)
		}
		if !rep.DeliveredAll {
			b.Fatalf("run did not deliver everything: %d of %d (%q)", rep.Deliveries, rep.DeliveriesExpected, rep.Notes)
		}
		deliveries += rep.Deliveries
		wall += rep.WallSeconds
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(deliveries)/wall, "deliveries/s")
}

// BenchmarkScale is issue 9's scaling figure: the baseline stack with the
// same per-node load (4 groups of 8, 100 msgs/s, 1% uniform loss, 2
// virtual seconds) on 32 and on 2,048 nodes. A simulator whose cost
// follows the work gives about the same deliveries per wall second at
// both sizes. One op is one whole run.
func BenchmarkScale(b *testing.B) {
	for _, nodes := range []string{"32", "2048"} {
		b.Run("nodes="+nodes, func(b *testing.B) {
			spec, sc := benchScenario(b, "fifo : reliable", map[string]string{
				"nodes": nodes, "groups-per-node": "4", "group-size": "8", "rate": "100",
				"duration": "2s", "loss": "uniform:1%",
			})
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

// benchScenario loads a spec and the default scenario with some keys set.
func benchScenario(b *testing.B, text string, set map[string]string) (*compose.Spec, experiment.Scenario) {
	spec, err := compose.Load(text)
	if err != nil {
		b.Fatal(err)
	}
	sc := experiment.Default()
	for k, v := range set {
		if err := sc.Set(k, v); err != nil {
			b.Fatal(err)
		}
	}
	return spec, sc
}
