package compose

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// fakeLayer is a do-nothing layer that remembers the parameters it was built
// with, so tests can see what Build passed.
type fakeLayer struct {
	stack.Base
	name   string
	params Params
}

func (*fakeLayer) Up(*event.Event)   {}
func (*fakeLayer) Down(*event.Event) {}
func (*fakeLayer) Timer(uint64)      {}

// mkLayer makes a test layer's factory.
func mkLayer(name string) Factory {
	return func(p Params) (stack.Layer, error) { return &fakeLayer{name: name, params: p}, nil }
}

// Test-only layers, named so they cannot collide with real ones (compose
// tests never import layers/*). They mirror the real properties: tfifo needs
// reliable and gives fifo, tflow needs both.
func init() {
	Register(LayerInfo{Name: "treliable", Summary: "test: gives reliable delivery.",
		Params: []Param{
			{Name: "nak_delay", Type: Duration, Default: "20ms", Doc: "delay before a NAK", Min: 0, Max: 60},
			{Name: "nak_retry", Type: Duration, Default: "20ms", Doc: "between NAK rounds", Min: 0.001, Max: 60},
			{Name: "max_buffer", Type: Size, Default: "4MB", Doc: "buffer bytes", Min: 1, Max: 1 << 40},
			{Name: "loss", Type: Percent, Default: "0%", Doc: "a share"},
			{Name: "label", Type: String, Default: "", Doc: "free text"},
		},
		Gives: []Property{Reliable}, New: mkLayer("treliable")})
	Register(LayerInfo{Name: "tfifo", Summary: "test: FIFO over reliable.",
		Params: []Param{{Name: "max_reorder", Type: Int, Default: "4096", Doc: "held messages", Min: 1, Max: 1 << 24}},
		Needs:  []Property{Reliable}, Gives: []Property{FIFO}, New: mkLayer("tfifo")})
	Register(LayerInfo{Name: "tflow", Summary: "test: flow control.",
		Params: []Param{
			{Name: "window", Type: Size, Default: "50000", Doc: "credit", Min: 1, Max: 1 << 31},
			{Name: "stagger", Type: Bool, Default: "on", Doc: "stagger acks"},
			{Name: "mode", Type: Enum, Default: "bulk", Doc: "how", Choices: []string{"bulk", "each"}},
		},
		Needs: []Property{Reliable, FIFO}, Gives: []Property{FlowControl}, New: mkLayer("tflow")})
	Register(LayerInfo{Name: "tgms", Summary: "test: views.",
		Gives: []Property{Views, Regions}, New: mkLayer("tgms")})
	Register(LayerInfo{Name: "tfail", Summary: "test: its factory refuses.",
		New: func(Params) (stack.Layer, error) { return nil, errors.New("cannot be built today") }})
}

// stripPos drops positions and source, leaving what a spec means.
func stripPos(s *Spec) []Call {
	out := make([]Call, len(s.Layers))
	for i, c := range s.Layers {
		out[i] = Call{Name: c.Name}
		for _, a := range c.Args {
			out[i].Args = append(out[i].Args, Arg{Key: a.Key, Value: a.Value})
		}
	}
	return out
}

func TestParseCanonicalRoundTrip(t *testing.T) {
	cases := []struct{ in, want string }{
		{"fifo", "fifo"},
		{"fifo:reliable", "fifo : reliable"},
		{"  fifo  :reliable( nak_delay = 20ms ):lec(r=8,c=5)  ", "fifo : reliable(nak_delay=20ms) : lec(r=8, c=5)"},
		{"a(x=5%, y=0.05, z=50KB, w=-1, v=1e-3)", "a(x=5%, y=0.05, z=50KB, w=-1, v=1e-3)"},
		{`a(s="hello world", t="on", u="", q="say \"hi\"")`, `a(s="hello world", t=on, u="", q="say \"hi\"")`},
		{"a(on=true, off=off,)", "a(on=true, off=off)"},
		{"a()", "a"},
		{"gms_service", "gms_service"},
	}
	for _, c := range cases {
		sp, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if got := sp.String(); got != c.want {
			t.Errorf("Parse(%q).String() = %q, want %q", c.in, got, c.want)
		}
		again, err := Parse(sp.String())
		if err != nil {
			t.Errorf("Parse(%q) of the canonical form: %v", sp.String(), err)
			continue
		}
		if !reflect.DeepEqual(stripPos(sp), stripPos(again)) {
			t.Errorf("round trip of %q changed it: %+v then %+v", c.in, stripPos(sp), stripPos(again))
		}
	}
}

