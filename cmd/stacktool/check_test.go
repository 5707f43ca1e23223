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
			"spec:1:1: fifo needs reliable delivery below it; nothing below gives it (hop or reliable or ring or tokenring does: put it below fifo)\n    fifo\n    ^"},
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
		// Every check error is bad input: exit 2.
		if c.args[0] == "check" {
			if code := exitCode(err); code != 2 {
				t.Errorf("stacktool %q exits %d, want 2 (bad input)", c.args, code)
			}
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

// Every spec and scenario file shipped in specs/ passes check, and exits 0.
func TestCheckShippedSpecs(t *testing.T) {
	stacks, err := filepath.Glob("../../specs/*.stack")
	scenarios, err2 := filepath.Glob("../../specs/*.scenario")
	if err != nil || err2 != nil || len(stacks) == 0 || len(scenarios) == 0 {
		t.Fatalf("no spec or scenario files found: %v %v", err, err2)
	}
	for _, f := range stacks {
		if out, err := runApp(t, "check", f); exitCode(err) != 0 || !strings.HasPrefix(out, "ok: ") {
			t.Errorf("stacktool check %s = %q, %v", f, out, err)
		}
	}
	for _, f := range scenarios {
		if out, err := runApp(t, "check", f); exitCode(err) != 0 || !strings.HasPrefix(out, "ok: scenario "+f+"\n") {
			t.Errorf("stacktool check %s = %q, %v", f, out, err)
		}
	}
}

// check is as strict as run: what run refuses before running, check refuses
// with the same error, and exits 2. Each case passed check before.
func TestCheckAsStrictAsRun(t *testing.T) {
	cases := []struct {
		spec, want string
	}{
		// A service layer in a member's stack: run delivered 0 of 448.
		{"fifo : reliable : gms_service", "spec:1:19: gms_service is a service layer: it is a service node's whole stack, never part of a member's (a member stack holding it delivers nothing); did you mean gms, the member's side?\n    fifo : reliable : gms_service\n                      ^"},
		// Cross-parameter rules of the layers' own registration.
		{"mflow(window=10KB, ack_thresh=20KB) : fifo : reliable", "spec:1:1: mflow: ack_thresh 20000 is larger than window 10000: receivers would never acknowledge before the sender stops\n    mflow(window=10KB, ack_thresh=20KB) : fifo : reliable\n    ^"},
		{"fifo : reliable : gms(heartbeat=2s, fd_timeout=1s)", "spec:1:19: gms: fd_timeout 1s must be longer than heartbeat 2s\n    fifo : reliable : gms(heartbeat=2s, fd_timeout=1s)\n                      ^"},
	}
	for _, c := range cases {
		want := c.want
		out, err := runApp(t, "check", c.spec)
		if err == nil || err.Error() != want || out != "" {
			t.Errorf("check %q = %q, %v\nwant %s", c.spec, out, err, want)
		}
		if code := exitCode(err); code != 2 {
			t.Errorf("check %q exits %d, want 2", c.spec, code)
		}
		// run refuses it with the same words, before running anything.
		out, err = runApp(t, "run", c.spec, "--nodes", "4", "--group-size", "2", "--groups-per-node", "1", "--duration", "10ms", "--no-wall")
		if err == nil || err.Error() != want || out != "" {
			t.Errorf("run %q = %q, %v\nwant the error check gives", c.spec, out, err)
		}
	}
	// The same layers with parameters that fit pass.
	for _, ok := range []string{"mflow(window=20KB, ack_thresh=10KB) : fifo : reliable", "fifo : reliable : gms(heartbeat=1s, fd_timeout=2s)"} {
		if out, err := runApp(t, "check", ok); exitCode(err) != 0 || !strings.HasPrefix(out, "ok: ") {
			t.Errorf("check %q = %q, %v", ok, out, err)
		}
	}
}

// A scenario file is recognised by its extension or by its key: value
// content and checked with run's loader; errors point at the line and the
// key or value at fault.
func TestCheckScenario(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.scenario", "# four nodes\nnodes: 4\ngroup-size: 2\nloss: uniform:5%\nfault: crash:2@1s\n")
	out, err := runApp(t, "check", good)
	if exitCode(err) != 0 || out != "ok: scenario "+good+"\n  nodes=4 groups-per-node=4 group-size=2 senders=all rate=100 msg-size=1000 duration=10s drain=2s loss=uniform:5% latency=1ms jitter=100µs seed=1 fault=crash:2@1s\n" {
		t.Errorf("check good.scenario = %q, %v", out, err)
	}
	// Without the extension, the content decides; a one-line spec file
	// stays a spec.
	plain := write("plain", "nodes: 4\ngroup-size: 2\n")
	if out, err := runApp(t, "check", plain); exitCode(err) != 0 || !strings.HasPrefix(out, "ok: scenario "+plain+"\n") {
		t.Errorf("check plain = %q, %v", out, err)
	}
	spec := write("spec", "fifo : reliable\n")
	if out, err := runApp(t, "check", spec); exitCode(err) != 0 || out != "ok: fifo : reliable ("+spec+")\n  fifo      gives FIFO order  (needs reliable delivery, sequenced delivery)\n  reliable  gives reliable delivery, sequenced delivery\n" {
		t.Errorf("check spec = %q, %v", out, err)
	}
	bad := []struct {
		name, text, want string
	}{
		{"key.scenario", "nodes: 4\n  nodez: 5\n", ":2:3: unknown scenario key \"nodez\"; did you mean \"nodes\"?\n      nodez: 5\n      ^"},
		{"value.txt", "nodes: 4\nloss:  uniform:500%  # too much\n", ":2:8: loss: loss rate 500% is outside 0% to 100%\n    loss:  uniform:500%  # too much\n           ^"},
		{"shape.scenario", "nodes: 4\nseed 7\n", `:2:1: want 'key: value', got "seed 7"` + "\n    seed 7\n    ^"},
		// Whole-scenario checks, as run does them, name the file.
		{"shape2.scenario", "nodes: 16\ngroup-size: 7\n", ": 16 nodes x 4 groups per node = 64 memberships, not divisible by group size 7; try --group-size 8 or 4 or 2, or --groups-per-node 7"},
		{"fault.scenario", "nodes: 4\ngroup-size: 2\nfault: crash:9@1s\n", `: fault "crash:9@1s" names node n9, but nodes are n1..n4`},
	}
	for _, b := range bad {
		p := write(b.name, b.text)
		out, err := runApp(t, "check", p)
		if err == nil || err.Error() != p+b.want || out != "" {
			t.Errorf("check %s = %q, %v\nwant %s", b.name, out, err, p+b.want)
		}
		if code := exitCode(err); code != 2 {
			t.Errorf("check %s exits %d, want 2", b.name, code)
		}
	}
	missing := filepath.Join(dir, "missing.scenario")
	if _, err := runApp(t, "check", missing); err == nil || err.Error() != "cannot read scenario file "+missing+": no such file or directory" || exitCode(err) != 2 {
		t.Errorf("check missing.scenario = %v", err)
	}
}

// check -v prints every layer's every parameter at its effective value with
// its unit, whether the spec set it, what the stack gives, and the spec in
// full, which checks back to the same values.
func TestCheckVerbose(t *testing.T) {
	for _, args := range [][]string{
		{"check", "-v", "mflow(window=4MiB) : fifo : reliable(nak_delay=5ms) : lec(c=2.5) : gms"},
		{"check", "mflow(window=4MiB) : fifo : reliable(nak_delay=5ms) : lec(c=2.5) : gms", "--verbose"},
	} {
		out, err := runApp(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		text := args[1]
		if text == "-v" {
			text = args[2]
		}
		ls, err := compose.ExplainString(text)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(out, "\n")
		row := map[string][]string{} // "layer.param" -> fields
		layer := ""
		for _, l := range lines {
			switch {
			case strings.HasPrefix(l, "    "):
				f := strings.Fields(l)
				row[layer+"."+f[0]] = f
			case strings.HasPrefix(l, "  ") && strings.Contains(l, ": gives "):
				layer = strings.TrimSpace(l[:strings.Index(l, ":")])
			}
		}
		n := 0
		for _, l := range ls {
			for _, p := range l.Info.Params {
				n++
				f := row[l.Info.Name+"."+p.Name]
				from := "default"
				if l.Params.Given(p.Name) {
					from = "set"
				}
				if len(f) < 4 || f[1] != l.Params.Text(p.Name) || f[2] != from || !strings.Contains(strings.Join(f[3:], " "), p.Doc) {
					t.Errorf("%s %s: row %q, want value %s (%s)", l.Info.Name, p.Name, f, l.Params.Text(p.Name), from)
				}
			}
		}
		if len(row) != n || n < 20 {
			t.Errorf("%d parameter rows, want %d:\n%s", len(row), n, out)
		}
		// Values carry their units; what was set reads as set.
		for k, want := range map[string]string{"mflow.window": "4MiB set", "mflow.ack_thresh": "500KB default", "reliable.nak_delay": "5ms set",
			"reliable.max_buffer": "4MB default", "lec.c": "2.5 set", "gms.fd_timeout": "1s default", "mflow.stagger": "on default"} {
			if f := row[k]; len(f) < 3 || f[1]+" "+f[2] != want {
				t.Errorf("%s: %q, want %s", k, f, want)
			}
		}
		if !strings.Contains(out, "\n  stack gives: group views, region views, probabilistic recovery, reliable delivery, sequenced delivery, FIFO order, flow control\n") {
			t.Errorf("no stack gives line:\n%s", out)
		}
		// The spec in full checks to the same values.
		i := strings.Index(out, "\n  in full: ")
		if i < 0 {
			t.Fatalf("no in-full line:\n%s", out)
		}
		full := strings.TrimSpace(strings.SplitN(out[i+len("\n  in full: "):], "\n", 2)[0])
		fsp, err := compose.Parse(full)
		if err != nil {
			t.Fatalf("in full %q: %v", full, err)
		}
		fls, err := compose.Explain(fsp)
		if err != nil || len(fls) != len(ls) {
			t.Fatalf("in full %q: %v", full, err)
		}
		for j := range ls {
			for _, p := range ls[j].Info.Params {
				if fls[j].Params.Text(p.Name) != ls[j].Params.Text(p.Name) || !fls[j].Params.Given(p.Name) {
					t.Errorf("in full: %s %s = %s, want %s", ls[j].Info.Name, p.Name, fls[j].Params.Text(p.Name), ls[j].Params.Text(p.Name))
				}
			}
		}
	}
	// -v on a scenario: every key on its own line.
	out, err := runApp(t, "check", "-v", "../../specs/gms-crash.scenario")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\n  nodes            12\n", "\n  groups-per-node  3\n", "\n  jitter           100µs\n", "\n  fault            crash:3@3s\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("check -v gms-crash.scenario lacks %q:\n%s", want, out)
		}
	}
}
