package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/experiment"
	_ "github.com/layercast/layercast/layers/all"
)

func mustParam(t *testing.T, text string) Param {
	t.Helper()
	p, err := ParseParam(text)
	if err != nil {
		t.Fatalf("ParseParam(%q): %v", text, err)
	}
	return p
}

func mustSpec(t *testing.T, src string) Stack {
	t.Helper()
	sp, err := compose.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return Stack{Label: Label(sp), Spec: sp}
}

func small() experiment.Scenario {
	sc := experiment.Default()
	sc.Nodes, sc.GroupsPerNode, sc.GroupSize = 8, 2, 4
	sc.Duration, sc.Drain = 500*time.Millisecond, time.Second
	return sc
}

// A layer parameter is written into every call of its layer (replacing
// the value given or adding the argument), and a spec without the layer
// runs unchanged and is named flat.
func TestPlanRewritesLayerParams(t *testing.T) {
	cfg := Config{
		Stacks: []Stack{mustSpec(t, "fifo : reliable : lec(r=8, c=5)"), mustSpec(t, "fifo : reliable")},
		Params: []Param{mustParam(t, "lec.r=4,16"), mustParam(t, "reliable.nak_delay=20ms")},
		Base:   small(),
		Seeds:  2,
	}
	pl, err := NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Points) != 2 || len(pl.Jobs) != 2*2*2 {
		t.Fatalf("%d points, %d jobs; want 2 and 8", len(pl.Points), len(pl.Jobs))
	}
	want := map[string]bool{
		"fifo : reliable(nak_delay=20ms) : lec(r=4, c=5)":  false,
		"fifo : reliable(nak_delay=20ms) : lec(r=16, c=5)": false,
		"fifo : reliable(nak_delay=20ms)":                  false,
	}
	for _, j := range pl.Jobs {
		s := j.Spec.String()
		if _, ok := want[s]; !ok {
			t.Errorf("job runs %q, not one of the expected specs", s)
		}
		want[s] = true
		if j.Seed != cfg.Base.Seed && j.Seed != cfg.Base.Seed+1 {
			t.Errorf("job seed %d, want %d or %d", j.Seed, cfg.Base.Seed, cfg.Base.Seed+1)
		}
	}
	for s, seen := range want {
		if !seen {
			t.Errorf("no job runs %q", s)
		}
	}
	if len(pl.Flat[1]) != 1 || pl.Flat[1][0] != "lec.r" || len(pl.Flat[0]) != 0 {
		t.Errorf("Flat = %v, want only stack 1 flat along lec.r", pl.Flat)
	}
	// The original spec is untouched.
	if got := cfg.Stacks[0].Spec.String(); got != "fifo : reliable : lec(r=8, c=5)" {
		t.Errorf("input spec changed to %q", got)
	}
}

// A combination a layer's constructor refuses is refused before any run.
func TestPlanRefusesBadPoint(t *testing.T) {
	for _, c := range []struct {
		params []string
		want   string
	}{
		{[]string{"group-size=4,16"}, "larger than the number of nodes"},
		{[]string{"group-size=4,3"}, "not divisible"},
	} {
		cfg := Config{Stacks: []Stack{mustSpec(t, "fifo : reliable")}, Base: small()}
		for _, p := range c.params {
			cfg.Params = append(cfg.Params, mustParam(t, p))
		}
		_, err := NewPlan(cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one mentioning %q", c.params, err, c.want)
		}
	}
}

// The first parameter varies slowest; the points cover every combination.
func TestPlanPointOrder(t *testing.T) {
	cfg := Config{
		Stacks: []Stack{mustSpec(t, "fifo : reliable")},
		Params: []Param{mustParam(t, "rate=10,20"), mustParam(t, "msg-size=100,200,300")},
		Base:   small(),
	}
	pl, err := NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pt := range pl.Points {
		got = append(got, strings.Join(pt, "/"))
	}
	if want := "10/100 10/200 10/300 20/100 20/200 20/300"; strings.Join(got, " ") != want {
		t.Errorf("points %v, want %s", got, want)
	}
}

