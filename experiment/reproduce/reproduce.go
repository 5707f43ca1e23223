// Package reproduce runs a paper's headline experiments from the spec
// library and sets each measured figure beside the paper's, saying which
// hold in shape and which do not and why, as `stacktool reproduce PAPER`
// does (issue 14).
//
// Everything a paper needs is data: a table of experiments (Papers), each
// naming its spec files and scenario file under specs/, the scenario keys
// and layer parameters it overrides (and the smaller ones of --quick), the
// report fields it measures (Field), the paper's figure and the rule for
// "holds in shape" (Rule). The runs go through experiment/sweep, so the
// files written are sweep's: results.csv, results.json and a chart per
// measured figure, one folder per experiment.
//
// A figure that does not hold says why, from the runs: a rule's Why reads
// the counters of the runs that measured it. A known deviation (Known) is
// one the project has named and not fixed yet; it is reported like the
// others, with its measured cause, and does not count as a failure.
package reproduce

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/experiment"
	"github.com/layercast/layercast/experiment/sweep"
)

// Paper is one paper's headline experiments.
type Paper struct {
	// Name is the command's argument ("ricochet").
	Name string
	// Title names the paper.
	Title string
	// Needs names what must exist for the paper's experiments to run (the
	// layer and the issue that builds it), for the message when a spec
	// file is missing.
	Needs       string
	Experiments []Experiment
}

// Experiment is one headline experiment: stacks under one scenario,
// perhaps along one parameter, and the figures measured on the runs.
type Experiment struct {
	// ID names the experiment's folder of results; Title says what it is.
	ID, Title string
	// Stacks are spec files under the spec folder (or spec strings).
	Stacks []string
	// Scenario is a scenario file under the spec folder.
	Scenario string
	// Set are scenario keys (KEY=VALUE) applied after the file; Quick are
	// applied after them with --quick, to scale the run down.
	Set, Quick []string
	// Param is a swept parameter "NAME=V1,V2,..." (a scenario key or
	// LAYER.PARAM); QuickParam replaces it with --quick ("" keeps it).
	// Without a parameter the experiment is one run per stack.
	Param, QuickParam string
	// Seeds per point (0 means 1).
	Seeds    int
	Measures []Measure
}

// Measure is one figure of an experiment beside the paper's.
type Measure struct {
	// Metric names the figure; Unit is its unit ("" for a ratio).
	Metric, Unit string
	// Field computes it from each run's report.
	Field Field
	// Paper is the paper's figure in words ("about 98% or more").
	Paper string
	// Rule says when ours holds in shape.
	Rule Rule
	// Last judges only the parameter's last value (the figure the paper
	// gives for one setting of a swept parameter).
	Last bool
	// FirstOnly judges the first stack alone; the others' values are
	// shown beside it (a baseline, for what it pays).
	FirstOnly bool
	// Known is a deviation the project knows of and has not fixed (in
	// the words); "" for none.
	Known string
	// Why says, from the runs, why the figure does not hold: it reads
	// their counters. Nil leaves the rule's own words.
	Why func(runs []Run) string
}

// Run is one run of an experiment, for a Measure's Why.
type Run struct {
	// Stack is the stack's label; Point names the parameter's value
	// ("the scenario" without one).
	Stack, Point string
	Report       *experiment.Report
}

// RuleKind is how a figure is judged.
type RuleKind int

// Kinds of rule. Every value of every stack at every point is judged,
// except Ratio, which divides the first stack's values by the second's.
const (
	AtLeast RuleKind = iota // every value >= A
	AtMost                  // every value <= A
	Between                 // every value in [A, B]
	Near                    // every value within the fraction B of A
	Flat                    // (max-min)/max over the points <= A, per stack
	Rises                   // last/first >= 1+A along the parameter, per stack
	Falls                   // last/first <= 1-A along the parameter, per stack
	Ratio                   // first stack / second stack >= A at every point
	// NearFirst: every later point within the fraction A of the first
	// point's value, per stack; the last within B instead when B > 0
	// (QSM Figure 1: 1,024 groups within 5% of 1 group, 8,192 within 10%).
	NearFirst
)

// Rule is a kind with its bounds.
type Rule struct {
	Kind RuleKind
	A, B float64
}

