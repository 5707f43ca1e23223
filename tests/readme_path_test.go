package tests

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// readmeShownElsewhere are README commands that TestREADMECommands and
// TestExamples do not run, each with the test that runs it (a smaller
// form where the README's is long) or why none does.
var readmeShownElsewhere = map[string]string{
	"go test ./...":                     "the suite itself",
	"go install ./cmd/stacktool":        "TestREADMEInstall",
	"stacktool layers":                  "TestREADMEInstall",
	"go run ./hello":                    "TestREADMEEmbedRuns",
	"stacktool soak --seeds 100":        "TestSoakDeterministic",
	"go doc ./cluster":                  "TestPackageDocListsTheExamples",
	"go test ./cluster -run Example -v": "TestPackageDocListsTheExamples",
	"sudo stacktool bench 'fifo : reliable : pack(size=60KB)' --receivers 3 --messages 200000 --netns": "TestBenchInNetns",
	"scripts/setup-ci.sh":     "not a test: CI runs it (.ci/run) to install iproute2 and etcd",
	"scripts/bench-peers.sh":  "not a test: it installs JGroups, NORM and a JDK with apt-get",
	"go doc -http ./cluster":  "not a test: it downloads pkgsite the first time",
	"stacktool soak":          "TestSoakDeterministic",
	"stacktool node --site S": "TestNodeSiteNetns",
	"scripts/spread-rates.sh": "not a test: a long measurement, the highest rate each Spread stack sustains",
}

// readmeShownCommands returns every command README.md shows: lines of its
// indented code blocks and inline code spans that start as a command does,
// without synopsis lines (placeholders in capitals, [options], ...).
func readmeShownCommands(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(string(b), "")
	isCmd := regexp.MustCompile(`^(go (run|test|install|doc) |stacktool |sudo |scripts/)`)
	synopsis := regexp.MustCompile(`\.\.\.|\[|\b(SPEC|FILE|ADDR|DIR|PAPER|N|K)\b`)
	var out []string
	add := func(c string) {
		c = strings.Join(strings.Fields(c), " ")
		if isCmd.MatchString(c) && !synopsis.MatchString(c) && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	var cur string
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if cur != "" {
			cur += " " + strings.TrimSuffix(strings.TrimSpace(line), `\`)
			if !strings.HasSuffix(line, `\`) {
				add(cur)
				cur = ""
			}
			continue
		}
		if strings.HasPrefix(line, "    ") {
			l := strings.TrimSpace(line)
			if strings.HasSuffix(l, `\`) {
				cur = strings.TrimSuffix(l, `\`)
				continue
			}
			if !regexp.MustCompile(`\S {2,}\S`).MatchString(l) { // a synopsis line with its description
				add(l)
			}
			continue
		}
		for _, m := range regexp.MustCompile("`([^`\n]+)`").FindAllStringSubmatch(line, -1) {
			add(m[1])
		}
	}
	return out
}

// Every command the README shows is run by a test: stacktool commands by
// TestREADMECommands, example programs by TestExamples (through
// examples/README.md), and the rest by the test readmeShownElsewhere names.
func TestREADMENoCommandUntested(t *testing.T) {
	ran := readmeCommands(t)
	ex, err := os.ReadFile("../examples/README.md")
	if err != nil {
		t.Fatal(err)
	}
	var sources strings.Builder
	for _, pat := range []string{"*_test.go", "../cluster/*_test.go"} {
		files, _ := filepath.Glob(pat)
		for _, f := range files {
			b, _ := os.ReadFile(f)
			sources.Write(b)
		}
	}
	for _, c := range readmeShownCommands(t) {
		switch {
		case strings.HasPrefix(c, "go run ./cmd/stacktool "):
			if !slices.Contains(ran, c) {
				t.Errorf("README shows %q inline, where TestREADMECommands does not find it: put it on a line of its own", c)
			}
		case strings.HasPrefix(c, "go run ./examples/"):
			if !strings.Contains(string(ex), "\n    "+c+"\n") {
				t.Errorf("README shows %q, which examples/README.md (run by TestExamples) does not", c)
			}
		default:
			by, ok := readmeShownElsewhere[c]
			switch {
			case !ok:
				t.Errorf("README shows %q, which no test runs: add a test, or name it in readmeShownElsewhere", c)
			case strings.HasPrefix(by, "Test") && !strings.Contains(sources.String(), "func "+by+"("):
				t.Errorf("README's %q is said to be run by %s, which does not exist", c, by)
			}
		}
	}
}

// The README lists every command stacktool has.
func TestREADMEListsEveryCommand(t *testing.T) {
	out, err := exec.Command(stacktool(t), "help").CombinedOutput()
	if err != nil {
		t.Fatalf("stacktool help: %v\n%s", err, out)
	}
	_, list, ok := strings.Cut(string(out), "COMMANDS:")
	if ok {
		list, _, _ = strings.Cut(list, "GLOBAL OPTIONS:")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(list, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "help") {
			continue
		}
		n++
		if !strings.Contains(string(readme), "stacktool "+f[0]+" ") {
			t.Errorf("stacktool has a command %q that README.md does not show (`stacktool %s ...`)", f[0], f[0])
		}
	}
	if n < 12 {
		t.Errorf("stacktool help lists %d commands, want at least the 12 the README shows:\n%s", n, out)
	}
}

// The README's install line works as written, and the installed command
// runs.
func TestREADMEInstall(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const install = "go install ./cmd/stacktool"
	if !strings.Contains(string(b), install) {
		t.Fatalf("README.md does not say %q", install)
	}
	bin := t.TempDir()
	cmd := exec.Command("go", "install", "./cmd/stacktool")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOBIN="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", install, err, out)
	}
	out, err := exec.Command(filepath.Join(bin, "stacktool"), "layers").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "reliable") {
		t.Fatalf("installed stacktool layers: %v\n%s", err, out)
	}
}

// The README's newcomer step: its program saved as hello/main.go in the
// clone and run with go run ./hello prints that nothing is missing.
func TestREADMEEmbedRuns(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "`hello/main.go`") || !strings.Contains(string(b), "    go run ./hello\n") {
		t.Fatal("README.md no longer says to save the program as hello/main.go and go run ./hello")
	}
	pkg := writeProgram(t, "_hello", readmeEmbedProgram(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", pkg)
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run of README's program: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "missing or out of order: 0" {
		t.Errorf("README's program printed %q, want missing or out of order: 0", got)
	}
}
