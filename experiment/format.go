package experiment

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// row is one line of the human table: a label with its unit and one value
// per report.
type row struct {
	label string
	value func(r *Report) string
}

func i64(v int64) string  { return strconv.FormatInt(v, 10) }
func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
func yesNo(b bool) string { return map[bool]string{true: "yes", false: "NO"}[b] }

// pct is a as a percentage of b, or "-" when b is 0: a percentage of
// nothing is not a figure.
func pct(a, b int64) string {
	if b == 0 {
		return "-"
	}
	return f1(100*float64(a)/float64(b)) + "%"
}
func kb(v int64) string       { return f1(float64(v) / 1024) }
func pair(a, b string) string { return a + " / " + b }

func mechanisms(reps []*Report) []string {
	set := map[string]bool{}
	for _, r := range reps {
		for m := range r.Loss.RecoveredBy {
			set[m] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// dropCauses lists, in the order of the JSON, the drop causes any report
// counted, with how to read each one.
func dropCauses(reps []*Report) []string {
	var out []string
	for _, c := range dropCauseNames {
		for _, r := range reps {
			if r.Loss.DroppedBy.Of(c) > 0 {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

func rows(reps []*Report) []row {
	rs := []row{
		{"simulated time (s)", func(r *Report) string { return f3(r.SimSeconds) }},
		{"messages sent", func(r *Report) string { return i64(r.MessagesSent) }},
		{"offered load (msgs/s, all senders)", func(r *Report) string { return f1(r.OfferedMsgsPerS) }},
		{"casts accepted but never sent", func(r *Report) string {
			if r.NeverSent == nil {
				return "unknown"
			}
			return i64(*r.NeverSent)
		}},
		{"owed deliveries made / owed", func(r *Report) string { return pair(i64(r.DeliveriesOfExpected), i64(r.DeliveriesExpected)) }},
		{"every member delivered every owed message", func(r *Report) string { return yesNo(r.DeliveredAll) }},
		{"owed missing: of casts never sent / sent", func(r *Report) string {
			return pair(i64(r.MissingNeverSent), i64(r.Missing-r.MissingNeverSent))
		}},
		{"owed missing: explained / unexplained", func(r *Report) string {
			return pair(i64(r.MissingExplained), i64(r.MissingUnexplained))
		}},
		{"deliveries not owed", func(r *Report) string { return i64(r.NotOwed) }},
		{"duplicates", func(r *Report) string { return i64(r.Duplicates) }},
		{"FIFO violations", func(r *Report) string { return i64(r.FIFOViolations) }},
		// Checked only where the stack promises agreed order.
		{"agreed-order violations", func(r *Report) string {
			if !slices.Contains(r.Promises, string(agreedOrder)) {
				return "-"
			}
			return i64(r.AgreedViolations)
		}},
		// Shown only where a stack promises view synchrony (vsync.go).
		{"vsync violations", func(r *Report) string {
			if !slices.Contains(r.Promises, string(viewSynchrony)) {
				return "-"
			}
			return i64(r.VsyncViolations)
		}},
		{"promises broken", func(r *Report) string {
			if len(r.Broken) == 0 {
				return "none"
			}
			return "YES (" + i64(int64(len(r.Broken))) + ")"
		}},
		{"throughput per receiver (msgs/s)", func(r *Report) string { return f1(r.ThroughputMsgsPerS) }},
		{"latency p50 / p90 (ms)", func(r *Report) string { return pair(f3(r.LatencyMs.P50), f3(r.LatencyMs.P90)) }},
		{"latency p99 / max (ms)", func(r *Report) string { return pair(f3(r.LatencyMs.P99), f3(r.LatencyMs.Max)) }},
		{"data packets dropped (per receiver)", func(r *Report) string { return i64(r.Loss.Dropped) }},
	}
	if !slices.ContainsFunc(reps, func(r *Report) bool { return slices.Contains(r.Promises, string(viewSynchrony)) }) {
		rs = slices.DeleteFunc(rs, func(ro row) bool { return ro.label == "vsync violations" })
	}
	for _, c := range dropCauses(reps) {
		rs = append(rs, row{"  dropped by " + c, func(r *Report) string { return i64(r.Loss.DroppedBy.Of(c)) }})
	}
	rs = append(rs, row{"recovered deliveries (% of dropped)", func(r *Report) string {
		return fmt.Sprintf("%d (%s)", r.Loss.Recovered, pct(r.Loss.Recovered, r.Loss.Dropped))
	}})
	for _, m := range mechanisms(reps) {
		rs = append(rs, row{"  recovered by " + m, func(r *Report) string { return i64(r.Loss.RecoveredBy[m]) }})
	}
	rs = append(rs,
		// A mean of no recoveries is not a figure either.
		row{"loss discovery mean / p99 (ms)", func(r *Report) string {
			if r.Loss.Recovered == 0 {
				return pair("-", "-")
			}
			return pair(f3(r.Loss.DiscoveryLatencyMs.Mean), f3(r.Loss.DiscoveryLatencyMs.P99))
		}},
		row{"recovery latency mean / p99 (ms)", func(r *Report) string {
			if r.Loss.Recovered == 0 {
				return pair("-", "-")
			}
			return pair(f3(r.Loss.RecoveryLatencyMs.Mean), f3(r.Loss.RecoveryLatencyMs.P99))
		}},
		row{"control packets per message", func(r *Report) string { return f3(r.Overhead.ControlPacketsPerMsg) }},
		row{"control bytes per message", func(r *Report) string { return f1(r.Overhead.ControlBytesPerMsg) }},
		row{"acks per message", acksPerLayer},
		row{"peak buffer, worst node (KB)", func(r *Report) string { return kb(r.PeakBufferBytes) }},
		row{"sends refused by back-pressure", func(r *Report) string { return i64(r.Backpressure) }},
	)
	return rs
}

// WriteTable prints reports as a table: one column per report, one row per
// metric. With wall set it ends with a line giving the wall time of each
// run; tests leave it out to compare output byte for byte.
func WriteTable(w io.Writer, reps []*Report, wall bool) error {
	if len(reps) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "scenario: %s\nnetwork: %s\n", reps[0].Scenario, reps[0].Network)
	if len(reps) == 1 {
		fmt.Fprintf(&b, "spec: %s\n", reps[0].Spec)
	} else {
		for i, r := range reps {
			fmt.Fprintf(&b, "[%d] %s\n", i+1, r.Spec)
		}
	}
	b.WriteByte('\n')
	rs := rows(reps)
	cells := make([][]string, len(rs)+1)
	cells[0] = []string{"metric"}
	for i := range reps {
		if len(reps) == 1 {
			cells[0] = append(cells[0], "value")
		} else {
			cells[0] = append(cells[0], fmt.Sprintf("[%d]", i+1))
		}
	}
	for j, ro := range rs {
		cells[j+1] = []string{ro.label}
		for _, r := range reps {
			cells[j+1] = append(cells[j+1], ro.value(r))
		}
	}
	widths := make([]int, len(reps)+1)
	for _, line := range cells {
		for i, c := range line {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, line := range cells {
		for i, c := range line {
			pad := widths[i] - len([]rune(c))
			if i == 0 {
				b.WriteString(c + strings.Repeat(" ", pad))
			} else {
				b.WriteString("  " + strings.Repeat(" ", pad) + c)
			}
		}
		b.WriteByte('\n')
	}
	writeTagged(&b, reps, "PROMISE BROKEN", func(r *Report) []string { return r.Broken }, brokenDetail)
	writeTagged(&b, reps, "note", func(r *Report) []string { return r.Notes }, nil)
	if wall {
		parts := make([]string, len(reps))
		for i, r := range reps {
			parts[i] = strconv.FormatFloat(r.WallSeconds, 'f', 2, 64) + "s"
		}
		fmt.Fprintf(&b, "wall time: %s\n", strings.Join(parts, " / "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTagged writes the lines of every report, each as "tag: line", or
// "tag [i]: line" naming the report when there are several, each followed
// by its detail lines (detail may be nil), indented.
func writeTagged(b *strings.Builder, reps []*Report, tag string, lines func(*Report) []string, detail func(*Report, string) []string) {
	for i, r := range reps {
		for _, n := range lines(r) {
			if len(reps) == 1 {
				fmt.Fprintf(b, "%s: %s\n", tag, n)
			} else {
				fmt.Fprintf(b, "%s [%d]: %s\n", tag, i+1, n)
			}
			if detail == nil {
				continue
			}
			for _, d := range detail(r, n) {
				fmt.Fprintf(b, "    %s\n", d)
			}
		}
	}
}

// acksPerLayer shows each layer's acknowledgements per message apart
// ("mflow 0.172, reliable 0.272"): they are different acknowledgements, and
// their sum (Overhead.AcksPerMsg) reads as one layer's cost.
func acksPerLayer(r *Report) string {
	if len(r.Overhead.AcksPerMsgBy) == 0 {
		return f3(r.Overhead.AcksPerMsg)
	}
	var parts []string
	for _, l := range slices.Sorted(maps.Keys(r.Overhead.AcksPerMsgBy)) {
		parts = append(parts, l+" "+f3(r.Overhead.AcksPerMsgBy[l]))
	}
	return strings.Join(parts, ", ")
}
