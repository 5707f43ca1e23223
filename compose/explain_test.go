package compose

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
)

func init() {
	// tsvc2 is a member layer that asks for tsvc_service with its own
	// interval, as gms asks for gms_service with its view_interval.
	Register(LayerInfo{Name: "tsvc2", Summary: "test: names its service.",
		Params: []Param{{Name: "interval", Type: Duration, Default: "100ms", Doc: "given to the service", Min: 0, Max: 3600}},
		New:    mkLayer("tsvc2"),
		Service: func(p Params) (ServiceNeed, error) {
			return ServiceNeed{Node: event.NodeID(99), Spec: fmt.Sprintf("tsvc_service(interval=%v)", p.Duration("interval"))}, nil
		}})
}

// check refuses a member spec whose service would be refused, as run does
// when it starts the service (tsvc_service takes at most 60s).
func TestCheckBuildsTheService(t *testing.T) {
	if err := Check(mustParse(t, "tsvc2(interval=30s)")); err != nil {
		t.Errorf("a service within its bounds: %v", err)
	}
	err := Check(mustParse(t, "tsvc2(interval=100s)"))
	if err == nil || !strings.Contains(err.Error(), "tsvc_service(interval=1m40s)") || !strings.Contains(err.Error(), "tsvc2") {
		t.Errorf("a service out of its bounds: err = %v, want it named with its spec", err)
	}
}

func TestCounterDocMatches(t *testing.T) {
	fixed := CounterDoc{Name: "acks_sent"}
	per := CounterDoc{Name: "blocks:<node>"}
	for _, c := range []struct {
		d    CounterDoc
		name string
		want bool
	}{
		{fixed, "acks_sent", true}, {fixed, "acks_sent2", false}, {fixed, "acks", false},
		{per, "blocks:n3", true}, {per, "blocks:", false}, {per, "blocked:n3", false},
	} {
		if got := c.d.Matches(c.name); got != c.want {
			t.Errorf("%q matches %q = %v, want %v", c.d.Name, c.name, got, c.want)
		}
	}
	info := LayerInfo{Counters: []CounterDoc{fixed, {Name: "peak", Kind: Peak, Role: BufferPeakRole}, per, {Name: "acks2", Role: AckRole}}}
	if got := info.CountersWith(AckRole); len(got) != 1 || got[0] != "acks2" {
		t.Errorf("CountersWith(AckRole) = %v", got)
	}
	if d := info.Counter("blocks:n12"); d == nil || d.Name != "blocks:<node>" {
		t.Errorf("Counter(blocks:n12) = %v", d)
	}
	if Peak.String() != "peak" || Nanos.String() != "ns" || CounterKind(42).String() != "?" {
		t.Error("kind names")
	}
}

// Two layers cannot add the same stacktool command.
func TestToolNameClash(t *testing.T) {
	run := func(Params, io.Writer) error { return nil }
	Register(LayerInfo{Name: "ttool1", Summary: "x", New: mkLayer("ttool1"), Tools: []Tool{{Name: "ttool", Run: run}}})
	defer func() {
		if recover() == nil {
			t.Error("a second layer registered the same tool name")
		}
	}()
	Register(LayerInfo{Name: "ttool2", Summary: "x", New: mkLayer("ttool2"), Tools: []Tool{{Name: "ttool", Run: run}}})
}

// A tool's flags are read like layer parameters: typed, with units and
// defaults; a missing required flag, a bad value or an unknown flag is one
// error naming the flag as the command line writes it.
func TestToolParse(t *testing.T) {
	tool := Tool{Name: "ttool", Flags: []ToolFlag{
		{Param: Param{Name: "n", Type: Int, Min: 2, Max: 100}, Required: true},
		{Param: Param{Name: "window", Type: Size, Default: "50KB"}},
		{Param: Param{Name: "delay", Type: Duration, Default: "2ms"}},
	}}
	p, err := tool.Parse(map[string]string{"n": "10", "delay": "1s"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Int("n") != 10 || p.Int("window") != 50000 || p.Duration("delay") != time.Second || p.Given("window") || !p.Given("n") {
		t.Errorf("Parse = n %d, window %d (given %v), delay %v; want 10, 50000 (default), 1s",
			p.Int("n"), p.Int("window"), p.Given("window"), p.Duration("delay"))
	}
	for given, want := range map[string]map[string]string{
		"--n is required":          {"window": "1KB"},
		"--n wants a whole number": {"n": "x"},
		"--n = 1 is out of range":  {"n": "1"},
		"--window: ":               {"n": "3", "window": "1KX"},
		"ttool has no flag --size": {"n": "3", "size": "1"},
	} {
		if _, err := tool.Parse(want); err == nil || !strings.HasPrefix(err.Error(), given) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%v) = %v, want one line starting %q", want, err, given)
		}
	}
}

// A tool flag's default that does not parse is a programming error caught
// at registration.
func TestToolBadDefault(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a tool flag with a bad default registered")
		}
	}()
	Register(LayerInfo{Name: "ttool3", Summary: "x", New: mkLayer("ttool3"), Tools: []Tool{{Name: "ttool3", Run: func(Params, io.Writer) error { return nil },
		Flags: []ToolFlag{{Param: Param{Name: "n", Type: Int, Default: "many"}}}}}})
}

// A summary's helpers: Max is the largest value at any node (not the sum),
// 0 with no nodes; Notef formats a note.
func TestSummaryHelpers(t *testing.T) {
	c := Counters{Nodes: []NodeCounters{
		{Node: 1, Values: map[string]int64{"peak": 3}},
		{Node: 2, Values: map[string]int64{"peak": 7}},
		{Node: 3, Values: map[string]int64{}},
	}}
	if got := c.Max("peak"); got != 7 {
		t.Errorf("Max(peak) = %d, want 7", got)
	}
	if got := (Counters{}).Max("peak"); got != 0 {
		t.Errorf("Max over no nodes = %d, want 0", got)
	}
	var s Summary
	s.Notef("%d of %s", 2, "x")
	if len(s.Notes) != 1 || s.Notes[0] != "2 of x" {
		t.Errorf("Notes = %q, want [\"2 of x\"]", s.Notes)
	}
}

// ExplainString is Load and Explain: the effective parameters of spec
// text, and the same refusal Explain gives.
func TestExplainString(t *testing.T) {
	ls, err := ExplainString("tratio(part=10KB)")
	if err != nil || len(ls) != 1 || ls[0].Info.Name != "tratio" || ls[0].Params.Int("part") != 10000 || ls[0].Params.Int("whole") != 50000 {
		t.Fatalf("ExplainString(tratio(part=10KB)) = %+v, %v; want tratio with part 10000 and whole 50000", ls, err)
	}
	if _, err := ExplainString("tratio(part=60KB)"); err == nil {
		t.Errorf("part larger than whole explained without error")
	}
	if _, err := ExplainString("tratio("); err == nil {
		t.Errorf("a spec that does not parse explained without error")
	}
}
