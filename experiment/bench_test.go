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
	spec, err := compose.Load("fifo : reliable")
	if err != nil {
		b.Fatal(err)
	}
	sc := experiment.Default()
	for k, v := range map[string]string{
		"nodes": "64", "groups-per-node": "4", "group-size": "8", "rate": "1000", "duration": "10s",
	} {
		if err := sc.Set(k, v); err != nil {
			b.Fatal(err)
		}
	}
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
