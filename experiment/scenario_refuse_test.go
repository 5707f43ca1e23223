package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What a new user stumbled on (issue 14, item 8) is refused with one line
// that says what is wrong.
func TestScenarioRefusals(t *testing.T) {
	base := func() Scenario {
		sc := Default()
		sc.Nodes, sc.GroupsPerNode, sc.GroupSize = 8, 2, 4
		return sc
	}
	for _, c := range []struct {
		name string
		set  [][2]string
		want string // "" means accepted
	}{
		{"bare loss rate", [][2]string{{"loss", "uniform:5"}}, `did you mean "uniform:5%"?`},
		{"bare bursty rate", [][2]string{{"loss", "bursty:5,10"}}, `did you mean "bursty:5%,10"?`},
		{"loss as a percentage", [][2]string{{"loss", "uniform:5%"}}, ""},
		{"group of one", [][2]string{{"group-size", "1"}}, "group-size 1: a group needs at least 2 members"},
		{"fault after the run", [][2]string{{"duration", "2s"}, {"drain", "1s"}, {"fault", "crash:3@5s"}}, `fault "crash:3@5s" comes at 5s, after the run ends (duration 2s + drain 1s = 3s)`},
		{"fault within the drain", [][2]string{{"duration", "2s"}, {"drain", "1s"}, {"fault", "crash:3@2500ms"}}, ""},
		{"no such node", [][2]string{{"fault", "crash:9@1s"}}, "names node n9, but nodes are n1..n8"},
		{"no such node in a partition", [][2]string{{"fault", "partition:1,2|99@1s"}}, "names node n99, but nodes are n1..n8"},
		{"a partition of existing nodes", [][2]string{{"fault", "partition:1,2|3,4@1s"}}, ""},
		{"out of memory", [][2]string{{"nodes", "1048576"}, {"groups-per-node", "4"}}, "GB of memory"},
	} {
		sc := base()
		var err error
		for _, kv := range c.set {
			if err = sc.Set(kv[0], kv[1]); err != nil {
				break
			}
		}
		if err == nil {
			err = sc.Check()
		}
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want accepted", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// A key given twice in a scenario file is refused, naming both lines;
// fault may repeat.
func TestScenarioFileDuplicateKey(t *testing.T) {
	dir := t.TempDir()
	dup := filepath.Join(dir, "dup.scenario")
	os.WriteFile(dup, []byte("nodes: 8\nrate: 100\n# again\nrate: 200\n"), 0o644)
	sc := Default()
	err := sc.LoadFile(dup)
	if err == nil || !strings.Contains(err.Error(), "dup.scenario:4: rate given twice (first on line 2)") {
		t.Errorf("LoadFile(duplicate rate) = %v, want it refused naming lines 4 and 2", err)
	}
	faults := filepath.Join(dir, "faults.scenario")
	os.WriteFile(faults, []byte("fault: crash:2@1s\nfault: crash:3@1s\n"), 0o644)
	sc = Default()
	if err := sc.LoadFile(faults); err != nil || len(sc.Faults) != 2 {
		t.Errorf("LoadFile(two faults) = %v, faults %v; want both", err, sc.Faults)
	}
}