// String says the rule in words.
func (r Rule) String() string {
	switch r.Kind {
	case AtLeast:
		return fmt.Sprintf("at least %s", num(r.A))
	case AtMost:
		return fmt.Sprintf("at most %s", num(r.A))
	case Between:
		return fmt.Sprintf("between %s and %s", num(r.A), num(r.B))
	case Near:
		return fmt.Sprintf("within %s%% of %s", num(100*r.B), num(r.A))
	case Flat:
		return fmt.Sprintf("flat: spread (max-min)/max at most %s%%", num(100*r.A))
	case Rises:
		return fmt.Sprintf("rises along the parameter: last/first at least %s", num(1+r.A))
	case Falls:
		return fmt.Sprintf("falls along the parameter: last/first at most %s", num(1-r.A))
	case Ratio:
		return fmt.Sprintf("first stack / second at least %s", num(r.A))
	case NearFirst:
		if r.B > 0 {
			return fmt.Sprintf("within %s%% of the first point, the last within %s%%", num(100*r.A), num(100*r.B))
		}
		return fmt.Sprintf("within %s%% of the first point", num(100*r.A))
	}
	return "?"
}

// Finding is one measured figure beside the paper's: an element of
// `stacktool reproduce PAPER --json`.
type Finding struct {
	Paper      string `json:"paper_name"`
	Experiment string `json:"experiment"`
	Metric     string `json:"metric"`
	// PaperFigure is the paper's figure in words.
	PaperFigure string `json:"paper"`
	// Ours is the measured figure the rule judged (the worst value, the
	// spread, the trend or the ratio: see Rule); OursText lists every
	// value it came from.
	Ours     float64 `json:"ours"`
	OursText string  `json:"ours_text"`
	Unit     string  `json:"unit,omitempty"`
	Rule     string  `json:"rule"`
	Holds    bool    `json:"holds"`
	// Known is set on a known deviation (holding or not).
	Known string `json:"known_deviation,omitempty"`
	// Why says, from the runs, why it does not hold.
	Why string `json:"why,omitempty"`
	// Broken lists promises the stacks broke in these runs (a missing
	// delivery, a FIFO violation): the figure is then not trusted.
	Broken []string `json:"broken_promises,omitempty"`
}

// Failed reports whether the finding counts as a failure: it does not hold
// and is not a known deviation, or a run broke a promise of its stack.
func (f Finding) Failed() bool { return (!f.Holds && f.Known == "") || len(f.Broken) > 0 }

// Options configure a reproduction.
type Options struct {
	// SpecDir is the folder of the spec library ("specs").
	SpecDir string
	// Quick scales every experiment down (Experiment.Quick, QuickParam).
	Quick bool
	// Workers is how many runs go at once (0: GOMAXPROCS).
	Workers int
	// Progress is told how the runs advance (may be nil).
	Progress sweep.Progress
}

// ErrNotBuilt is wrapped by Plan's error when a spec file of the paper is
// missing: the layer it needs is not built yet.
var ErrNotBuilt = errors.New("not built yet")

// Lookup finds a paper by name.
func Lookup(name string) (*Paper, error) {
	var names []string
	for i := range Papers {
		if Papers[i].Name == name {
			return &Papers[i], nil
		}
		names = append(names, Papers[i].Name)
	}
	return nil, fmt.Errorf("unknown paper %q: choose one of %s", name, strings.Join(names, ", "))
}

// Planned is a paper's experiments checked and expanded into sweep plans.
type Planned struct {
	Paper *Paper
	Opts  Options
	Plans []*sweep.Plan
}

// Plan checks every experiment of the paper (spec files present and valid,
// scenarios valid, parameters known) and expands it into sweep plans.
// Errors are bad input; a missing spec file wraps ErrNotBuilt.
func Plan(p *Paper, opts Options) (*Planned, error) {
	if opts.SpecDir == "" {
		opts.SpecDir = "specs"
	}
	pd := &Planned{Paper: p, Opts: opts}
	for _, e := range p.Experiments {
		pl, err := planOne(p, e, opts)
		if err != nil {
			return nil, fmt.Errorf("reproduce %s, %s: %w", p.Name, e.ID, err)
		}
		pd.Plans = append(pd.Plans, pl)
	}
	return pd, nil
}

