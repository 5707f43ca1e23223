package sweep

import (
	"math"

	"github.com/layercast/layercast/experiment"
)

// Metric is one figure a sweep tabulates and plots, taken from a Report.
type Metric struct {
	// Key names the metric in CSV headers, JSON and chart file names.
	Key string
	// Title is the chart's title and the table's column; Unit is the y
	// axis's unit ("" for a ratio).
	Title, Unit string
	// Short is the table's column header.
	Short string
	Value func(r *experiment.Report) float64
	// Higher is true when a larger value is better (throughput), false
	// when a smaller one is (latency, overhead).
	Higher bool
}

// Metrics are the figures every sweep plots, in order.
var Metrics = []Metric{
	{"throughput_msgs_per_s", "Throughput per receiver", "msgs/s", "thr msgs/s", func(r *experiment.Report) float64 { return r.ThroughputMsgsPerS }, true},
	{"latency_p50_ms", "Delivery latency, median", "ms", "p50 ms", func(r *experiment.Report) float64 { return r.LatencyMs.P50 }, false},
	{"latency_p99_ms", "Delivery latency, 99th percentile", "ms", "p99 ms", func(r *experiment.Report) float64 { return r.LatencyMs.P99 }, false},
	{"recovery_latency_mean_ms", "Recovery latency, mean", "ms", "recov ms", func(r *experiment.Report) float64 { return r.Loss.RecoveryLatencyMs.Mean }, false},
	{"control_packets_per_msg", "Control packets per message", "packets/msg", "ctl/msg", func(r *experiment.Report) float64 { return r.Overhead.ControlPacketsPerMsg }, false},
	{"acks_per_msg", "Acknowledgements per message", "acks/msg", "acks/msg", func(r *experiment.Report) float64 { return r.Overhead.AcksPerMsg }, false},
	{"delivered_fraction", "Owed deliveries made", "fraction", "delivered", DeliveredFraction, true},
}

// DeliveredFraction is the share of owed deliveries made (1 when none was
// owed).
func DeliveredFraction(r *experiment.Report) float64 {
	if r.DeliveriesExpected == 0 {
		return 1
	}
	return float64(r.DeliveriesOfExpected) / float64(r.DeliveriesExpected)
}

// Stat summarises one metric over a point's seeds.
type Stat struct {
	Mean float64 `json:"mean"`
	// SD is the sample standard deviation (0 for one seed).
	SD  float64 `json:"sd"`
	Min float64 `json:"min"`
	Max float64 `json:"max"`
	N   int     `json:"n"`
}

func newStat(vs []float64) Stat {
	s := Stat{N: len(vs), Min: math.Inf(1), Max: math.Inf(-1)}
	if len(vs) == 0 {
		return Stat{}
	}
	for _, v := range vs {
		s.Mean += v
		s.Min, s.Max = min(s.Min, v), max(s.Max, v)
	}
	s.Mean /= float64(len(vs))
	if len(vs) > 1 {
		var ss float64
		for _, v := range vs {
			ss += (v - s.Mean) * (v - s.Mean)
		}
		s.SD = math.Sqrt(ss / float64(len(vs)-1))
	}
	return s
}

// Row is one (stack, point) of a sweep, its metrics summarised over seeds.
type Row struct {
	Stack  string            `json:"stack"`
	Spec   string            `json:"spec"`
	Values map[string]string `json:"values"`
	// Metrics by Metric.Key.
	Metrics map[string]Stat `json:"metrics"`
	// Broken counts the seeds whose run broke a promise of the stack.
	Broken int `json:"broken_runs"`

	stack, point int
}

// Aggregate summarises results per (point, stack), in plan order.
func Aggregate(pl *Plan, res []Result) []Row {
	type key struct{ point, stack int }
	groups := map[key][]Result{}
	for _, r := range res {
		k := key{r.Job.Point, r.Job.Stack}
		groups[k] = append(groups[k], r)
	}
	var rows []Row
	for pi, pt := range pl.Points {
		for si, st := range pl.Config.Stacks {
			rs := groups[key{pi, si}]
			if len(rs) == 0 {
				continue
			}
			row := Row{Stack: st.Label, Spec: rs[0].Report.Spec, Values: map[string]string{}, Metrics: map[string]Stat{}, stack: si, point: pi}
			for i, p := range pl.Config.Params {
				row.Values[p.Name] = pt[i]
			}
			for _, m := range pl.metrics() {
				vs := make([]float64, len(rs))
				for i, r := range rs {
					vs[i] = m.Value(r.Report)
				}
				row.Metrics[m.Key] = newStat(vs)
			}
			for _, r := range rs {
				if len(r.Report.Broken) > 0 {
					row.Broken++
				}
			}
			rows = append(rows, row)
		}
	}
	return rows
}
