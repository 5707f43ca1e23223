package tests

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// readmeCommands returns every command the README shows a user to type that
// runs stacktool through `go run ./cmd/stacktool` (lines continued with a
// trailing backslash are joined). Synopsis lines (`stacktool run SPEC|FILE
// [flags]`) are not commands and do not start with `go run`.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../README.md")
	if err != nil {
		t.Fatalf("open README.md: %v", err)
	}
	defer f.Close()
	var cmds []string
	var cur string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur != "" {
			cur += " " + strings.TrimSuffix(line, `\`)
			if !strings.HasSuffix(line, `\`) {
				cmds = append(cmds, strings.Join(strings.Fields(cur), " "))
				cur = ""
			}
			continue
		}
		if !strings.HasPrefix(line, "go run ./cmd/stacktool ") {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			cur = strings.TrimSuffix(line, `\`)
			continue
		}
		cmds = append(cmds, strings.Join(strings.Fields(line), " "))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cmds
}

// splitArgs splits a README command line into arguments, honouring single
// and double quotes as a shell would for the simple cases the README uses.
func splitArgs(s string) []string {
	var args []string
	var b strings.Builder
	quote := rune(0)
	in := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			b.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ':
			if in {
				args = append(args, b.String())
				b.Reset()
				in = false
			}
		default:
			b.WriteRune(r)
			in = true
		}
	}
	if in {
		args = append(args, b.String())
	}
	return args
}

// TestREADMECommands runs every stacktool command the README shows, from
// the repository's root as a user would, and expects each to succeed (exit
// 0: every promise kept). The README's first command is the main job.
func TestREADMECommands(t *testing.T) {
	cmds := readmeCommands(t)
	if len(cmds) == 0 {
		t.Fatal("README.md shows no `go run ./cmd/stacktool` command")
	}
	tool := stacktool(t)
	for _, c := range cmds {
		args := splitArgs(strings.TrimPrefix(c, "go run ./cmd/stacktool "))
		t.Run(strings.Join(args[:min(2, len(args))], "_"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, tool, args...)
			cmd.Dir = ".."
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", c, err, out)
			}
			if len(out) == 0 {
				t.Fatalf("%s printed nothing", c)
			}
		})
	}
}