func TestParseCommentsWrappingPositions(t *testing.T) {
	src := "# the baseline\n" +
		"fifo :   # per-sender order\n" +
		"  reliable(nak_delay=20ms,\n" +
		"\tnak_retry = 5ms) # after the last layer\n" +
		"# trailing comment\n"
	sp, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sp.String(), "fifo : reliable(nak_delay=20ms, nak_retry=5ms)"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	r := sp.Layers[1]
	if r.Pos != (Pos{3, 3}) {
		t.Errorf("reliable at %v, want 3:3", r.Pos)
	}
	if a := r.Args[1]; a.KeyPos != (Pos{4, 2}) || a.ValuePos != (Pos{4, 14}) {
		t.Errorf("nak_retry key at %v value at %v, want 4:2 and 4:14", a.KeyPos, a.ValuePos)
	}
	// Columns count characters, not bytes.
	sp, err = Parse("a(s=\"héllo\", t=1)")
	if err != nil {
		t.Fatal(err)
	}
	if got := sp.Layers[0].Args[1].KeyPos; got != (Pos{1, 14}) {
		t.Errorf("t after a multi-byte character at %v, want 1:14", got)
	}
}

// specErr parses or checks src and returns the SpecError it must give.
func specErr(t *testing.T, src string) *SpecError {
	t.Helper()
	sp, err := Parse(src)
	if err == nil {
		err = Check(sp)
	}
	if err == nil {
		t.Fatalf("%q: no error", src)
	}
	var se *SpecError
	if !errors.As(err, &se) {
		t.Fatalf("%q: error %T %v is not a *SpecError", src, err, err)
	}
	return se
}

func TestSpecErrors(t *testing.T) {
	cases := []struct {
		src       string
		line, col int
		msg       string
	}{
		{"tfifo:trelaible", 1, 7, `unknown layer "trelaible"; did you mean "treliable"?`},
		{"tfifo : treliable(nak_dealy=20ms)", 1, 19, `layer treliable has no parameter "nak_dealy"; did you mean "nak_delay"?`},
		{"tfifo : treliable(zzz=1)", 1, 19, `layer treliable has no parameter "zzz"; its parameters are nak_delay, nak_retry, max_buffer, loss, label`},
		{"tgms(x=1)", 1, 6, `layer tgms has no parameter "x"; it takes no parameters`},
		{"tfifo : treliable(nak_delay=20)", 1, 29, `nak_delay: want a duration with a unit such as 20ms or 2s, got "20"`},
		{"tfifo : treliable(nak_delay=2h)", 1, 29, `nak_delay = 2h is out of range [0s, 1m0s]`},
		{"tfifo : treliable(loss=150%)", 1, 24, `loss: percentage "150%" is outside 0% to 100%`},
		{"tflow(window=5%) : tfifo : treliable", 1, 14, `window: unknown size unit "%" in "5%"`},
		{"tflow(stagger=maybe) : tfifo : treliable", 1, 15, `stagger wants on or off, got "maybe"`},
		{"tflow(mode=all) : tfifo : treliable", 1, 12, `mode wants one of bulk, each, got "all"`},
		{"tfifo(max_reorder=1.5) : treliable", 1, 19, `max_reorder wants a whole number, got "1.5"`},
		{"tfifo : treliable(nak_delay=20ms, nak_delay=3ms)", 1, 35, `duplicate parameter nak_delay of treliable (first set at 1:19)`},
		{"tfifo : treliable(nak_delay=20ms", 1, 18, `missing ')' to close the parameters of treliable`},
		{"tfifo : treliable(nak_delay=20ms : tgms", 1, 34, `missing ')' before ':'`},
		{"tfifo : treliable(nak_delay=20ms nak_retry=1ms)", 1, 34, `missing ',' between parameters nak_delay and nak_retry`},
		{"tfifo : treliable(nak_delay)", 1, 28, `expected '=' after parameter nak_delay, found ')'`},
		{"tfifo : treliable(nak_delay=)", 1, 28, `missing value for parameter nak_delay after '='`},
		{"tfifo : treliable(=1)", 1, 19, `expected a parameter name in treliable(...), found '='`},
		{"tfifo :: treliable", 1, 8, `stray ':': two colons with no layer between them`},
		{": tfifo", 1, 1, `stray ':' before the first layer`},
		{"tfifo : treliable :\n  # nothing more\n", 1, 19, `stray ':' at the end: a layer must follow it`},
		{"tfifo treliable", 1, 7, `expected ':' between layers tfifo and treliable`},
		{"tfifo : treliable)", 1, 18, `unmatched ')' after layer treliable`},
		{"tfifo ; treliable", 1, 7, `layers are separated by ':', not ';'`},
		{"tfifo , treliable", 1, 7, `layers are separated by ':', not ','`},
		{"tfifo : treliable & tgms", 1, 19, `unexpected character '&'`},
		{"tfifo : treliable nak_delay=1ms", 1, 19, `parameters go in parentheses after the layer: treliable(nak_delay=...)`},
		{"tfifo : treliable(nak_delay=20 ms)", 1, 32, `space between 20 and its unit ms: write 20ms`},
		{"tfifo(nak_delay=20ms) : treliable", 1, 7, `layer tfifo has no parameter "nak_delay"; treliable has one: did you mean treliable(nak_delay=20ms)?`},
		{"tfifo : 8", 1, 9, `expected a layer name, found 8`},
		{`tfifo : treliable(label="open`, 1, 25, `unterminated string`},
		{"tfifo : treliable : treliable", 1, 21, `layer treliable appears twice (first at 1:9)`},
		{"tfifo", 1, 1, `tfifo needs reliable delivery below it; nothing below gives it`},
		{"treliable : tfifo", 1, 13, `tfifo needs reliable delivery below it; nothing below gives it; treliable gives it but is above tfifo (specs list layers top first)`},
		{"tflow : treliable", 1, 1, `tflow needs FIFO order below it; nothing below gives it`},
		{"tflow : treliable : tfifo : tgms", 1, 21, `tfifo needs reliable delivery below it`},
		{"\n\n  tfifo :\n    trelable(nak_delay=1ms)", 4, 5, `unknown layer "trelable"; did you mean "treliable"?`},
		{"TFIFO : treliable", 1, 1, `unknown layer "TFIFO"; did you mean "tfifo"?`},
		{"tfi : treliable", 1, 1, `unknown layer "tfi"; did you mean "tfifo"?`},
	}
	for _, c := range cases {
		se := specErr(t, c.src)
		if se.File != "spec" || se.Line != c.line || se.Col != c.col || !strings.Contains(se.Msg, c.msg) {
			t.Errorf("%q:\n got  %s:%d:%d: %s\n want spec:%d:%d: %s...", c.src, se.File, se.Line, se.Col, se.Msg, c.line, c.col, c.msg)
		}
	}
}

