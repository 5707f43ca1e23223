package compose

import (
	"strings"
	"testing"

	"github.com/layercast/layercast/stack"
)

func init() {
	Register(LayerInfo{Name: "tbottom", Summary: "test: must be the bottom layer.",
		Bottom: "it checks every packet",
		New:    func(p Params) (stack.Layer, error) { return &fakeLayer{name: "tbottom", params: p}, nil }})
}

// A layer registered with Bottom is accepted only at the bottom of a spec;
// elsewhere the error names it, the layer below it and the reason.
func TestBottomLayer(t *testing.T) {
	wantCheck(t, map[string]string{
		"tfifo : treliable : tbottom": "",
		"tbottom":                     "",
		"tbottom : treliable":         "tbottom must be the bottom layer (treliable is below it): it checks every packet",
		"tfifo : tbottom : treliable": "tbottom must be the bottom layer (treliable is below it): it checks every packet",
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
