package compose

import (
	"testing"

	"github.com/layercast/layercast/stack"
)

func init() {
	Register(LayerInfo{Name: "tregional", Summary: "test: refuses probabilistic recovery below it.",
		Gives:    []Property{Reliable},
		NotBelow: map[Property]string{ProbabilisticRecovery: "it sends each group's casts per region"},
		New:      func(p Params) (stack.Layer, error) { return &fakeLayer{name: "tregional", params: p}, nil }})
	Register(LayerInfo{Name: "tproba", Summary: "test: gives probabilistic recovery.",
		Gives: []Property{ProbabilisticRecovery},
		New:   func(p Params) (stack.Layer, error) { return &fakeLayer{name: "tproba", params: p}, nil }})
}

// A layer's NotBelow refuses a layer giving that property anywhere below
// it, naming both and the reason; above it is fine.
func TestNotBelow(t *testing.T) {
	wantCheck(t, map[string]string{
		"tfifo : tproba : tregional":     "",
		"tfifo : tregional":              "",
		"tfifo : tregional : tproba":     "tproba cannot stand below tregional: it sends each group's casts per region",
		"tregional : treliable : tproba": "tproba cannot stand below tregional",
	})
}