func TestUnknownLayerWithoutNearName(t *testing.T) {
	se := specErr(t, "zebra : treliable")
	if !strings.Contains(se.Msg, "known layers: ") || !strings.Contains(se.Msg, "treliable") || strings.Contains(se.Msg, "did you mean") {
		t.Errorf("got %q, want the list of known layers and no guess", se.Msg)
	}
}

func TestSpecErrorCaret(t *testing.T) {
	se := specErr(t, "tfifo:trelaible")
	want := "spec:1:7: unknown layer \"trelaible\"; did you mean \"treliable\"?\n" +
		"    tfifo:trelaible\n" +
		"          ^"
	if se.Error() != want {
		t.Errorf("Error() =\n%s\nwant\n%s", se.Error(), want)
	}
	// On a later line, with a tab before the error: the caret still sits
	// under the offending character.
	se = specErr(t, "tfifo :\n\ttreliable(nak_delay=5)")
	lines := strings.Split(se.Error(), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "spec:2:22: ") {
		t.Fatalf("Error() = %q", se.Error())
	}
	caret := strings.Index(lines[2], "^")
	if lines[1][caret] != '5' {
		t.Errorf("caret under %q, want under the value 5:\n%s", lines[1][caret], se.Error())
	}
}

func TestEmptySpec(t *testing.T) {
	for _, src := range []string{"", "   \n\t", "# only a comment\n# and another"} {
		_, err := Parse(src)
		if err == nil || !strings.Contains(err.Error(), "empty spec: no layers") {
			t.Errorf("Parse(%q) = %v, want empty spec", src, err)
		}
	}
	if err := Check(&Spec{}); err == nil || !strings.Contains(err.Error(), "empty spec") {
		t.Errorf("Check(empty) = %v", err)
	}
}

func TestLoadFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.stack")
	if err := os.WriteFile(good, []byte("# comment\ntfifo :\n  treliable(nak_delay=5ms)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if sp.File != good || sp.String() != "tfifo : treliable(nak_delay=5ms)" {
		t.Errorf("Load = %q from %q", sp.String(), sp.File)
	}
	if err := Check(sp); err != nil {
		t.Errorf("Check: %v", err)
	}

	// Errors in a file name the file and quote the line.
	bad := filepath.Join(dir, "bad.stack")
	os.WriteFile(bad, []byte("# comment\ntfifo :\n  trelaible\n"), 0o644)
	sp, err = Load(bad)
	if err != nil {
		t.Fatal(err)
	}
	err = Check(sp)
	want := bad + ":3:3: unknown layer \"trelaible\"; did you mean \"treliable\"?\n      trelaible\n      ^"
	if err == nil || err.Error() != want {
		t.Errorf("Check(bad.stack) =\n%v\nwant\n%s", err, want)
	}

	// Missing or unreadable files: one line naming the file.
	for _, name := range []string{filepath.Join(dir, "missing.stack"), filepath.Join(dir, "nothere/x"), dir + "/"} {
		_, err := Load(name)
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "cannot read spec file "+name) {
			t.Errorf("Load(%q) = %v, want one line naming the file", name, err)
		}
	}
	empty := filepath.Join(dir, "empty.stack")
	os.WriteFile(empty, []byte("# nothing but comments\n"), 0o644)
	if _, err := Load(empty); err == nil || err.Error() != empty+": empty spec: no layers (write them top first, e.g. fifo : reliable)" {
		t.Errorf("Load(empty file) = %v", err)
	}
	// Spec text is not mistaken for a file.
	if sp, err := Load("tfifo:treliable"); err != nil || sp.File != "" {
		t.Errorf("Load(spec text) = %v, %v", sp, err)
	}
}

