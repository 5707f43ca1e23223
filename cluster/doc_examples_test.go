package cluster_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// The package doc lists every Example function, and every one it lists
// exists; each but ExampleWithUDP (run over UDP by tests/) has an output
// that go test checks.
func TestPackageDocListsTheExamples(t *testing.T) {
	src, err := os.ReadFile("cluster.go")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^//   - (Example\w*)`).FindAllStringSubmatch(string(src), -1) {
		listed = append(listed, m[1])
	}
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var parsed []*ast.File
	for _, f := range files {
		pf, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, pf)
	}
	var have []string
	for _, ex := range doc.Examples(parsed...) {
		have = append(have, "Example"+ex.Name)
		if ex.Output == "" && !ex.EmptyOutput && ex.Name != "WithUDP" {
			t.Errorf("Example%s has no // Output: comment, so go test does not run it", ex.Name)
		}
	}
	for _, name := range listed {
		if !slices.Contains(have, name) {
			t.Errorf("the package doc lists %s, which does not exist", name)
		}
	}
	for _, name := range have {
		if !slices.Contains(listed, name) {
			t.Errorf("%s is not in the package doc's list of examples", name)
		}
	}
	if len(listed) < 10 {
		t.Errorf("the package doc lists %d examples, want the 11 (building, joining, casting, receiving, UDP, ...)", len(listed))
	}
}
