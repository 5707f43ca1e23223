package compose

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/stack"
)

// More test-only layers: tratio refuses a cross-parameter combination in its
// factory (as mflow does with ack_thresh above window), tsvc_service is a
// service node's layer (as gms_service is), tsvc its member side, and
// tord/tuser introduce and need a property compose does not know.
func init() {
	Register(LayerInfo{Name: "tratio", Summary: "test: part must not exceed whole.",
		Params: []Param{
			{Name: "whole", Type: Size, Default: "50KB", Doc: "the whole", Min: 1, Max: 1 << 31},
			{Name: "part", Type: Size, Default: "25KB", Doc: "at most whole", Min: 1, Max: 1 << 31},
		},
		New: func(p Params) (stack.Layer, error) {
			if p.Int("part") > p.Int("whole") {
				return nil, errors.New("tratio: part is larger than whole")
			}
			return mkLayer("tratio")(p)
		}})
	Register(LayerInfo{Name: "tsvc_service", Summary: "test: a service node's whole stack.",
		Params: []Param{{Name: "interval", Type: Duration, Default: "100ms", Doc: "batching", Min: 0, Max: 60}},
		Role:   ServiceRole, New: mkLayer("tsvc_service")})
	Register(LayerInfo{Name: "tsvc", Summary: "test: the member side of tsvc_service.", New: mkLayer("tsvc")})
	Register(LayerInfo{Name: "tord", Summary: "test: gives a new property.",
		Gives: []Property{"test-total-order"}, Properties: map[Property]string{"test-total-order": "test total order"},
		New: mkLayer("tord")})
	Register(LayerInfo{Name: "tuser", Summary: "test: needs the new property.",
		Needs: []Property{"test-total-order"}, New: mkLayer("tuser")})
	Register(LayerInfo{Name: "tpanic", Summary: "test: its factory panics.",
		New: func(Params) (stack.Layer, error) { panic("out of range") }})
}

// Check refuses what Build refuses: a factory's cross-parameter rule, a
// factory error, a factory panic, each as one SpecError at the layer.
func TestCheckRunsFactories(t *testing.T) {
	cases := []struct {
		src  string
		col  int
		want string
	}{
		{"tratio(whole=10KB, part=20KB)", 1, "tratio: part is larger than whole"},
		{"tfifo : treliable : tfail", 21, "tfail: cannot be built today"},
		{"tpanic", 1, "tpanic: its factory failed: out of range"},
	}
	for _, c := range cases {
		sp, err := Parse(c.src)
		if err != nil {
			t.Fatal(err)
		}
		var ce, be *SpecError
		if err := Check(sp); !errors.As(err, &ce) || ce.Col != c.col || ce.Msg != c.want {
			t.Errorf("Check(%q) = %v, want %q at column %d", c.src, err, c.want, c.col)
		}
		if _, err := Build(sp); !errors.As(err, &be) || ce == nil || be.Error() != ce.Error() {
			t.Errorf("Build(%q) = %v, want the error Check gives", c.src, err)
		}
	}
	// The same layer with parameters that fit passes both.
	if _, err := BuildString("tratio(whole=20KB, part=10KB)"); err != nil {
		t.Error(err)
	}
	if err := Check(mustParse(t, "tratio(part=50KB)")); err != nil {
		t.Errorf("part equal to the default whole: %v", err)
	}
}