func planOne(p *Paper, e Experiment, opts Options) (*sweep.Plan, error) {
	cfg := sweep.Config{Seeds: max(1, e.Seeds), Workers: opts.Workers}
	for _, s := range e.Stacks {
		arg := s
		if strings.HasSuffix(s, ".stack") {
			arg = filepath.Join(opts.SpecDir, s)
			if _, err := os.Stat(arg); errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("%s does not exist: %s is %w", arg, p.Needs, ErrNotBuilt)
			}
		}
		sp, err := compose.Load(arg)
		if err == nil {
			err = compose.Check(sp)
		}
		if err != nil {
			return nil, err
		}
		cfg.Stacks = append(cfg.Stacks, sweep.Stack{Label: sweep.Label(sp), Spec: sp})
	}
	sc := experiment.Default()
	if e.Scenario != "" {
		f := filepath.Join(opts.SpecDir, e.Scenario)
		if _, err := os.Stat(f); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s does not exist: %s is %w", f, p.Needs, ErrNotBuilt)
		}
		if err := sc.LoadFile(f); err != nil {
			return nil, err
		}
	}
	set := e.Set
	param := e.Param
	if opts.Quick {
		set = append(set[:len(set):len(set)], e.Quick...)
		if e.QuickParam != "" {
			param = e.QuickParam
		}
	}
	for _, kv := range set {
		k, v, _ := strings.Cut(kv, "=")
		if err := sc.Set(k, v); err != nil {
			return nil, err
		}
	}
	if param != "" {
		pp, err := sweep.ParseParam(param)
		if err != nil {
			return nil, err
		}
		cfg.Params = []sweep.Param{pp}
	}
	cfg.Base = sc
	for _, m := range e.Measures {
		cfg.Metrics = append(cfg.Metrics, m.metric())
	}
	return sweep.NewPlan(cfg)
}

// metric is the measure as a sweep metric (for the table, CSV and charts);
// a report that lacks the field charts as NaN.
func (m Measure) metric() sweep.Metric {
	key := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r - 'A' + 'a'
		}
		return '_'
	}, m.Metric)
	return sweep.Metric{Key: key, Title: m.Metric, Unit: m.Unit, Short: m.Metric,
		Higher: m.Rule.Kind != AtMost && m.Rule.Kind != Falls,
		Value: func(r *experiment.Report) float64 {
			v, err := m.Field.Eval(r)
			if err != nil {
				return math.NaN()
			}
			return v
		}}
}

// Outcome is a finished reproduction.
type Outcome struct {
	Planned  *Planned
	Results  [][]sweep.Result // per experiment, in plan order
	Findings []Finding
}

// Run runs every experiment's runs on one pool of workers and judges each
// figure.
func (pd *Planned) Run(ctx context.Context) (*Outcome, error) {
	res, err := sweep.RunPlans(ctx, pd.Plans, pd.Opts.Workers, pd.Opts.Progress)
	if err != nil {
		return nil, err
	}
	o := &Outcome{Planned: pd, Results: res}
	for ei, e := range pd.Paper.Experiments {
		for _, m := range e.Measures {
			f, err := judge(pd.Paper, e, m, pd.Plans[ei], res[ei])
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", e.ID, m.Metric, err)
			}
			o.Findings = append(o.Findings, f)
		}
	}
	return o, nil
}

// series are a measure's values: per stack, per point (mean over seeds).
type series struct {
	labels []string
	points []string
	v      [][]float64
}

func judge(p *Paper, e Experiment, m Measure, pl *sweep.Plan, res []sweep.Result) (Finding, error) {
	f := Finding{Paper: p.Name, Experiment: e.ID + ": " + e.Title, Metric: m.Metric, PaperFigure: m.Paper,
		Unit: m.Unit, Rule: m.Rule.String(), Known: m.Known}
	s := series{v: make([][]float64, len(pl.Config.Stacks))}
	for _, st := range pl.Config.Stacks {
		s.labels = append(s.labels, st.Label)
	}
	first := 0 // the first point judged
	if m.Last {
		first = len(pl.Points) - 1
	}
	for _, pt := range pl.Points[first:] {
		s.points = append(s.points, pl.PointText(pt))
	}
	n := make([][]int, len(s.v))
	for i := range s.v {
		s.v[i] = make([]float64, len(s.points))
		n[i] = make([]int, len(s.points))
	}
	var runs []Run
	for _, r := range res {
		pi := r.Job.Point - first
		if pi < 0 {
			continue
		}
		v, err := m.Field.Eval(r.Report)
		if err != nil {
			return f, err
		}
		s.v[r.Job.Stack][pi] += v
		n[r.Job.Stack][pi]++
		runs = append(runs, Run{s.labels[r.Job.Stack], s.points[pi], r.Report})
		for _, b := range r.Report.Broken {
			if m.FirstOnly && r.Job.Stack > 0 {
				break // shown beside, not judged
			}
			f.Broken = append(f.Broken, fmt.Sprintf("%s at %s, seed %d: %s", s.labels[r.Job.Stack], s.points[pi], r.Job.Seed, b))
		}
	}
	for i := range s.v {
		for j := range s.v[i] {
			s.v[i][j] /= float64(max(1, n[i][j]))
		}
	}
	judged := s
	if m.FirstOnly {
		judged.labels, judged.v = s.labels[:1], s.v[:1]
	}
	f.Ours, f.Holds = m.Rule.apply(judged)
	f.OursText = s.text(m.Unit)
	if m.Rule.Kind == Ratio {
		f.OursText += fmt.Sprintf(" (ratio %s)", num(f.Ours))
	}
	if !f.Holds {
		f.Why = fmt.Sprintf("ours is %s %s; the rule wants %s", num(f.Ours), m.Rule.oursWord(), m.Rule)
		if m.Why != nil {
			f.Why = m.Why(runs)
		}
	}
	return f, nil
}

