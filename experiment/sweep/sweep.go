// Package sweep runs stacks over a grid of parameter values and seeds, in
// parallel, and writes what it measured as a table, CSV, JSON and line
// charts (SVG and PNG), one chart per metric, one line per stack, as
// `stacktool sweep` does (issue 14).
//
// A parameter is either a scenario key (nodes, groups-per-node, rate,
// loss, ...) or a layer parameter written LAYER.PARAM (lec.r), which is
// applied by rewriting that layer's argument in each spec. A spec without
// the layer runs unchanged at every value (a flat reference line).
package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/experiment"
)

// Param is one swept parameter: its name and the values it takes, as text.
type Param struct {
	// Name is a scenario key (experiment.Keys) or LAYER.PARAM, or several
	// scenario keys joined by "+" that take the same value together
	// (nodes+group-size=10,25: one group spanning every node).
	Name string
	// Values are the values in the order given; the first parameter's
	// values are the charts' x axis.
	Values []string
	// layer and key are set for LAYER.PARAM; info is the layer's schema
	// entry for the parameter.
	layer, key string
	info       *compose.Param
}

// Layer reports whether the parameter is a layer parameter (LAYER.PARAM).
func (p *Param) Layer() bool { return p.layer != "" }

// ParseParam parses NAME=V1,V2,... (or NAME=V1;V2;... when the values
// hold commas, as bursty loss models do) and checks the name and every value: a
// scenario key must exist and accept each value; a layer parameter must be
// in the layer's schema and each value must parse under its type and
// bounds. Values may not repeat.
func ParseParam(text string) (Param, error) {
	name, list, ok := strings.Cut(text, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return Param{}, fmt.Errorf("--param %q: want NAME=V1,V2,... (e.g. groups-per-node=2,8,32 or lec.r=4,8)", text)
	}
	p := Param{Name: name}
	if strings.TrimSpace(list) == "" {
		return Param{}, fmt.Errorf("--param %s: empty list of values", name)
	}
	sep := ","
	if strings.Contains(list, ";") {
		sep = ";" // values that hold commas (bursty:1%,10; capacity lists)
	}
	for _, v := range strings.Split(list, sep) {
		v = strings.TrimSpace(v)
		if v == "" {
			return Param{}, fmt.Errorf("--param %s: empty value in %q", name, list)
		}
		if slices.Contains(p.Values, v) {
			return Param{}, fmt.Errorf("--param %s: value %q given twice", name, v)
		}
		p.Values = append(p.Values, v)
	}
	if layer, key, ok := strings.Cut(name, "."); ok {
		info, found := compose.Lookup(layer)
		if !found {
			return Param{}, fmt.Errorf("--param %s: unknown layer %q%s", name, layer, suggest(layer, layerNames()))
		}
		pi := info.Param(key)
		if pi == nil {
			var names []string
			for _, q := range info.Params {
				names = append(names, q.Name)
			}
			if len(names) == 0 {
				return Param{}, fmt.Errorf("--param %s: layer %s takes no parameters", name, layer)
			}
			return Param{}, fmt.Errorf("--param %s: layer %s has no parameter %q%s (it has %s)", name, layer, key, suggest(key, names), strings.Join(names, ", "))
		}
		for _, v := range p.Values {
			if _, err := pi.ParseValue(v); err != nil {
				return Param{}, fmt.Errorf("--param %s: %v", name, err)
			}
		}
		p.layer, p.key, p.info = layer, key, pi
		return p, nil
	}
	if strings.Contains(name, "+") {
		for _, k := range strings.Split(name, "+") {
			q, err := ParseParam(k + "=" + strings.Join(p.Values, ";"))
			if err != nil {
				return Param{}, err
			}
			if q.Layer() {
				return Param{}, fmt.Errorf("--param %s: only scenario keys can be joined with +, not %s", name, k)
			}
		}
		return p, nil
	}
	switch name {
	case "seed":
		return Param{}, fmt.Errorf("--param seed: seeds are not a parameter; use --seed for the first and --seeds N for how many")
	case "fault":
		return Param{}, fmt.Errorf("--param fault: faults cannot be swept; give them with --fault")
	}
	var keys []string
	for _, k := range experiment.Keys {
		keys = append(keys, k.Name)
	}
	if !slices.Contains(keys, name) {
		return Param{}, fmt.Errorf("--param %s: unknown parameter %q%s: give a scenario key (%s) or LAYER.PARAM such as lec.r",
			name, name, suggest(name, keys), strings.Join(keys, ", "))
	}
	for _, v := range p.Values {
		sc := experiment.Default()
		if err := sc.Set(name, v); err != nil {
			hint := ""
			if sep == "," && (name == "loss" || name == "capacity") {
				hint = "; separate values that hold commas with ';' (e.g. loss=bursty:1%,10;bursty:5%,10)"
			}
			return Param{}, fmt.Errorf("--param %v%s", err, hint)
		}
	}
	return p, nil
}