func mustParse(t *testing.T, src string) *Spec {
	t.Helper()
	sp, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// A service layer is refused in a member spec, with the reason and the
// member side; a service spec takes only service layers.
func TestServiceRole(t *testing.T) {
	var se *SpecError
	err := Check(mustParse(t, "tfifo : treliable : tsvc_service"))
	if !errors.As(err, &se) || se.Col != 21 ||
		se.Msg != "tsvc_service is a service layer: it is a service node's whole stack, never part of a member's (a member stack holding it delivers nothing); did you mean tsvc, the member's side?" {
		t.Errorf("Check(member spec with a service layer) = %v", err)
	}
	if _, err := BuildString("tsvc_service"); err == nil {
		t.Error("Build of a service layer as a member's stack succeeded")
	}
	// The member side is a member layer.
	if err := Check(mustParse(t, "tsvc : tfifo : treliable")); err != nil {
		t.Error(err)
	}
	// A service's stack: service layers only.
	es, err := BuildService(mustParse(t, "tsvc_service(interval=5ms)"))
	if err != nil || len(es) != 1 || es[0].Layer.(*fakeLayer).params.Duration("interval") != 5*time.Millisecond {
		t.Errorf("BuildService = %v, %v", es, err)
	}
	if _, err := ExplainService(mustParse(t, "tsvc_service : treliable")); err == nil ||
		!strings.Contains(err.Error(), "treliable is a member layer, not a service's") {
		t.Errorf("ExplainService(with a member layer) = %v", err)
	}
	// Suggestions and "what gives it" hints stay within the role.
	if err := Check(mustParse(t, "tsvc_servic")); err == nil || strings.Contains(err.Error(), "tsvc_service") {
		t.Errorf("a member spec was pointed at a service layer: %v", err)
	}
}

// A property a layer introduces reads in the layer's words, and the layers
// that give it are suggested, without compose knowing it.
func TestLayerDeclaredProperty(t *testing.T) {
	err := Check(mustParse(t, "tuser : treliable"))
	want := "tuser needs test total order below it; nothing below gives it (tord does: put it below tuser)"
	var se *SpecError
	if !errors.As(err, &se) || se.Msg != want {
		t.Errorf("Check = %v\nwant %s", err, want)
	}
	if err := Check(mustParse(t, "tuser : tord")); err != nil {
		t.Error(err)
	}
	// Two layers may not describe one property in different words.
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `already described as "test total order"`) {
			t.Errorf("conflicting words: recover() = %v", r)
		}
	}()
	Register(LayerInfo{Name: "tord2", Summary: "x", New: func(Params) (stack.Layer, error) { return nil, nil },
		Properties: map[Property]string{"test-total-order": "something else"}})
}

