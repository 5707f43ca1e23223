package sweep

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/layercast/layercast/experiment"
)

// Column is one column of results.csv after the stack, spec, parameter
// and seed columns.
type Column struct {
	Name, Doc string
	Value     func(r *experiment.Report) string
}

func fcol(f func(r *experiment.Report) float64) func(r *experiment.Report) string {
	return func(r *experiment.Report) string { return strconv.FormatFloat(f(r), 'g', 6, 64) }
}

func icol(f func(r *experiment.Report) int64) func(r *experiment.Report) string {
	return func(r *experiment.Report) string { return strconv.FormatInt(f(r), 10) }
}

// Columns documents results.csv. Its header is: stack (the label), spec
// (the spec as run, layer parameters applied), one column per swept
// parameter (named as given to --param, its value as given), seed, then
// the metrics (Metrics, in order, named by Key) and these columns.
var Columns = func() []Column {
	var cs []Column
	for _, m := range Metrics {
		cs = append(cs, Column{m.Key, m.Title + " (" + m.Unit + ")", fcol(m.Value)})
	}
	return append(cs,
		Column{"latency_p90_ms", "delivery latency, 90th percentile (ms)", fcol(func(r *experiment.Report) float64 { return r.LatencyMs.P90 })},
		Column{"latency_max_ms", "delivery latency, largest (ms)", fcol(func(r *experiment.Report) float64 { return r.LatencyMs.Max })},
		Column{"recovery_latency_p99_ms", "recovery latency, 99th percentile (ms)", fcol(func(r *experiment.Report) float64 { return r.Loss.RecoveryLatencyMs.P99 })},
		Column{"control_bytes_per_msg", "control bytes per message sent", fcol(func(r *experiment.Report) float64 { return r.Overhead.ControlBytesPerMsg })},
		Column{"offered_msgs_per_s", "offered load, all senders (msgs/s)", fcol(func(r *experiment.Report) float64 { return r.OfferedMsgsPerS })},
		Column{"messages_sent", "casts the stacks accepted", icol(func(r *experiment.Report) int64 { return r.MessagesSent })},
		Column{"deliveries_expected", "owed (receiver, message) deliveries", icol(func(r *experiment.Report) int64 { return r.DeliveriesExpected })},
		Column{"deliveries_of_expected", "owed deliveries made", icol(func(r *experiment.Report) int64 { return r.DeliveriesOfExpected })},
		Column{"missing_unexplained", "owed deliveries missing with no fault to explain them", icol(func(r *experiment.Report) int64 { return r.MissingUnexplained })},
		Column{"duplicates", "duplicate deliveries", icol(func(r *experiment.Report) int64 { return r.Duplicates })},
		Column{"fifo_violations", "FIFO violations", icol(func(r *experiment.Report) int64 { return r.FIFOViolations })},
		Column{"dropped", "data packets the network dropped, per receiver", icol(func(r *experiment.Report) int64 { return r.Loss.Dropped })},
		Column{"recovered", "deliveries a layer marked as recovered", icol(func(r *experiment.Report) int64 { return r.Loss.Recovered })},
		Column{"peak_buffer_bytes", "largest per-node sum of the layers' peak buffers (bytes)", icol(func(r *experiment.Report) int64 { return r.PeakBufferBytes })},
		Column{"sim_seconds", "virtual time the run took (s)", fcol(func(r *experiment.Report) float64 { return r.SimSeconds })},
		Column{"wall_seconds", "wall time the run took (s; 0 with --no-wall)", fcol(func(r *experiment.Report) float64 { return r.WallSeconds })},
		Column{"broken_promises", "what promise the run broke, '; '-separated (empty: none)", func(r *experiment.Report) string { return strings.Join(r.Broken, "; ") }},
	)
}()

// columns are Columns and then the plan's metrics that Columns lacks.
func (pl *Plan) columns() []Column {
	cols := Columns
	for _, m := range pl.metrics() {
		if !slices.ContainsFunc(cols, func(c Column) bool { return c.Name == m.Key }) {
			cols = append(slices.Clip(cols), Column{m.Key, m.Title + " (" + m.Unit + ")", fcol(m.Value)})
		}
	}
	return cols
}

