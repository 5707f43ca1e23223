package layertest

import (
	"fmt"

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