// Explain gives every parameter's effective value, whether it was given, and
// what the stack gives.
func TestExplain(t *testing.T) {
	ls, err := Explain(mustParse(t, "tflow(window=64KiB) : tfifo : treliable(loss=7%, label=\"a b\") : tgms"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range ls {
		for _, p := range l.Params.Schema() {
			mark := ""
			if l.Params.Given(p.Name) {
				mark = " (given)"
			}
			got[l.Info.Name+"."+p.Name] = l.Params.Text(p.Name) + mark
		}
	}
	want := map[string]string{
		"tflow.window": "64KiB (given)", "tflow.stagger": "on", "tflow.mode": "bulk",
		"tfifo.max_reorder":   "4096",
		"treliable.nak_delay": "20ms", "treliable.nak_retry": "20ms", "treliable.max_buffer": "4MB",
		"treliable.loss": "7% (given)", "treliable.label": `"a b" (given)`,
	}
	if len(got) != len(want) {
		t.Errorf("got %d parameters, want %d: %v", len(got), len(want), got)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %q, want %q", k, got[k], w)
		}
	}
	gives := Gives(ls)
	if len(gives) != 5 || gives[0] != Views || gives[1] != Regions || gives[2] != Reliable || gives[3] != FIFO || gives[4] != FlowControl {
		t.Errorf("Gives = %v, want bottom first: views, regions, reliable, fifo, flow-control", gives)
	}
}

// Format writes what the parser reads back: each type, units and bounds.
func TestFormatRoundTrip(t *testing.T) {
	// Per parameter, pairs of what is read and what Format writes.
	cases := []struct {
		p     Param
		pairs []string
	}{
		{Param{Name: "n", Type: Int}, []string{"-12", "-12"}},
		{Param{Name: "f", Type: Float}, []string{"0.1", "0.1"}},
		{Param{Name: "b", Type: Bool}, []string{"yes", "on", "0", "off"}},
		// 100us, not 100µs: the spec grammar is ASCII
		{Param{Name: "d", Type: Duration}, []string{"1500ms", "1.5s", "0", "0s", "0.1ms", "100us"}},
		{Param{Name: "s", Type: Size}, []string{"4MB", "4MB", "65536", "64KiB", "1.5KB", "1500B", "0", "0B", "2GiB", "2GiB"}},
		{Param{Name: "p", Type: Percent}, []string{"0.07", "7%", "12.5%", "12.5%"}},
		{Param{Name: "e", Type: Enum, Choices: []string{"lru", "fifo"}}, []string{"lru", "lru"}},
		{Param{Name: "t", Type: String}, []string{"x,y", `"x,y"`}},
	}
	for _, c := range cases {
		for k := 0; k < len(c.pairs); k += 2 {
			checkFormat(t, c.p, c.pairs[k], c.pairs[k+1])
		}
	}
	if _, err := ParseSize("99999999999GB"); err == nil {
		t.Error("ParseSize accepted a size past int64")
	}
}

// checkFormat checks that p reads in, Format writes want, and the spec
// parser reads want back to the same value (as check -v's output would be
// read).
func checkFormat(t *testing.T, p Param, in, want string) {
	t.Helper()
	v, err := p.ParseValue(in)
	if err != nil {
		t.Fatalf("%s %q: %v", p.Type, in, err)
	}
	text := p.Format(v)
	if text != want {
		t.Errorf("%s %q formats as %q, want %q", p.Type, in, text, want)
	}
	sp, err := Parse("x(v=" + text + ")")
	if err != nil {
		t.Fatalf("%q does not parse back: %v", text, err)
	}
	back, err := p.ParseValue(sp.Layers[0].Args[0].Value)
	if err != nil || back.I != v.I || back.B != v.B || back.D != v.D || back.S != v.S || back.F != v.F {
		t.Errorf("%s %q: %q reads back as %+v, %v; want %+v", p.Type, in, text, back, err, v)
	}
}

// FuzzFormatRoundTrip: whatever text a parameter accepts, Format writes a
// value that a spec reads back to the same value.
func FuzzFormatRoundTrip(f *testing.F) {
	for _, s := range []string{"20ms", "1.5h", "0", "4MB", "1.5KB", "65536", "5%", "0.07", "0.123456789012345", "1e-3", "-12", "on", "x,y", `a"b`} {
		f.Add(s)
	}
	types := []ParamType{Int, Float, Bool, Duration, Size, Percent, String}
	f.Fuzz(func(t *testing.T, text string) {
		for _, ty := range types {
			p := Param{Name: "v", Type: ty}
			v, err := p.ParseValue(text)
			if err != nil {
				continue
			}
			out := p.Format(v)
			sp, err := Parse("x(v=" + out + ")")
			if err != nil {
				t.Fatalf("%s %q: Format gave %q, which does not parse: %v", ty, text, out, err)
			}
			back, err := p.ParseValue(sp.Layers[0].Args[0].Value)
			if err != nil || back != v {
				t.Fatalf("%s %q: Format gave %q, read back as %+v, %v; want %+v", ty, text, out, back, err, v)
			}
		}
	})
}

// tcfg is a configuration with its own Check, as reliable's and mflow's.
type tcfg struct{ n int }

func (c tcfg) Check() error {
	if c.n < 1 {
		return errors.New("tcfg: n must be at least 1")
	}
	return nil
}

type tcfgLayer struct {
	stack.Base
	cfg tcfg
}

// NewIfValid makes the layer from a configuration that passes its Check,
// and only then.
func TestNewIfValid(t *testing.T) {
	mk := func(c tcfg) *tcfgLayer { return &tcfgLayer{cfg: c} }
	l, err := NewIfValid(tcfg{n: 2}, mk)
	if tl, ok := l.(*tcfgLayer); err != nil || !ok || tl.cfg.n != 2 {
		t.Errorf("valid config: %v, %v; want the layer made from it", l, err)
	}
	if l, err := NewIfValid(tcfg{n: 0}, mk); l != nil || err == nil || err.Error() != "tcfg: n must be at least 1" {
		t.Errorf("invalid config: %v, %v; want no layer and Check's error", l, err)
	}
}
