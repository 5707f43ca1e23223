// Package scripttest runs scripted scenarios against real stacks on the
// simulator and compares what happened with golden output, in the manner of
// raft's datadriven interaction tests. It is test support for this module
// (and for layers written outside it); import it from _test.go files only.
//
// A script (testdata/*.txt) is a list of cases. Each case is one command
// line, a separator line "----", and the expected output: every event the
// command caused, one per line, ending at the first blank line or at the end
// of the file. Lines starting with '#' before a command are comments.
//
//	seed 7
//	----
//
//	cast 1 g1 "x"
//	----
//	0ms n1 cast g1 #1 "x"
//
// # Commands
//
// Node ids are numbers (1 or n1), groups g1, g2, ..., durations Go's (5ms,
// 1.5s). Every line of output an event causes starts with the virtual time.
//
//	seed N                 seed of the network and the stacks (before use)
//	net latency=D jitter=D the network's link delay (before use; 1ms, 0)
//	nodes ID...            add member nodes (stacks built once spec is known)
//	spec SPEC              the members' stack, e.g. fifo : reliable : gms;
//	                       a layer that gives views and has a service
//	                       parameter (gms) brings its service node (gms_service
//	                       with the parameters both share), printed as svc
//	view G ID...           install a static view at its members and at the
//	                       members of the previous one (no service only)
//	join ID[,ID...] G      the application joins (leave: leaves) the group
//	cast ID G ["text"] [count=N] [every=D]
//	                       cast N messages ("text1".."textN" when N > 1),
//	                       one every D (the later ones as time advances)
//	advance D              run the simulator for D (at most 10m)
//	stabilize [max=D]      run until idle: nothing sent or received for a
//	                       link delay, no node frozen, no timer pending; at
//	                       most D (10s), saying so if it stops there
//	partition A,B | C      split the network; heal ends it
//	crash ID, freeze ID D  faults of transport/sim
//	loss MODEL [to=ID,...] loss model of sim.ParseLoss (or none), for
//	                       packets to the listed nodes only if to= is given
//	trace drops|packets|off print every drop (or packet) too, not only counts
//	quiet on|off           count casts and deliveries per node and command
//	                       instead of printing each (long runs)
//	print counters LAYER [ID...] | print views | print net
//	check delivered        what live members lack of what is owed to them
//
// Deliveries print as `n2 <- n1 g1 #3 "x" (nak)`: receiver, sender, group,
// the script's number of the message in its sender's stream, its text, and
// how it was recovered if it was. Views print with who joined (+) and left
// (-); other events reaching the application (holdoff, resume, lost,
// suspect, fail) by kind, group and peer; faults as the simulator names
// them; drops as counts by cause after each command.
//
// After every delivery the harness checks that no message arrives twice
// and, when the stack gives FIFO order, none before an earlier one of its
// sender; a broken invariant prints a "violation:" line and fails the test.
// At the end of a script every live member in its view must hold every
// message owed to it (see Env.Missing), and the script must print the same
// twice (determinism).
//
// Run the tests with -rewrite to regenerate the expected output of every
// script in place (review the diff before committing it):
//
//	go test ./layers/reliable/ ./layers/fifo/ ./layers/gms/ -run TestScripts -rewrite
package scripttest

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// rewrite is a flag of every test binary that imports this package, as
// datadriven's -rewrite is.
var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of scenario scripts in testdata")

// Case is one command of a script and its expected output.
type Case struct {
	// Pre is the text before the command (comments and blank lines), kept
	// verbatim when the file is rewritten.
	Pre string
	// Line is the command's line number (from 1).
	Line int
	// Cmd is the command line as written.
	Cmd string
	// Want is the expected output, one event per line, without a final
	// newline.
	Want string
}

// Script is a parsed script file.
type Script struct {
	File  string // the path it was read from
	Cases []Case // its cases, in file order
	// Tail is the text after the last case (comments, blank lines).
	Tail string
}