// Results do not depend on how many workers ran them: the same seeds give
// the same reports, in plan order.
func TestRunDeterministicAcrossWorkers(t *testing.T) {
	cfg := Config{
		Stacks: []Stack{mustSpec(t, "fifo : reliable"), mustSpec(t, "fifo : reliable : lec")},
		Params: []Param{mustParam(t, "loss=uniform:2%,uniform:10%")},
		Base:   small(),
		Seeds:  2,
	}
	var outs [2]string
	for i, w := range []int{1, 3} {
		cfg.Workers = w
		pl, err := NewPlan(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var calls, last int
		res, err := Run(context.Background(), pl, func(_ float64, n int) { calls++; last = n })
		if err != nil {
			t.Fatal(err)
		}
		if last != len(pl.Jobs) || calls < len(pl.Jobs) {
			t.Errorf("workers %d: progress called %d times, last with %d runs done; want >= %d and %d", w, calls, last, len(pl.Jobs), len(pl.Jobs))
		}
		for j := range res {
			res[j].Report = res[j].Report.Mask()
		}
		var b bytes.Buffer
		if err := WriteCSV(&b, pl, res); err != nil {
			t.Fatal(err)
		}
		outs[i] = b.String()
		rows := Aggregate(pl, res)
		if len(rows) != 4 {
			t.Fatalf("%d rows, want 4", len(rows))
		}
		for _, r := range rows {
			if s := r.Metrics["delivered_fraction"]; s.N != 2 || s.Mean != 1 {
				t.Errorf("%s %v: delivered %+v, want all delivered over 2 seeds", r.Stack, r.Values, s)
			}
		}
		// lec recovers most losses at once, the NAK baseline after its delay.
		if a, b := rows[2].Metrics["recovery_latency_mean_ms"].Mean, rows[3].Metrics["recovery_latency_mean_ms"].Mean; !(b < a) {
			t.Errorf("recovery latency at 10%% loss: baseline %.2f ms, lec %.2f ms; want lec faster", a, b)
		}
	}
	if outs[0] != outs[1] {
		t.Errorf("1 and 3 workers give different results:\n%s\n---\n%s", outs[0], outs[1])
	}
}

func TestStat(t *testing.T) {
	s := newStat([]float64{2, 4, 4, 4, 5, 5, 7, 9})
	if s.Mean != 5 || s.Min != 2 || s.Max != 9 || s.N != 8 {
		t.Errorf("stat %+v", s)
	}
	if d := s.SD - 2.138089935; d > 1e-6 || d < -1e-6 {
		t.Errorf("sample SD %v, want 2.138", s.SD)
	}
	if one := newStat([]float64{3}); one.SD != 0 || one.Mean != 3 {
		t.Errorf("one value: %+v", one)
	}
}

func TestAxis(t *testing.T) {
	for _, c := range []struct {
		param string
		log   bool
		xs    []float64
		label string
	}{
		{"groups-per-node=2,8,32,128", true, []float64{2, 8, 32, 128}, "groups per node"},
		{"groups-per-node=2,4,8", false, []float64{2, 4, 8}, "groups per node"},
		{"latency=500us,1ms,10ms", false, []float64{0.5, 1, 10}, "(ms)"},
		{"latency=500us,1ms,20ms", true, []float64{0.5, 1, 20}, "(ms)"},
		{"loss=uniform:1%,uniform:5%", false, []float64{1, 5}, "loss rate (%)"},
		{"loss=none;bursty:5%,10", false, []float64{0, 1}, "loss"},
		{"rate=max,100", false, []float64{0, 1}, "msgs/s"},
		{"reliable.nak_delay=10ms,100ms", false, []float64{10, 100}, "(ms)"},
	} {
		p, err := ParseParam(c.param)
		if err != nil {
			t.Errorf("%s: %v", c.param, err)
			continue
		}
		a := NewAxis(&p)
		if a.Log != c.log || !strings.Contains(a.Label, c.label) || len(a.X) != len(c.xs) {
			t.Errorf("%s: axis %+v, want log=%v, label with %q, x %v", c.param, a, c.log, c.label, c.xs)
			continue
		}
		for i := range c.xs {
			if a.X[i] != c.xs[i] {
				t.Errorf("%s: x %v, want %v", c.param, a.X, c.xs)
				break
			}
		}
	}
}

func TestOutputJSONRoundTrip(t *testing.T) {
	cfg := Config{Stacks: []Stack{mustSpec(t, "fifo : reliable")}, Params: []Param{mustParam(t, "rate=50")}, Base: small()}
	pl, err := NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), pl, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, NewOutput(pl, res, Aggregate(pl, res))); err != nil {
		t.Fatal(err)
	}
	var o Output
	if err := json.Unmarshal(b.Bytes(), &o); err != nil {
		t.Fatal(err)
	}
	if len(o.Runs) != 1 || o.Runs[0].Values["rate"] != "50" || o.Runs[0].Report.MessagesSent == 0 || len(o.Metrics) != len(Metrics) {
		t.Errorf("round trip lost data: %+v", o)
	}
}

