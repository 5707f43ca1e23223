package layertest

import (
	"fmt"
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/stack"
)

// Registered returns a maker of one node's layers: the named registered
// layers, top first, each with its parameters from params (nil or absent:
// defaults). The layers must be registered (import their packages); an
// unknown name or a bad parameter panics, being the test's own mistake.
func Registered(params map[string]map[string]string, names ...string) func() []stack.Entry {
	return func() []stack.Entry {
		out := make([]stack.Entry, 0, len(names))
		for _, name := range names {
			info, ok := compose.Lookup(name)
			if !ok {
				panic(fmt.Sprintf("layertest: layer %q is not registered", name))
			}
			l, err := info.New(compose.MustParams(name, params[name]))
			if err != nil {
				panic(err)
			}
			out = append(out, stack.Entry{Name: name, Layer: l})
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
