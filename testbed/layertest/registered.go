package layertest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/stack"
)

// Registered returns a maker of one node's layers: the named registered
// layers, top first, each with its parameters from params (nil or absent:
// defaults, fitted to the layers below as a spec's are: compose.FitSpreads).
// The layers must be registered (import their packages); an unknown name
// or a bad parameter panics, being the test's own mistake.
func Registered(params map[string]map[string]string, names ...string) func() []stack.Entry {
	ls := make([]compose.Checked, len(names))
	for i, name := range names {
		info, ok := compose.Lookup(name)
		if !ok {
			panic(fmt.Sprintf("layertest: layer %q is not registered", name))
		}
		ls[i] = compose.Checked{Info: info, Params: compose.MustParams(name, params[name])}
	}
	compose.FitSpreads(ls) // the values a spec of these layers would build with
	return func() []stack.Entry {
		out := make([]stack.Entry, 0, len(names))
		for _, c := range ls {
			l, err := c.Info.New(c.Params)
			if err != nil {
				panic(err)
			}
			out = append(out, stack.Entry{Name: c.Info.Name, Layer: l})
		}
		return out
	}
}

// CountersDocumented fails t for every counter a layer of st made that
// its registration does not document (so `stacktool layers` can say what
// it means, and a report find its acknowledgements and buffer peaks by
// role), and returns how many counters it checked.
func CountersDocumented(t testing.TB, st *stack.Stack) int {
	t.Helper()
	seen := 0
	for _, lc := range st.Counters() {
		info, ok := compose.Lookup(lc.Layer)
		if !ok {
			t.Fatalf("layer %q is not registered", lc.Layer)
		}
		for _, n := range lc.Names {
			seen++
			if info.Counter(n) == nil {
				t.Errorf("%s: counter %q is not documented in its registration", lc.Layer, n)
			}
		}
	}
	return seen
}

// CheckSpec fails t unless compose.Check accepts the spec src (want "") or
// refuses it with an error that says want; a spec that does not parse
// fails t at once, being the test's own mistake.
func CheckSpec(t testing.TB, src, want string) {
	t.Helper()
	sp, err := compose.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	err = compose.Check(sp)
	switch {
	case want == "" && err != nil:
		t.Errorf("Check(%q) = %v, want it accepted", src, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("Check(%q) = %v, want a refusal saying %q", src, err, want)
	}
}
