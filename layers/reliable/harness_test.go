package reliable_test

import (
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/internal/layertest"
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

func relEntries(given map[string]string) func() []stack.Entry {
	return func() []stack.Entry {
		info, _ := compose.Lookup("reliable")
		l, err := info.New(compose.MustParams("reliable", given))
		if err != nil {
			panic(err)
		}
		return []stack.Entry{{Name: "reliable", Layer: l}}
	}
}
