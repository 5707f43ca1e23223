package fifo_test

import (
	_ "github.com/layercast/layercast/layers/fifo"
	_ "github.com/layercast/layercast/layers/reliable"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
)

// fifoEntries builds fifo over reliable (reliable with the given parameters).
func fifoEntries(given map[string]string) func() []stack.Entry {
	return layertest.Registered(map[string]map[string]string{"reliable": given}, "fifo", "reliable")
}

// fifoAlone is a stack of fifo only: tests feed it what reliable would.
func fifoAlone(given map[string]string) func() []stack.Entry {
	return layertest.Registered(map[string]map[string]string{"fifo": given}, "fifo")
}