func layerNames() []string {
	var out []string
	for _, l := range compose.Layers() {
		out = append(out, l.Name)
	}
	return out
}

func suggest(name string, candidates []string) string {
	if n, ok := compose.Nearest(name, candidates); ok {
		return fmt.Sprintf(" (did you mean %q?)", n)
	}
	return ""
}

// Stack is one spec of the sweep with the label its lines and rows carry.
type Stack struct {
	// Label is the spec file's base name without .stack, or the spec text.
	Label string
	Spec  *compose.Spec
}

// Label names a spec for tables and legends: a file's base name without
// its .stack suffix, or the spec's canonical text.
func Label(sp *compose.Spec) string {
	if sp.File != "" {
		return strings.TrimSuffix(filepath.Base(sp.File), ".stack")
	}
	return sp.String()
}

// Config is a sweep: the stacks, the parameters, the scenario everything
// else is taken from, and the seeds. A Config without parameters is a
// comparison: every stack at the base scenario (one point), charted as
// bars, as `stacktool compare --out` writes it.
type Config struct {
	Stacks []Stack
	Params []Param
	// Base is the scenario before the parameters are applied; its Seed is
	// the first seed.
	Base experiment.Scenario
	// Seeds is how many seeds each point runs (Base.Seed, Base.Seed+1,
	// ...); 0 means 1.
	Seeds int
	// Network is the network to run on ("" means the simulator).
	Network string
	// Workers is how many runs go at once; 0 means GOMAXPROCS. Runs on a
	// network other than the simulator go one at a time.
	Workers int
	// Metrics are the figures tabulated, summarised and charted; nil means
	// the package's Metrics. results.csv holds Columns and, after them,
	// any of these that Columns lacks.
	Metrics []Metric
}

// metrics are the plan's metrics (Config.Metrics or the package's).
func (pl *Plan) metrics() []Metric {
	if pl.Config.Metrics != nil {
		return pl.Config.Metrics
	}
	return Metrics
}

// Point is one combination of parameter values, one value per parameter in
// Config.Params order.
type Point []string

// Job is one run of a sweep: a stack at a point with a seed, with the spec
// and scenario the point gives.
type Job struct {
	Stack    int // index in Config.Stacks
	Point    int // index in Plan.Points
	Seed     uint64
	Spec     *compose.Spec
	Scenario experiment.Scenario
	// Cost is the job's estimated CPU seconds (see CPUSeconds).
	Cost float64
}

// Plan is a checked sweep: every point and every job, in a fixed order
// (point, then stack, then seed).
type Plan struct {
	Config Config
	Points []Point
	Jobs   []Job
	// Flat lists, per stack, the layer parameters it does not have (its
	// line is flat along them).
	Flat map[int][]string
}

// Plan limits: a sweep that would take longer than MaxWallHours on this
// machine, or one of whose runs would handle more than MaxRunDeliveries
// packet deliveries (the run keeps per-message state), is refused.
const (
	MaxWallHours     = 12
	MaxRunDeliveries = 2e8
	MaxRuns          = 100000
	// deliveriesPerCoreSecond and membershipCoreSeconds calibrate
	// CPUSeconds, measured (user time) on the reference 2-core machine
	// with specs/baseline.stack: 134k packets at groups-per-node=2 took
	// 0.11 s; 424k packets at groups-per-node=128 (2048 memberships, 10 s)
	// took 1.22 s, the rest being per-group timers and state.
	deliveriesPerCoreSecond = 1.3e6
	membershipCoreSeconds   = 4.3e-5 // per membership per virtual second
)

