package reproduce

import (
	"strings"
	"testing"

	"github.com/layercast/layercast/experiment"
	"github.com/layercast/layercast/experiment/sweep"
	_ "github.com/layercast/layercast/layers/all"
)

func TestFieldEval(t *testing.T) {
	r := &experiment.Report{Loss: experiment.LossReport{Dropped: 200, RecoveredBy: map[string]int64{"lec": 150}}}
	r.Layers = map[string]map[string]int64{"lec": {"xors": 40, "data_in": 10}}
	for _, c := range []struct {
		f    Field
		want float64
	}{
		{"loss.recovered_by.lec / loss.dropped * 100", 75},
		{"loss.recovered_by.nak? / loss.dropped", 0},
		{"layers.lec.xors / layers.lec.data_in", 4},
		{"loss.dropped - 50 + 1", 151},
	} {
		got, err := c.f.Eval(r)
		if err != nil || got != c.want {
			t.Errorf("Field(%q).Eval = %v, %v; want %v", c.f, got, err, c.want)
		}
	}
	for _, f := range []Field{"loss.recovered_by.nak", "layers.tokenring.recovery_rounds_mean", "loss.dropped /", "loss.dropped % 2", "loss.recovered_by.nak? / 0"} {
		if _, err := f.Eval(r); err == nil {
			t.Errorf("Field(%q).Eval: no error", f)
		}
	}
}

func TestRules(t *testing.T) {
	one := func(vs ...float64) series { return series{labels: []string{"a"}, v: [][]float64{vs}} }
	two := series{labels: []string{"hop", "e2e"}, v: [][]float64{{500, 600}, {100, 150}}}
	for _, c := range []struct {
		r     Rule
		s     series
		ours  float64
		holds bool
	}{
		{Rule{Kind: AtLeast, A: 90}, one(95, 91), 91, true},
		{Rule{Kind: AtLeast, A: 90}, one(95, 89), 89, false},
		{Rule{Kind: AtMost, A: 5}, one(4.9, 5.1), 5.1, false},
		{Rule{Kind: Between, A: 25, B: 55}, one(69), 69, false},
		{Rule{Kind: Between, A: 1.5, B: 3.5}, one(2, 3), 2, true},
		{Rule{Kind: Near, A: 50, B: 0.5}, one(131), 131, false},
		{Rule{Kind: Near, A: 0.396, B: 0.05}, one(0.394), 0.394, true},
		{Rule{Kind: Flat, A: 0.05}, one(98, 99, 97), (99.0 - 97) / 99, true},
		{Rule{Kind: Flat, A: 0.05}, one(98, 80), (98.0 - 80) / 98, false},
		{Rule{Kind: Rises, A: 0.1}, one(3.3, 3.2, 3.3), 1, false},
		{Rule{Kind: Rises, A: 1}, one(10, 30), 3, true},
		{Rule{Kind: Falls, A: 0.5}, one(3, 1), 1.0 / 3, true},
		{Rule{Kind: Ratio, A: 3}, two, 4, true},
		{Rule{Kind: Ratio, A: 4.5}, two, 4, false},
		{Rule{Kind: NearFirst, A: 0.05, B: 0.10}, one(100, 96, 91), 0.09, true},
		{Rule{Kind: NearFirst, A: 0.05, B: 0.10}, one(100, 94, 99), 0.06, false},
		{Rule{Kind: NearFirst, A: 0.05, B: 0.10}, one(100, 99, 89), 0.11, false},
		{Rule{Kind: NearFirst, A: 0.05}, one(100, 99, 94), 0.06, false},
		{Rule{Kind: NearFirst, A: 0.05, B: 0.10}, two, 0.5, false},
	} {
		ours, holds := c.r.apply(c.s)
		if holds != c.holds || abs(ours-c.ours) > 1e-9 {
			t.Errorf("%s on %v = %v, %v; want %v, %v", c.r, c.s.v, ours, holds, c.ours, c.holds)
		}
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// Every table is well formed: its rules' fields parse, its spec files end
// in .stack, its parameters are known (checked by planning the papers
// whose specs exist).
func TestTablesPlan(t *testing.T) {
	for _, p := range Papers {
		for _, e := range p.Experiments {
			if e.ID == "" || strings.ContainsAny(e.ID, " /:") || len(e.Measures) == 0 || len(e.Stacks) == 0 {
				t.Errorf("%s: experiment %q malformed", p.Name, e.ID)
			}
			for _, m := range e.Measures {
				if m.Known != "" && m.Why == nil {
					t.Errorf("%s/%s %s: a known deviation needs a Why measured on the runs", p.Name, e.ID, m.Metric)
				}
			}
		}
	}
	for _, name := range []string{"ricochet", "mflow", "qsm"} {
		p, _ := Lookup(name)
		for _, quick := range []bool{false, true} {
			if _, err := Plan(p, Options{SpecDir: "../../specs", Quick: quick}); err != nil {
				t.Errorf("Plan(%s, quick=%v): %v", name, quick, err)
			}
		}
	}
}

// FirstOnly judges the first stack and shows the others beside it; Last
// judges the parameter's last value alone.
func TestJudgeFirstOnlyAndLast(t *testing.T) {
	pl := &sweep.Plan{Config: sweep.Config{Stacks: []sweep.Stack{{Label: "qsm"}, {Label: "baseline"}}}}
	pl.Config.Params = []sweep.Param{{Name: "groups-per-node", Values: []string{"1", "64"}}}
	pl.Points = []sweep.Point{{"1"}, {"64"}}
	thr := map[[2]int]float64{{0, 0}: 1000, {0, 1}: 980, {1, 0}: 1000, {1, 1}: 300}
	var res []sweep.Result
	for k, v := range thr {
		res = append(res, sweep.Result{Job: sweep.Job{Stack: k[0], Point: k[1]}, Report: &experiment.Report{ThroughputMsgsPerS: v}})
	}
	m := Measure{Metric: "throughput", Field: "throughput_msgs_per_s", Rule: Rule{Kind: Flat, A: 0.05}}
	f, err := judge(&qsm, Experiment{ID: "groups"}, m, pl, res)
	if err != nil || f.Holds {
		t.Errorf("both stacks judged: holds %v, %v; want not (the baseline falls 70%%)", f.Holds, err)
	}
	m.FirstOnly = true
	f, err = judge(&qsm, Experiment{ID: "groups"}, m, pl, res)
	if err != nil || !f.Holds || !strings.Contains(f.OursText, "baseline") {
		t.Errorf("first only: holds %v, %v, text %q; want it to hold with the baseline shown", f.Holds, err, f.OursText)
	}
	m = Measure{Metric: "throughput", Field: "throughput_msgs_per_s", Rule: Rule{Kind: AtMost, A: 400}, Last: true}
	f, _ = judge(&qsm, Experiment{ID: "groups"}, m, pl, res)
	if f.Holds || f.Ours != 980 {
		t.Errorf("last: ours %v holds %v; want 980 (qsm at 64), not holding", f.Ours, f.Holds)
	}
}
