package reliable_test

import (
	_ "github.com/layercast/layercast/layers/reliable"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
)

// relEntries builds reliable alone with the given parameters.
func relEntries(given map[string]string) func() []stack.Entry {
	return layertest.Registered(map[string]map[string]string{"reliable": given}, "reliable")
}
