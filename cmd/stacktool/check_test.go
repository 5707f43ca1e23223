package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layercast/layercast/compose"
)

// runApp runs stacktool with args and returns what it printed and its error
// (main prints the error as "stacktool: <err>" and exits 1).
func runApp(t *testing.T, args ...string) (stdout string, err error) {
	t.Helper()
	var out, errw bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &errw
	err = app.Run(append([]string{"stacktool"}, args...))
	if errw.Len() > 0 {
		t.Errorf("stacktool %s wrote to stderr itself: %q", strings.Join(args, " "), errw.String())
	}
	return out.String(), err
}

func TestCheckGoodSpec(t *testing.T) {
	out, err := runApp(t, "check", "fifo:reliable( nak_delay = 20ms )")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || lines[0] != "ok: fifo : reliable(nak_delay=20ms)" {
		t.Fatalf("output:\n%s", out)
	}
	if !strings.Contains(lines[1], "fifo") || !strings.Contains(lines[1], "gives FIFO order") || !strings.Contains(lines[1], "needs reliable delivery") ||
		!strings.Contains(lines[2], "reliable") || !strings.Contains(lines[2], "gives reliable delivery") {
		t.Errorf("per-layer lines:\n%s", out)
	}
	// An unquoted spec arrives in pieces; a file is read.
	if out, err := runApp(t, "check", "fifo", ":", "reliable"); err != nil || !strings.HasPrefix(out, "ok: fifo : reliable\n") {
		t.Errorf("check fifo : reliable = %q, %v", out, err)
	}
	if out, err := runApp(t, "check", "../../specs/baseline.stack"); err != nil || !strings.HasPrefix(out, "ok: fifo : reliable (../../specs/baseline.stack)\n") {
		t.Errorf("check specs/baseline.stack = %q, %v", out, err)
	}
}

func TestCheckErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.stack")
	if err := os.WriteFile(bad, []byte("# wrapped\nfifo :\n  reliable(nak_dealy=20ms)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string // the whole error text
	}{
		{[]string{"check", "fifo:relaible"},
			"spec:1:6: unknown layer \"relaible\"; did you mean \"reliable\"?\n    fifo:relaible\n         ^"},
		{[]string{"check", "fifo"},
			"spec:1:1: fifo needs reliable delivery below it; nothing below gives it (reliable does: put it below fifo)\n    fifo\n    ^"},
		{[]string{"check", "reliable : fifo"},
			"spec:1:12: fifo needs reliable delivery below it; nothing below gives it; reliable gives it but is above fifo (specs list layers top first)\n    reliable : fifo\n               ^"},
		{[]string{"check", "fifo : reliable(nak_delay=20)"},
			"spec:1:27: nak_delay: want a duration with a unit such as 20ms or 2s, got \"20\"\n    fifo : reliable(nak_delay=20)\n                              ^"},
		{[]string{"check", bad},
			bad + ":3:12: layer reliable has no parameter \"nak_dealy\"; did you mean \"nak_delay\"?\n      reliable(nak_dealy=20ms)\n               ^"},
		// One line each, no usage text.
		{[]string{"check"}, "check needs a spec: stacktool check SPEC|FILE (e.g. 'fifo : reliable')"},
		{[]string{"check", ""}, "spec: empty spec: no layers (write them top first, e.g. fifo : reliable)"},
		{[]string{"check", "  # just a comment"}, "spec: empty spec: no layers (write them top first, e.g. fifo : reliable)"},
		{[]string{"check", filepath.Join(dir, "missing.stack")}, "cannot read spec file " + filepath.Join(dir, "missing.stack") + ": no such file or directory"},
		{[]string{"check", dir + "/"}, "cannot read spec file " + dir + "/: is a directory"},
		{[]string{"check", "--bogus", "fifo:reliable"}, "flag provided but not defined: -bogus (see 'stacktool check --help')"},
		{[]string{"check", "fifo:reliable", "--bogus"}, "check: unknown flag --bogus (see 'stacktool check --help')"},
		{[]string{"layers", "--bogus"}, "flag provided but not defined: -bogus (see 'stacktool layers --help')"},
		{[]string{"layers", "relaible"}, "layers: unknown layer \"relaible\"; did you mean \"reliable\"?"},
	}
	for _, c := range cases {
		out, err := runApp(t, c.args...)
		if err == nil {
			t.Errorf("stacktool %q succeeded, want an error", c.args)
			continue
		}
		if err.Error() != c.want {
			t.Errorf("stacktool %q:\n got  %s\n want %s", c.args, err, c.want)
		}
		if out != "" {
			t.Errorf("stacktool %q printed %q besides the error", c.args, out)
		}
	}
}

