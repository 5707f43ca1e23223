package fifo_test

import (
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/internal/layertest"
	_ "github.com/layercast/layercast/layers/fifo"
	_ "github.com/layercast/layercast/layers/reliable"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// cluster is the shared simulated cluster (internal/layertest).
type cluster = layertest.Cluster

func newCluster(t *testing.T, cfg sim.Config, n int, mk func() []stack.Entry) *cluster {
	return layertest.New(t, cfg, n, mk)
}

func payload(seq uint32, size int) []byte { return layertest.Payload(seq, size) }

func checkSeqs(seqs []uint32, n uint32, ordered bool) error {
	return layertest.CheckSeqs(seqs, n, ordered)
}

// fifoEntries builds fifo over reliable (reliable with the given parameters).
func fifoEntries(given map[string]string) func() []stack.Entry {
	return func() []stack.Entry {
		mk := func(name string, p map[string]string) stack.Layer {
			info, _ := compose.Lookup(name)
			l, err := info.New(compose.MustParams(name, p))
			if err != nil {
				panic(err)
			}
			return l
		}
		return []stack.Entry{{Name: "fifo", Layer: mk("fifo", nil)}, {Name: "reliable", Layer: mk("reliable", given)}}
	}
}