// Parse reads a script. The only error is a command without its "----"
// separator line.
func Parse(file string, src []byte) (*Script, error) {
	lines := strings.Split(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1] // the file's final newline
	}
	s := &Script{File: file}
	var pre strings.Builder
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
			pre.WriteString(l)
			pre.WriteByte('\n')
			continue
		}
		c := Case{Pre: pre.String(), Line: i + 1, Cmd: strings.TrimSpace(l)}
		pre.Reset()
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "----" {
			return nil, fmt.Errorf("%s:%d: command %q is not followed by a line \"----\"", file, i+1, c.Cmd)
		}
		i += 2
		var want []string
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			want = append(want, lines[i])
		}
		i-- // the blank line (if any) starts the next case's Pre
		c.Want = strings.Join(want, "\n")
		s.Cases = append(s.Cases, c)
	}
	s.Tail = pre.String()
	return s, nil
}

// Format prints the script with the given outputs in place of the expected
// ones (outs[i] for Cases[i]).
func (s *Script) Format(outs []string) []byte {
	var b bytes.Buffer
	for i, c := range s.Cases {
		b.WriteString(c.Pre)
		b.WriteString(c.Cmd)
		b.WriteString("\n----\n")
		if outs[i] != "" {
			b.WriteString(outs[i])
			b.WriteByte('\n')
		}
	}
	b.WriteString(s.Tail)
	return b.Bytes()
}

// Runner executes one command and returns its output (no blank lines).
type Runner interface {
	Run(cmd string) string
}

// Exec runs every case of s with r and returns the outputs.
func Exec(s *Script, r Runner) []string {
	outs := make([]string, len(s.Cases))
	for i, c := range s.Cases {
		outs[i] = tidy(r.Run(c.Cmd))
	}
	return outs
}

// tidy drops trailing spaces and blank lines, which would end the output
// early when the file is read back.
func tidy(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimRight(l, " \t")
		if l != "" {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// Glob lists the scripts matching pattern, sorted; it fails the test if
// there are none.
func Glob(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no scripts match %s", pattern)
	}
	sort.Strings(files)
	return files
}

// RunFiles runs every script matching pattern as a subtest, each in a fresh
// Env, twice: both runs must print the same (determinism), and the output
// must match the file (or, with -rewrite, replaces it). At the end of each
// script every live member must have delivered every message owed to it.
func RunFiles(t *testing.T, pattern string) {
	for _, file := range Glob(t, pattern) {
		t.Run(strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)), func(t *testing.T) {
			RunFile(t, file)
		})
	}
}

// RunFile runs one script as RunFiles does.
func RunFile(t *testing.T, file string) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Check(file, src)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Failures {
		t.Error(f)
	}
	if *rewrite {
		if err := os.WriteFile(file, res.Rewritten, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, d := range res.Diffs {
		t.Error(d)
	}
}

// Result is what Check found in one script.
type Result struct {
	// Failures are broken promises: two runs that differ, invariants
	// broken, messages owed and never delivered. -rewrite does not excuse
	// them.
	Failures []string
	// Diffs are cases whose output is not the expected one.
	Diffs []string
	// Rewritten is the script with the output of this run as expected.
	Rewritten []byte
}

// Check runs the script src (named file in messages) twice, each in a fresh
// Env, and compares the runs with each other and with the expected output.
func Check(file string, src []byte) (*Result, error) {
	s, err := Parse(file, src)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	var runs [2][]string
	var envs [2]*Env
	for k := range runs {
		envs[k] = NewEnv()
		runs[k] = Exec(s, envs[k])
	}
	for i, c := range s.Cases {
		if runs[0][i] != runs[1][i] {
			res.Failures = append(res.Failures, fmt.Sprintf("%s:%d: %s: two runs of the same script differ:\n--- first\n%s\n--- second\n%s", file, c.Line, c.Cmd, runs[0][i], runs[1][i]))
		}
	}
	env := envs[0]
	for _, v := range env.Violations() {
		res.Failures = append(res.Failures, fmt.Sprintf("%s: invariant broken: %s", file, v))
	}
	if missing := env.Missing(); len(missing) > 0 {
		res.Failures = append(res.Failures, fmt.Sprintf("%s: at the end of the script, members lack messages owed to them:\n%s", file, strings.Join(missing, "\n")))
	}
	for i, c := range s.Cases {
		if runs[0][i] != c.Want {
			res.Diffs = append(res.Diffs, fmt.Sprintf("%s:%d: %s: output differs (go test -rewrite regenerates it)\n--- want\n%s\n--- got\n%s", file, c.Line, c.Cmd, c.Want, runs[0][i]))
		}
	}
	res.Rewritten = s.Format(runs[0])
	return res, nil
}

// errUsage is wrapped by every error about a malformed command.
var errUsage = errors.New("usage")
