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

// TestExamples runs every `go run ./examples/...` command that
// examples/README.md shows, from the repository's root as a user would:
// each program checks its own result and exits 0 only when it holds.
func TestExamples(t *testing.T) {
	f, err := os.Open("../examples/README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cmds []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "go run ./examples/") {
			cmds = append(cmds, line)
		}
	}
	if len(cmds) < 2 {
		t.Fatalf("examples/README.md shows %d example commands, want at least 2", len(cmds))
	}
	for _, c := range cmds {
		args := strings.Fields(c)
		t.Run(strings.Join(args[2:], " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "go", args[1:]...)
			cmd.Dir = ".."
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", c, err, out)
			}
			if !strings.Contains(string(out), "ok: ") {
				t.Errorf("%s did not say its check held:\n%s", c, out)
			}
		})
	}
}
