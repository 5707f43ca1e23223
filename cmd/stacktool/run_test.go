package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runCLI runs stacktool in-process and returns stdout and the error main
// would print.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	app := newApp()
	var out, errw bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errw
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("stacktool %s panicked: %v", strings.Join(args, " "), p)
		}
	}()
	err := app.Run(append([]string{"stacktool"}, args...))
	return out.String(), err
}

func TestRunBadInput(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.stack")
	os.WriteFile(empty, []byte("# nothing but a comment\n"), 0o644)
	scen := filepath.Join(dir, "bad.scenario")
	os.WriteFile(scen, []byte("nodes: 16\nloss: uniform:150%\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "fifo:reliable", "--loss", "uniform:150%"}, "150"},
		{[]string{"run", "--loss", "uniform:150%", "fifo:reliable"}, "150"},
		{[]string{"run", "--bogus", "1", "fifo:reliable"}, "bogus"},
		{[]string{"run", "fifo:reliable", "--bogus", "1"}, "bogus"},
		{[]string{"run", ""}, "empty spec"},
		{[]string{"run", empty}, ""},
		{[]string{"run"}, "needs a spec"},
		{[]string{"run", filepath.Join(dir, "missing.stack")}, "missing.stack"},
		{[]string{"run", "fifo:reliable", "--scenario", filepath.Join(dir, "missing.scenario")}, "missing.scenario"},
		{[]string{"run", "fifo:reliable", "--scenario", scen}, "bad.scenario:2"},
		{[]string{"run", "fifo:reliable", "--group-size", "20"}, "larger than the number of nodes"},
		{[]string{"run", "fifo:reliable", "--groups-per-node", "3", "--group-size", "5"}, "not divisible"},
		{[]string{"run", "fifo:reliable", "--network", "carrier-pigeon"}, "choose one of"},
		{[]string{"run", "fifo:reliable", "--fault", "explode:3"}, "fault"},
		{[]string{"run", "fifo:reliable", "--rate", "fast"}, "rate"},
		{[]string{"run", "fifo:reliable", "reliable"}, "use compare"},
		{[]string{"compare"}, "at least one spec"},
	} {
		_, err := runCLI(t, c.args...)
		if err == nil {
			t.Errorf("stacktool %q succeeded, want an error", c.args)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !strings.Contains(msg, c.want) {
			t.Errorf("stacktool %q: error %q, want one line containing %q", c.args, msg, c.want)
		}
	}
}

func TestRunJSONAndRepeatable(t *testing.T) {
	args := []string{"run", "fifo:reliable", "--nodes", "8", "--group-size", "4", "--groups-per-node", "2",
		"--duration", "1s", "--loss", "uniform:5%", "--json", "--no-wall"}
	a, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(a), &m); err != nil {
		t.Fatalf("run --json printed no single JSON object: %v\n%s", err, a)
	}
	for _, f := range []string{"spec", "network", "seed", "sim_seconds", "wall_seconds", "messages_sent", "deliveries",
		"deliveries_expected", "delivered_all", "duplicates", "fifo_violations", "throughput_msgs_per_s", "latency_ms",
		"loss", "overhead", "peak_buffer_bytes", "layers"} {
		if _, ok := m[f]; !ok {
			t.Errorf("run --json lacks %q", f)
		}
	}
	b, _ := runCLI(t, args...)
	if a != b {
		t.Error("two runs with the same seed printed different JSON")
	}
	out, err := runCLI(t, "compare", "fifo:reliable", "reliable", "--nodes", "8", "--group-size", "4", "--groups-per-node", "2",
		"--duration", "1s", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var arr []map[string]any
	if err := json.Unmarshal([]byte(out), &arr); err != nil || len(arr) != 2 {
		t.Fatalf("compare --json: %v, %d objects", err, len(arr))
	}
	tab, err := runCLI(t, "compare", "fifo:reliable", "reliable", "--nodes", "8", "--group-size", "4", "--groups-per-node", "2", "--duration", "1s")
	if err != nil || !strings.Contains(tab, "[2] reliable") || !strings.Contains(tab, "wall time") {
		t.Errorf("compare table: %v\n%s", err, tab)
	}
}

// Repeatable flags replace the scenario file's list of their own key only:
// --site once cleared every --fault given before it, so a crash asked for
// on the command line silently did not happen.
func TestRepeatableFlagsKeepEachOthersLists(t *testing.T) {
	out, err := runCLI(t, "run", "fifo:reliable", "--nodes", "4", "--group-size", "2", "--groups-per-node", "1",
		"--duration", "300ms", "--no-wall", "--fault", "crash:1@100ms", "--site", "1=1-2", "--site", "2=3-4")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	for _, want := range []string{"fault=crash:1@100ms", "site=1=1-2 site=2=3-4"} {
		if !strings.Contains(out, want) {
			t.Errorf("scenario line lacks %q:\n%s", want, out)
		}
	}
}

// run --log-level debug prints the layers' log lines on stderr, each with
// the virtual time, the node and the layer; without it, none.
func TestRunLogLevel(t *testing.T) {
	args := []string{"run", "fifo:reliable", "--nodes", "4", "--group-size", "4", "--groups-per-node", "1",
		"--duration", "200ms", "--loss", "uniform:5%", "--no-wall"}
	run := func(extra ...string) (stdout, stderr string) {
		t.Helper()
		app := newApp()
		var out, errw bytes.Buffer
		app.Writer, app.ErrWriter = &out, &errw
		if err := app.Run(append(append([]string{"stacktool"}, args...), extra...)); err != nil {
			t.Fatalf("stacktool %q: %v", append(args, extra...), err)
		}
		return out.String(), errw.String()
	}
	// a NAK line from reliable: "34.661881ms n1 reliable: nak from n3 for g1: [1 1]"
	line := regexp.MustCompile(`(?m)^\d[\d.]*[nµm]?s n\d+ reliable: nak from n\d+ for g\d+: `)
	quietOut, quiet := run()
	if quiet != "" {
		t.Errorf("run without --log-level wrote %q on stderr, want nothing", quiet)
	}
	for _, lv := range []string{"info", "warn"} {
		if _, e := run("--log-level", lv); e != "" {
			t.Errorf("run --log-level %s wrote %q on stderr, want nothing", lv, e)
		}
	}
	loudOut, loud := run("--log-level", "debug")
	if !line.MatchString(loud) {
		t.Errorf("run --log-level debug: stderr has no reliable NAK line with time and node:\n%.2000s", loud)
	}
	if loudOut != quietOut {
		t.Errorf("run --log-level debug changed the report:\n%s\nwant\n%s", loudOut, quietOut)
	}
	if _, err := runCLI(t, append(args, "--log-level", "loud")...); err == nil || !strings.Contains(err.Error(), "--log-level") {
		t.Errorf("run --log-level loud: error %v, want one naming --log-level", err)
	}
}
