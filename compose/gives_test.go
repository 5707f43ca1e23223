package compose

import (
	"testing"

	"github.com/layercast/layercast/stack"
)

func init() {
	Register(LayerInfo{Name: "tsafe", Summary: "test: gives safe delivery with safe=on.",
		Params:    []Param{{Name: "safe", Type: Bool, Default: "off", Doc: "give safe delivery"}},
		Gives:     []Property{Agreed},
		GivesWith: GivesIfOn("safe", Safe),
		New:       func(p Params) (stack.Layer, error) { return &fakeLayer{name: "tsafe", params: p}, nil }})
	Register(LayerInfo{Name: "tneedsafe", Summary: "test: needs safe delivery.",
		Needs: []Property{Safe},
		New:   func(p Params) (stack.Layer, error) { return &fakeLayer{name: "tneedsafe", params: p}, nil }})
}

// GivesIfOn gives its properties only when the parameter is on: a need of
// Safe is met by tsafe(safe=on) and refused, in compose's words, otherwise.
func TestGivesIfOn(t *testing.T) {
	wantCheck(t, map[string]string{
		"tneedsafe : tsafe(safe=on)":  "",
		"tneedsafe : tsafe":           "needs safe delivery below it",
		"tneedsafe : tsafe(safe=off)": "needs safe delivery below it",
	})
}