// FuzzParseParam: any --param text is a Param or one error, never a panic,
// and a Param has at least one value, none repeated or empty.
func FuzzParseParam(f *testing.F) {
	for _, s := range []string{"groups-per-node=2,8,32,128", "lec.r=4,8", "loss=uniform:5%,bursty:5%,10", "=", "a.b.c=1", "rate=max,1e9", "reliable.nak_delay=1ms,,2", "nodes=08,8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseParam(s)
		if err != nil {
			return
		}
		if len(p.Values) == 0 {
			t.Fatalf("%q: no values", s)
		}
		seen := map[string]bool{}
		for _, v := range p.Values {
			if v == "" || seen[v] {
				t.Fatalf("%q: values %q", s, p.Values)
			}
			seen[v] = true
		}
	})
}

// Verdicts name the best stack, those tied with it together, and compare
// them with the best of the others (not with a tied one).
func TestVerdictsTies(t *testing.T) {
	pl := &Plan{Config: Config{Metrics: Metrics[2:3]}} // latency p99: lower is better
	row := func(stack string, v float64) Row {
		return Row{Stack: stack, Metrics: map[string]Stat{Metrics[2].Key: {Mean: v}}}
	}
	for _, c := range []struct {
		rows       []Row
		best, next string
	}{
		{[]Row{row("a", 2.408), row("b", 121), row("c", 2.408)}, "a and c", "b"},
		{[]Row{row("a", 5), row("b", 3), row("c", 4)}, "b", "c"},
		{[]Row{row("a", 1), row("b", 1)}, "a and b", "b"},
	} {
		v := Verdicts(pl, c.rows)[0]
		if v.Best != c.best || v.Next != c.next {
			t.Errorf("Verdicts(%v) = best %q next %q, want %q and %q (%s)", c.rows, v.Best, v.Next, c.best, c.next, v)
		}
	}
}

// Scenario keys joined by + take each value together: nodes+group-size
// sweeps one group spanning every node.
func TestJoinedParam(t *testing.T) {
	p := mustParam(t, "nodes+group-size=4,8")
	pl, err := NewPlan(Config{Stacks: []Stack{mustSpec(t, "fifo : reliable")}, Params: []Param{p}, Base: small()})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{4, 8} {
		sc := pl.Jobs[i].Scenario
		if sc.Nodes != want || sc.GroupSize != want {
			t.Errorf("job %d: nodes %d, group-size %d; want both %d", i, sc.Nodes, sc.GroupSize, want)
		}
	}
	for _, bad := range []string{"nodes+lec.r=4", "nodes+nosuch=4", "nodes+group-size=x"} {
		if _, err := ParseParam(bad); err == nil {
			t.Errorf("ParseParam(%q): no error", bad)
		}
	}
}
