package tests

import (
	"os"
	"strings"
	"testing"
	"time"
)

// readmeEmbedProgram returns the Go program of README.md's "Embedding a
// stack in a Go program" section.
func readmeEmbedProgram(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "## Embedding a stack in a Go program")
	if !ok {
		t.Fatal(`README.md has no "Embedding a stack in a Go program" section`)
	}
	_, code, ok := strings.Cut(sec, "```go\n")
	if ok {
		code, _, ok = strings.Cut(code, "```")
	}
	if !ok || !strings.Contains(code, "func main() {") {
		t.Fatal("the embedding section has no ```go block with a main function")
	}
	return code
}

// body is what lies between a function's opening line and its closing
// brace (or its "// Output:" comment), with blank edges trimmed.
func body(t *testing.T, src, open string) string {
	t.Helper()
	_, b, ok := strings.Cut(src, open)
	if !ok {
		t.Fatalf("no %q in:\n%s", open, src)
	}
	b, _, _ = strings.Cut(b, "\n}\n")
	b, _, _ = strings.Cut(b, "\t// Output:")
	return strings.TrimSpace(b)
}

// The README's program is cluster's Example, which go test compiles, runs
// and checks: the two must not drift apart.
func TestREADMEEmbedIsTheExample(t *testing.T) {
	ex, err := os.ReadFile("../cluster/example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	readme := body(t, readmeEmbedProgram(t), "func main() {")
	example := body(t, string(ex), "func Example() {")
	if readme != example {
		t.Errorf("README's embedding program differs from cluster.Example:\nREADME:\n%s\n\nExample:\n%s", readme, example)
	}
	if n := strings.Count(readmeEmbedProgram(t), "\n"); n > 60 {
		t.Errorf("README's program has %d lines; keep it about 40", n)
	}
}

// The README says one changed line runs its program on UDP: build the
// README's program with cluster.WithLoss("2%") replaced by
// cluster.WithUDP("lo") and run it in a network namespace made here
// (loopback only, multicast routed on lo): 5 nodes in one process, each on
// its own socket, must deliver every message in order.
func TestREADMEEmbedOnUDP(t *testing.T) {
	ns := newNetns(t)
	prog := readmeEmbedProgram(t)
	const from, to = `cluster.WithLoss("2%")`, `cluster.WithUDP("lo")`
	if strings.Count(prog, from) != 1 {
		t.Fatalf("README's program should name %s once, the line the README says to change", from)
	}
	prog = strings.Replace(prog, from, to, 1)
	bin := buildProgram(t, "_embedudp", "README's program on UDP", prog)
	out, err := ns.run(bin, 60*time.Second)
	if err != nil {
		t.Fatalf("README's program on UDP: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "missing or out of order: 0" {
		t.Errorf("README's program on UDP printed %q, want every message delivered in order", got)
	}
}
