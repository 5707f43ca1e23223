package experiment

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzScenarioFile loads arbitrary bytes as a scenario file. It must never
// panic; a refused file gets an error that names the file; an accepted one
// survives Check, Describe and EstimateMemory, and gives the same scenario
// when its Flags are applied to Default or written out as a scenario file
// and loaded again. Seeds: testdata/fuzz/FuzzScenarioFile (checked-in
// scenarios, a few broken ones).
func FuzzScenarioFile(f *testing.F) {
	f.Add([]byte("nodes: 4\ngroups-per-node: 1\ngroup-size: 4\nrate: max\nfault: crash:2@1s\n"))
	dir := f.TempDir()
	path := filepath.Join(dir, "in.scenario")
	again := filepath.Join(dir, "again.scenario")
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		sc := Default()
		if err := sc.LoadFile(path); err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file %s", err, path)
			}
			return
		}
		if sc.Check() == nil {
			_ = EstimateMemory(sc)
			_ = sc.Groups()
		}
		_ = sc.Describe()
		want := sc.Flags()

		fromFlags := Default()
		for _, kv := range want {
			if err := fromFlags.Set(strings.TrimPrefix(kv[0], "--"), kv[1]); err != nil {
				t.Fatalf("flag %s %q of an accepted scenario is refused: %v", kv[0], kv[1], err)
			}
		}
		if got := fromFlags.Flags(); !reflect.DeepEqual(got, want) {
			t.Fatalf("Flags applied to Default give\n%q\nwant\n%q", got, want)
		}

		var file strings.Builder
		for _, kv := range want {
			file.WriteString(strings.TrimPrefix(kv[0], "--") + ": " + kv[1] + "\n")
		}
		if err := os.WriteFile(again, []byte(file.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		reloaded := Default()
		if err := reloaded.LoadFile(again); err != nil {
			t.Fatalf("scenario written from an accepted one is refused: %v\n%s", err, file.String())
		}
		if got := reloaded.Flags(); !reflect.DeepEqual(got, want) {
			t.Fatalf("written out and loaded again:\n%q\nwant\n%q", got, want)
		}
	})
}