// NewPlan checks the configuration and expands it into jobs: every spec at
// every point must check, every scenario must be valid, and the estimated
// workload must fit the machine. Errors are bad input.
func NewPlan(cfg Config) (*Plan, error) {
	if len(cfg.Stacks) == 0 {
		return nil, errors.New("sweep needs at least one spec")
	}
	if cfg.Seeds <= 0 {
		cfg.Seeds = 1
	}
	if cfg.Workers <= 0 {
		cfg.Workers = experiment.Workers(0)
	}
	if cfg.Network != "" && cfg.Network != "sim" {
		// Real networks run in real time on shared sockets: parallel runs
		// would disturb each other's timing and loss.
		cfg.Workers = 1
	}
	for i, p := range cfg.Params {
		for _, q := range cfg.Params[:i] {
			if q.Name == p.Name {
				return nil, fmt.Errorf("--param %s given twice", p.Name)
			}
		}
	}
	pl := &Plan{Config: cfg, Flat: map[int][]string{}}
	for si, st := range cfg.Stacks {
		for _, p := range cfg.Params {
			if p.Layer() && !hasLayer(st.Spec, p.layer) {
				pl.Flat[si] = append(pl.Flat[si], p.Name)
			}
		}
	}
	for _, p := range cfg.Params {
		if !p.Layer() {
			continue
		}
		used := false
		for si := range cfg.Stacks {
			used = used || !slices.Contains(pl.Flat[si], p.Name)
		}
		if !used {
			return nil, fmt.Errorf("--param %s: no spec has a %s layer", p.Name, p.layer)
		}
	}
	n := 1
	for _, p := range cfg.Params {
		n *= len(p.Values)
		if n*len(cfg.Stacks)*cfg.Seeds > MaxRuns {
			return nil, fmt.Errorf("sweep of more than %d runs refused: fewer values, specs or seeds", MaxRuns)
		}
	}
	idx := make([]int, len(cfg.Params))
	for range n {
		pt := make(Point, len(cfg.Params))
		for i, p := range cfg.Params {
			pt[i] = p.Values[idx[i]]
		}
		pl.Points = append(pl.Points, pt)
		for i := len(idx) - 1; i >= 0; i-- { // the last parameter varies fastest
			idx[i]++
			if idx[i] < len(cfg.Params[i].Values) {
				break
			}
			idx[i] = 0
		}
	}
	var total float64
	for pi, pt := range pl.Points {
		sc, err := pl.scenarioAt(pt)
		if err != nil {
			return nil, err
		}
		if d := Estimate(sc); d > MaxRunDeliveries {
			return nil, fmt.Errorf("sweep refused: the run at %s would handle about %.2g packet deliveries (limit %.0g); use a shorter --duration, a lower --rate or fewer nodes",
				pl.PointText(pt), d, float64(MaxRunDeliveries))
		}
		cost := CPUSeconds(sc)
		for si, st := range cfg.Stacks {
			sp, err := pl.specAt(st.Spec, pt)
			if err != nil {
				return nil, fmt.Errorf("%s at %s: %w", st.Label, pl.PointText(pt), err)
			}
			for s := range cfg.Seeds {
				sc := sc
				sc.Seed = cfg.Base.Seed + uint64(s)
				pl.Jobs = append(pl.Jobs, Job{Stack: si, Point: pi, Seed: sc.Seed, Spec: sp, Scenario: sc, Cost: cost})
				total += cost
			}
		}
	}
	if h := pl.EstimatedWall().Hours(); h > MaxWallHours {
		return nil, fmt.Errorf("sweep refused: %d runs, an estimated %.3g CPU seconds in all, %.1f hours on %d workers (limit %d hours); use fewer values, seeds or specs, or a smaller scenario",
			len(pl.Jobs), total, h, cfg.Workers, MaxWallHours)
	}
	return pl, nil
}

// EstimatedWall is the plan's estimated wall time on its workers.
func (pl *Plan) EstimatedWall() time.Duration {
	var total float64
	for _, j := range pl.Jobs {
		total += j.Cost
	}
	s := total / float64(max(1, min(pl.Config.Workers, len(pl.Jobs))))
	return time.Duration(min(s, 1e9) * float64(time.Second))
}

// CPUSeconds is a run's estimated CPU time: its packet deliveries
// (Estimate) plus the per-group work of every membership over the virtual
// time (timers, stability rounds), which dominates with many groups.
func CPUSeconds(sc experiment.Scenario) float64 {
	memberships := float64(sc.Nodes * sc.GroupsPerNode)
	virtual := (sc.Duration + sc.Drain/2).Seconds()
	return Estimate(sc)/deliveriesPerCoreSecond + memberships*virtual*membershipCoreSeconds
}

// Estimate is a run's expected packet deliveries (experiment.Deliveries).
func Estimate(sc experiment.Scenario) float64 { return experiment.Deliveries(sc) }

// scenarioAt is the base scenario with the point's scenario keys set.
func (pl *Plan) scenarioAt(pt Point) (experiment.Scenario, error) {
	sc := pl.Config.Base
	sc.Faults = slices.Clone(sc.Faults)
	for i, p := range pl.Config.Params {
		if p.Layer() {
			continue
		}
		for _, k := range strings.Split(p.Name, "+") {
			if err := sc.Set(k, pt[i]); err != nil {
				return sc, fmt.Errorf("--param %v", err)
			}
		}
	}
	if err := sc.Check(); err != nil {
		return sc, fmt.Errorf("at %s: %v", pl.PointText(pt), err)
	}
	return sc, nil
}