// oursWord names what Ours is under the rule.
func (r Rule) oursWord() string {
	switch r.Kind {
	case Flat:
		return "(the spread, as a fraction)"
	case Rises, Falls:
		return "(last/first)"
	case Ratio:
		return "(the smallest ratio)"
	case NearFirst:
		return "(the largest distance from the first point, as a fraction)"
	}
	return "(the worst value)"
}

// apply judges the series: the figure reported as ours and whether the
// rule holds.
func (r Rule) apply(s series) (float64, bool) {
	all := func(ok func(float64) bool, worse func(a, b float64) bool) (float64, bool) {
		worst, holds, first := 0.0, true, true
		for _, row := range s.v {
			for _, v := range row {
				if first || worse(v, worst) {
					worst, first = v, false
				}
				holds = holds && ok(v)
			}
		}
		return worst, holds
	}
	switch r.Kind {
	case AtLeast:
		return all(func(v float64) bool { return v >= r.A }, func(a, b float64) bool { return a < b })
	case AtMost:
		return all(func(v float64) bool { return v <= r.A }, func(a, b float64) bool { return a > b })
	case Between:
		dist := func(v float64) float64 { return max(r.A-v, v-r.B, 0) }
		return all(func(v float64) bool { return v >= r.A && v <= r.B }, func(a, b float64) bool { return dist(a) > dist(b) })
	case Near:
		return all(func(v float64) bool { return math.Abs(v-r.A) <= r.B*math.Abs(r.A) },
			func(a, b float64) bool { return math.Abs(a-r.A) > math.Abs(b-r.A) })
	case Flat:
		worst := 0.0
		for _, row := range s.v {
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, v := range row {
				lo, hi = min(lo, v), max(hi, v)
			}
			if hi > 0 {
				worst = max(worst, (hi-lo)/hi)
			}
		}
		return worst, worst <= r.A
	case Rises, Falls:
		worst, holds := 0.0, true
		for i, row := range s.v {
			q := math.Inf(1)
			if row[0] != 0 {
				q = row[len(row)-1] / row[0]
			}
			ok := (r.Kind == Rises && q >= 1+r.A) || (r.Kind == Falls && q <= 1-r.A)
			if i == 0 || !ok {
				worst = q
			}
			holds = holds && ok
		}
		return worst, holds
	case Ratio:
		if len(s.v) < 2 {
			return 0, false
		}
		worst := math.Inf(1)
		for j := range s.v[0] {
			q := math.Inf(1)
			if s.v[1][j] != 0 {
				q = s.v[0][j] / s.v[1][j]
			}
			worst = min(worst, q)
		}
		return worst, worst >= r.A
	case NearFirst:
		worst, holds := 0.0, true
		for _, row := range s.v {
			for j := 1; j < len(row); j++ {
				d := math.Inf(1)
				if row[0] != 0 {
					d = math.Abs(row[j]-row[0]) / math.Abs(row[0])
				}
				tol := r.A
				if j == len(row)-1 && r.B > 0 {
					tol = r.B
				}
				worst = max(worst, d)
				holds = holds && d <= tol
			}
		}
		return worst, holds
	}
	return 0, false
}

// text lists the series' values: "ricochet at loss=uniform:5%: 97.1" or,
// along a parameter, "groups-per-node=5: 99.1, =20: 98.7".
func (s series) text(unit string) string {
	u := ""
	if unit != "" && unit != "%" {
		u = " " + unit
	} else if unit == "%" {
		u = "%"
	}
	var parts []string
	for i, row := range s.v {
		var vals []string
		for j, v := range row {
			pt := s.points[j]
			if len(row) > 1 {
				vals = append(vals, fmt.Sprintf("%s: %s%s", pt, num(v), u))
			} else {
				vals = append(vals, num(v)+u)
			}
		}
		who := ""
		if len(s.v) > 1 {
			who = s.labels[i] + " "
		}
		parts = append(parts, who+strings.Join(vals, ", "))
	}
	return strings.Join(parts, "; ")
}

// num prints v with about four significant digits.
func num(v float64) string {
	switch a := math.Abs(v); {
	case math.IsInf(v, 0) || math.IsNaN(v):
		return fmt.Sprint(v)
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}