// WriteCSV writes one row per (stack, point, seed), in plan order.
func WriteCSV(w io.Writer, pl *Plan, res []Result) error {
	cw := csv.NewWriter(w)
	head := []string{"stack", "spec"}
	for _, p := range pl.Config.Params {
		head = append(head, p.Name)
	}
	head = append(head, "seed")
	cols := pl.columns()
	for _, c := range cols {
		head = append(head, c.Name)
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, r := range res {
		rec := []string{pl.Config.Stacks[r.Job.Stack].Label, r.Report.Spec}
		rec = append(rec, pl.Points[r.Job.Point]...)
		rec = append(rec, strconv.FormatUint(r.Job.Seed, 10))
		for _, c := range cols {
			rec = append(rec, c.Value(r.Report))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Output is results.json: the sweep's configuration, the per-point
// summaries and every run's full report (the `stacktool run --json`
// object).
type Output struct {
	Specs []OutputSpec `json:"specs"`
	// Params are the swept parameters with their values.
	Params []OutputParam `json:"params"`
	// Scenario is the base scenario (experiment.Scenario.Describe).
	Scenario string   `json:"scenario"`
	Seeds    []uint64 `json:"seeds"`
	Network  string   `json:"network"`
	// Metrics names the summarised metrics with their units.
	Metrics []OutputMetric `json:"metrics"`
	// Points are the per-(stack, point) summaries, in plan order.
	Points []Row `json:"points"`
	// Runs are every run, in plan order.
	Runs []OutputRun `json:"runs"`
}

// OutputSpec is one stack of results.json.
type OutputSpec struct {
	Label string `json:"label"`
	Spec  string `json:"spec"`
	File  string `json:"file,omitempty"`
}

// OutputParam is one swept parameter of results.json.
type OutputParam struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

// OutputMetric names a metric of results.json.
type OutputMetric struct {
	Key   string `json:"key"`
	Title string `json:"title"`
	Unit  string `json:"unit"`
}

// OutputRun is one run of results.json.
type OutputRun struct {
	Stack  string             `json:"stack"`
	Values map[string]string  `json:"values"`
	Seed   uint64             `json:"seed"`
	Report *experiment.Report `json:"report"`
}

// NewOutput assembles results.json.
func NewOutput(pl *Plan, res []Result, rows []Row) *Output {
	o := &Output{Scenario: pl.Config.Base.Describe(), Network: pl.Config.Network, Points: rows}
	if o.Network == "" {
		o.Network = "sim"
	}
	for _, st := range pl.Config.Stacks {
		o.Specs = append(o.Specs, OutputSpec{Label: st.Label, Spec: st.Spec.String(), File: st.Spec.File})
	}
	for _, p := range pl.Config.Params {
		o.Params = append(o.Params, OutputParam{p.Name, p.Values})
	}
	for s := range max(1, pl.Config.Seeds) {
		o.Seeds = append(o.Seeds, pl.Config.Base.Seed+uint64(s))
	}
	for _, m := range pl.metrics() {
		o.Metrics = append(o.Metrics, OutputMetric{m.Key, m.Title, m.Unit})
	}
	for _, r := range res {
		vals := map[string]string{}
		for i, p := range pl.Config.Params {
			vals[p.Name] = pl.Points[r.Job.Point][i]
		}
		o.Runs = append(o.Runs, OutputRun{pl.Config.Stacks[r.Job.Stack].Label, vals, r.Job.Seed, r.Report})
	}
	return o
}

// WriteJSON writes o indented.
func WriteJSON(w io.Writer, o *Output) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(o)
}

// WriteTable prints one row per (stack, point): the parameter values and
// each metric's mean, with ±SD when there are several seeds.
func WriteTable(w io.Writer, pl *Plan, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	seeds := max(1, pl.Config.Seeds)
	head := []string{"stack"}
	for _, p := range pl.Config.Params {
		head = append(head, p.Name)
	}
	for _, m := range pl.metrics() {
		head = append(head, m.Short)
	}
	head = append(head, "broken")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range rows {
		cells := []string{r.Stack}
		for _, p := range pl.Config.Params {
			cells = append(cells, r.Values[p.Name])
		}
		for _, m := range pl.metrics() {
			s := r.Metrics[m.Key]
			c := num(s.Mean)
			if seeds > 1 {
				c += " ±" + num(s.SD)
			}
			cells = append(cells, c)
		}
		b := "-"
		if r.Broken > 0 {
			b = fmt.Sprintf("%d/%d", r.Broken, seeds)
		}
		cells = append(cells, b)
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	note := fmt.Sprintf("%d seed(s) from %d", seeds, pl.Config.Base.Seed)
	if seeds > 1 {
		note += "; mean ±sample standard deviation over seeds"
	}
	_, err := fmt.Fprintf(w, "%s; scenario (swept keys aside): %s\n", note, pl.Config.Base.Describe())
	return err
}

// num prints v with about four significant digits.
func num(v float64) string {
	switch a := abs(v); {
	case a == 0:
		return "0"
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 3, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// WriteAll writes results.csv, results.json and the charts (WritePlots)
// into dir, which must exist, and returns the files written.
func WriteAll(dir string, pl *Plan, res []Result, rows []Row) ([]string, error) {
	write := func(name string, fn func(io.Writer) error) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			f.Close()
			return fmt.Errorf("%s: %v", f.Name(), err)
		}
		return f.Close()
	}
	if err := write("results.csv", func(w io.Writer) error { return WriteCSV(w, pl, res) }); err != nil {
		return nil, err
	}
	if err := write("results.json", func(w io.Writer) error { return WriteJSON(w, NewOutput(pl, res, rows)) }); err != nil {
		return nil, err
	}
	files := []string{filepath.Join(dir, "results.csv"), filepath.Join(dir, "results.json")}
	charts, err := WritePlots(dir, pl, rows)
	return append(files, charts...), err
}

// Verdict says which stack did best on one metric at one point, and by
// how much it beat the next best.
type Verdict struct {
	Metric Metric
	// Best and Next are stack labels; Next is "" when only one stack ran.
	Best, Next           string
	BestValue, NextValue float64
}

// String reads "Throughput per receiver: ricochet, 12.5% higher than
// baseline (999.5 vs 888.4 msgs/s)".
func (v Verdict) String() string {
	m := v.Metric
	unit := ""
	if m.Unit != "" && m.Unit != "fraction" {
		unit = " " + m.Unit
	}
	if v.Next == "" {
		return fmt.Sprintf("%s: %s%s", m.Title, num(v.BestValue), unit)
	}
	if same(v.BestValue, v.NextValue) {
		return fmt.Sprintf("%s: the same for every stack, within 0.1%% (%s%s)", m.Title, num(v.BestValue), unit)
	}
	word := "lower"
	hi, lo := v.NextValue, v.BestValue
	if m.Higher {
		word, hi, lo = "higher", v.BestValue, v.NextValue
	}
	// By how much, relative to the next best: "2.5x" when one is at
	// least twice the other, a percentage otherwise, the difference in
	// the unit when the next best is zero.
	var by string
	switch {
	case lo > 0 && hi/lo >= 2:
		by = strconv.FormatFloat(hi/lo, 'f', 1, 64) + "x"
	case v.NextValue != 0:
		by = strconv.FormatFloat(100*(hi-lo)/abs(v.NextValue), 'f', 1, 64) + "%"
	default:
		by = num(hi-lo) + unit
	}
	return fmt.Sprintf("%s: %s, %s %s than %s (%s vs %s%s)", m.Title, v.Best, by, word, v.Next, num(v.BestValue), num(v.NextValue), unit)
}

// Verdicts ranks the rows of one point (a comparison) on every metric of
// the plan: the best stack (with those tied with it, within 0.1%, named
// together) and the best of the others.
func Verdicts(pl *Plan, rows []Row) []Verdict {
	var out []Verdict
	for _, m := range pl.metrics() {
		v := Verdict{Metric: m}
		if len(rows) == 0 {
			continue
		}
		better := func(a, b float64) bool { return (m.Higher && a > b) || (!m.Higher && a < b) }
		v.BestValue = rows[0].Metrics[m.Key].Mean
		for _, r := range rows[1:] {
			if x := r.Metrics[m.Key].Mean; better(x, v.BestValue) {
				v.BestValue = x
			}
		}
		var best []string
		first := true
		for _, r := range rows {
			x := r.Metrics[m.Key].Mean
			if same(x, v.BestValue) {
				best = append(best, r.Stack)
				continue
			}
			if first || better(x, v.NextValue) {
				v.Next, v.NextValue, first = r.Stack, x, false
			}
		}
		v.Best = strings.Join(best, " and ")
		if v.Next == "" && len(rows) > 1 {
			v.Next, v.NextValue = best[1], v.BestValue // all tied
		}
		out = append(out, v)
	}
	return out
}

// same reports whether two values agree within 0.1%.
func same(a, b float64) bool { return abs(a-b) <= 1e-3*max(abs(a), abs(b)) }