// specAt is sp with the point's layer parameters written into every call
// of their layer, formatted and parsed back, and checked.
func (pl *Plan) specAt(sp *compose.Spec, pt Point) (*compose.Spec, error) {
	out := &compose.Spec{File: sp.File, Layers: slices.Clone(sp.Layers)}
	changed := false
	for i, p := range pl.Config.Params {
		if !p.Layer() {
			continue
		}
		for li := range out.Layers {
			c := &out.Layers[li]
			if c.Name != p.layer {
				continue
			}
			c.Args = slices.Clone(c.Args)
			set := false
			for ai := range c.Args {
				if c.Args[ai].Key == p.key {
					c.Args[ai].Value, set = pt[i], true
				}
			}
			if !set {
				c.Args = append(c.Args, compose.Arg{Key: p.key, Value: pt[i]})
			}
			changed = true
		}
	}
	if !changed {
		return sp, nil
	}
	re, err := compose.Parse(out.String())
	if err != nil {
		return nil, err
	}
	re.File = sp.File
	if err := compose.Check(re); err != nil {
		return nil, err
	}
	return re, nil
}

func hasLayer(sp *compose.Spec, name string) bool {
	for _, c := range sp.Layers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// PointText is the point as NAME=VALUE pairs ("the scenario" for the one
// point of a plan without parameters).
func (pl *Plan) PointText(pt Point) string {
	if len(pt) == 0 {
		return "the scenario"
	}
	parts := make([]string, len(pt))
	for i, v := range pt {
		parts[i] = pl.Config.Params[i].Name + "=" + v
	}
	return strings.Join(parts, " ")
}

// Result is one finished run.
type Result struct {
	Job    Job
	Report *experiment.Report
}

// Progress is told, after each slice of a run and when a run ends, how
// much of the plan's estimated cost is done (in Job.Cost units) and how
// many runs have finished. It is called from the worker goroutines, under
// a lock, so it needs none of its own.
type Progress func(costDone float64, runsDone int)

// Run runs every job of the plan on Config.Workers goroutines and returns
// the results in the plan's job order, so the output does not depend on
// which worker finished first. The first failed run cancels the rest and
// is returned, naming its stack, point and seed.
func Run(ctx context.Context, pl *Plan, progress Progress) ([]Result, error) {
	res, err := RunPlans(ctx, []*Plan{pl}, pl.Config.Workers, progress)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// RunPlans runs the jobs of several plans on one pool of workers (0 means
// GOMAXPROCS), so a plan of one run does not leave cores idle while
// another has many; the results are per plan, in each plan's job order.
// Progress counts the cost and runs of all the plans together.
func RunPlans(ctx context.Context, plans []*Plan, workers int, progress Progress) ([][]Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type ref struct{ plan, job int }
	var refs []ref
	results := make([][]Result, len(plans))
	for pi, pl := range plans {
		results[pi] = make([]Result, len(pl.Jobs))
		for ji := range pl.Jobs {
			refs = append(refs, ref{pi, ji})
		}
		if pl.Config.Network != "" && pl.Config.Network != "sim" {
			workers = 1 // real networks run one at a time (see NewPlan)
		}
	}
	if workers <= 0 {
		workers = experiment.Workers(0)
	}
	var (
		mu       sync.Mutex
		costDone float64
		runsDone int
		firstErr error
	)
	report := func(dCost float64, dRuns int) {
		mu.Lock()
		defer mu.Unlock()
		costDone += dCost
		runsDone += dRuns
		if progress != nil {
			progress(costDone, runsDone)
		}
	}
	experiment.Parallel(ctx, len(refs), workers, func(i int) {
		pl := plans[refs[i].plan]
		j := pl.Jobs[refs[i].job]
		var told float64
		p := func(pi experiment.ProgressInfo) {
			f := math.Min(1, pi.Done.Seconds()/math.Max(pi.Total.Seconds(), 1e-9))
			if d := f*j.Cost - told; d > 0 {
				told += d
				report(d, 0)
			}
		}
		rep, err := experiment.Run(ctx, pl.Config.Network, j.Spec, j.Scenario, p)
		report(j.Cost-told, 1)
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = fmt.Errorf("%s at %s, seed %d: %w", pl.Config.Stacks[j.Stack].Label, pl.PointText(pl.Points[j.Point]), j.Seed, err)
				cancel()
			}
			mu.Unlock()
			return
		}
		results[refs[i].plan][refs[i].job] = Result{Job: j, Report: rep}
	})
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return results, nil
}