func TestLayersCatalogue(t *testing.T) {
	out, err := runApp(t, "layers")
	if err != nil {
		t.Fatal(err)
	}
	all := compose.Layers()
	if len(all) == 0 {
		t.Fatal("no layers registered")
	}
	for _, l := range all {
		i := strings.Index(out, "\n"+l.Name+"\n")
		if i < 0 && !strings.HasPrefix(out, l.Name+"\n") {
			t.Errorf("layer %s missing from:\n%s", l.Name, out)
			continue
		}
		block := out[max(i, 0):]
		if end := strings.Index(block[1:], "\n\n"); end >= 0 {
			block = block[:end+1]
		}
		words := strings.Fields(l.Summary)
		if !strings.Contains(block, words[0]) || !strings.Contains(block, "needs: "+describeProps(l.Needs)) ||
			!strings.Contains(block, "gives: "+describeProps(l.Gives)) {
			t.Errorf("layer %s: summary or properties missing:\n%s", l.Name, block)
		}
		for _, p := range l.Params {
			row := ""
			for _, line := range strings.Split(block, "\n") {
				if f := strings.Fields(line); len(f) > 3 && f[0] == p.Name {
					row = line
				}
			}
			if def := strings.Fields(row); row == "" || def[1] != p.Type.String() || (p.Default != "" && def[2] != p.Default) || !strings.Contains(row, p.Doc) {
				t.Errorf("layer %s parameter %s: row %q", l.Name, p.Name, row)
			}
		}
	}
	// The JSON form has every layer, parameter, default and property.
	out, err = runApp(t, "layers", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got []jsonLayer
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("layers --json: %v\n%s", err, out)
	}
	if len(got) != len(all) {
		t.Fatalf("layers --json: %d layers, want %d", len(got), len(all))
	}
	for i, l := range all {
		g := got[i]
		if g.Name != l.Name || g.Summary != l.Summary || len(g.Params) != len(l.Params) ||
			strings.Join(g.Needs, ",") != strings.Join(props(l.Needs), ",") || strings.Join(g.Gives, ",") != strings.Join(props(l.Gives), ",") {
			t.Errorf("layers --json entry %d = %+v, want %s", i, g, l.Name)
			continue
		}
		for j, p := range l.Params {
			if g.Params[j].Name != p.Name || g.Params[j].Default != p.Default || g.Params[j].Type != p.Type.String() {
				t.Errorf("%s param %d = %+v", l.Name, j, g.Params[j])
			}
		}
	}
	// Named layers only.
	out, err = runApp(t, "layers", "fifo", "--json")
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || len(got) != 1 || got[0].Name != "fifo" {
		t.Errorf("layers fifo --json = %q, %v", out, err)
	}
}

// Every spec file shipped in specs/ passes check.
func TestCheckShippedSpecs(t *testing.T) {
	files, err := filepath.Glob("../../specs/*.stack")
	if err != nil || len(files) == 0 {
		t.Fatalf("no spec files found: %v", err)
	}
	for _, f := range files {
		if out, err := runApp(t, "check", f); err != nil || !strings.HasPrefix(out, "ok: ") {
			t.Errorf("stacktool check %s = %q, %v", f, out, err)
		}
	}
}
