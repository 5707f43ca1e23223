package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// writeProgram saves src as main.go of a package inside the module (so it
// builds with its go.mod), in a directory whose name starts with prefix, an
// underscore, so that ./... skips it; the directory is removed after the
// test. It returns the directory's name relative to the module root.
func writeProgram(t *testing.T, prefix, src string) string {
	t.Helper()
	dir, err := os.MkdirTemp("..", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return "./" + filepath.Base(dir)
}

// buildProgram builds src (see writeProgram) and returns the binary's path;
// a failed build fails t, naming the program as what and showing src.
func buildProgram(t *testing.T, prefix, what, src string) string {
	t.Helper()
	pkg := writeProgram(t, prefix, src)
	bin := filepath.Join(t.TempDir(), "prog")
	build := exec.Command("go", "build", "-o", bin, pkg)
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of %s: %v\n%s\n%s", what, err, out, src)
	}
	return bin
}

// run runs bin inside the namespace, killed after timeout, and returns
// what it printed (stdout and stderr together).
func (ns *netns) run(bin string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return ns.commandContext(ctx, bin).CombinedOutput()
}
