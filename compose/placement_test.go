package compose

import (
	"strings"
	"testing"
)

// Test-only layers for the placement rules a registration can state:
// tbottom must be the bottom layer; tregional refuses probabilistic
// recovery (tproba) below it; tsafe gives safe delivery only with safe=on,
// which tneedsafe needs.
func init() {
	Register(LayerInfo{Name: "tbottom", Summary: "test: must be the bottom layer.",
		Bottom: "it checks every packet", New: mkLayer("tbottom")})
	Register(LayerInfo{Name: "tregional", Summary: "test: refuses probabilistic recovery below it.",
		Gives:    []Property{Reliable},
		NotBelow: map[Property]string{ProbabilisticRecovery: "it sends each group's casts per region"},
		New:      mkLayer("tregional")})
	Register(LayerInfo{Name: "tproba", Summary: "test: gives probabilistic recovery.",
		Gives: []Property{ProbabilisticRecovery}, New: mkLayer("tproba")})
	Register(LayerInfo{Name: "tsafe", Summary: "test: gives safe delivery with safe=on.",
		Params:    []Param{{Name: "safe", Type: Bool, Default: "off", Doc: "give safe delivery"}},
		Gives:     []Property{Agreed},
		GivesWith: GivesIfOn("safe", Safe),
		New:       mkLayer("tsafe")})
	Register(LayerInfo{Name: "tneedsafe", Summary: "test: needs safe delivery.",
		Needs: []Property{Safe}, New: mkLayer("tneedsafe")})
}

// The placement rules a registration states are checked in compose's
// words. Bottom: the layer is accepted only at the bottom of a spec, and
// elsewhere the error names it, the layer below it and the reason.
// NotBelow: a layer giving that property anywhere below it is refused,
// naming both and the reason; above it is fine. GivesIfOn: the properties
// are given only when the parameter is on, so a need of Safe is met by
// tsafe(safe=on) and refused otherwise.
func TestPlacementRules(t *testing.T) {
	wantCheck(t, map[string]string{
		"tfifo : treliable : tbottom": "",
		"tbottom":                     "",
		"tbottom : treliable":         "tbottom must be the bottom layer (treliable is below it): it checks every packet",
		"tfifo : tbottom : treliable": "tbottom must be the bottom layer (treliable is below it): it checks every packet",

		"tfifo : tproba : tregional":     "",
		"tfifo : tregional":              "",
		"tfifo : tregional : tproba":     "tproba cannot stand below tregional: it sends each group's casts per region",
		"tregional : treliable : tproba": "tproba cannot stand below tregional",

		"tneedsafe : tsafe(safe=on)":  "",
		"tneedsafe : tsafe":           "needs safe delivery below it",
		"tneedsafe : tsafe(safe=off)": "needs safe delivery below it",
	})
}

// wantCheck checks each spec: Check accepts it when want is "", else
// refuses it with an error containing want.
func wantCheck(t *testing.T, cases map[string]string) {
	t.Helper()
	for src, want := range cases {
		sp, err := Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		err = Check(sp)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("Check(%q) = %v, want %q", src, err, want)
		}
	}
}