func TestBuild(t *testing.T) {
	src := "tflow(window=10KB, stagger=off) : tfifo : treliable(nak_delay=5ms, loss=5%) : tgms"
	sp, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Build(sp)
	if err != nil {
		t.Fatal(err)
	}
	b := MustBuild(src)
	names := []string{"tflow", "tfifo", "treliable", "tgms"}
	if len(a) != len(names) || len(b) != len(names) {
		t.Fatalf("built %d and %d layers, want %d", len(a), len(b), len(names))
	}
	for i, n := range names {
		if a[i].Name != n || a[i].Layer.(*fakeLayer).name != n {
			t.Errorf("entry %d is %s, want %s (top first)", i, a[i].Name, n)
		}
		if a[i].Layer == b[i].Layer {
			t.Errorf("%s: two builds share one instance", n)
		}
	}
	flow := a[0].Layer.(*fakeLayer).params
	if flow.Int("window") != 10000 || flow.Bool("stagger") || flow.String("mode") != "bulk" {
		t.Errorf("tflow params: window %d stagger %v mode %q", flow.Int("window"), flow.Bool("stagger"), flow.String("mode"))
	}
	rel := a[2].Layer.(*fakeLayer).params
	if rel.Duration("nak_delay") != 5*time.Millisecond || rel.Duration("nak_retry") != 20*time.Millisecond ||
		rel.Float("loss") != 0.05 || rel.Int("max_buffer") != 4_000_000 {
		t.Errorf("treliable params: %v %v %v %v", rel.Duration("nak_delay"), rel.Duration("nak_retry"), rel.Float("loss"), rel.Int("max_buffer"))
	}

	// Build refuses what Check refuses, and reports factory errors at the
	// layer.
	if _, err := BuildString("tfifo"); err == nil {
		t.Error("BuildString(tfifo) built a stack that breaks a property")
	}
	_, err = BuildString("tfifo : treliable : tfail")
	var se *SpecError
	if !errors.As(err, &se) || se.Col != 21 || se.Msg != "tfail: cannot be built today" {
		t.Errorf("factory error = %v", err)
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"abc", "", 3}, {"relaible", "reliable", 1}, {"nak_dealy", "nak_delay", 1},
		{"fifo", "fifi", 1}, {"fifo", "ffo", 1}, {"kitten", "sitting", 3}, {"ca", "abc", 3}, {"ŕel", "rel", 1},
	} {
		if got := editDistance(c.a, c.b); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}

// FuzzParse checks that parsing never panics, and that whatever parses prints
// to a canonical form that parses back to the same layers and parameters and
// prints the same again.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"fifo : reliable(nak_delay=20ms) : lec(r=8, c=5)",
		"fifo:reliable", "a(x=5%, y=0.05, z=50KB)", `a(s="x y", t="\"q\"")`,
		"# c\nfifo :\n  reliable( a = 1 , ) # end\n", "fifo::reliable", "fifo(", `a(s="`, "", "é(x=1)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		sp, err := Parse(src)
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q): error %T is not a *SpecError", src, err)
			}
			_ = se.Error()
			return
		}
		canon := sp.String()
		again, err := Parse(canon)
		if err != nil {
			t.Fatalf("Parse(%q) ok, but its canonical form %q does not parse: %v", src, canon, err)
		}
		if !reflect.DeepEqual(stripPos(sp), stripPos(again)) {
			t.Fatalf("round trip of %q: %+v became %+v", src, stripPos(sp), stripPos(again))
		}
		if again.String() != canon {
			t.Fatalf("canonical form not stable: %q then %q", canon, again.String())
		}
		_ = Check(sp) // must not panic on any layer names or values
	})
}

func ExampleParse() {
	sp, err := Parse("tfifo :\n  treliable(nak_delay = 20ms)  # comment\n")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sp)
	fmt.Println(Check(sp))
	// Output:
	// tfifo : treliable(nak_delay=20ms)
	// <nil>
}
