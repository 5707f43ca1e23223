package scripttest

import (
	"slices"
	"strings"
	"testing"

	"github.com/layercast/layercast/event"
	_ "github.com/layercast/layercast/layers/all" // the layers the specs name
)

const sample = `# a comment
seed 7
----

nodes 1 2
----
line one
line two


# trailing comment
cast 1 g1 "x y"
----
`

func TestParseFormatRoundTrip(t *testing.T) {
	s, err := Parse("sample.txt", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	var cmds, wants []string
	for _, c := range s.Cases {
		cmds = append(cmds, c.Cmd)
		wants = append(wants, c.Want)
	}
	if want := []string{"seed 7", "nodes 1 2", `cast 1 g1 "x y"`}; !slices.Equal(cmds, want) {
		t.Fatalf("commands %q, want %q", cmds, want)
	}
	if s.Cases[1].Want != "line one\nline two" || s.Cases[1].Line != 5 {
		t.Fatalf("case 2: want %q at line %d", s.Cases[1].Want, s.Cases[1].Line)
	}
	if got := string(s.Format(wants)); got != sample {
		t.Fatalf("Format changed the file:\n%s", got)
	}
	// Rewriting replaces outputs and keeps everything else.
	got := string(s.Format([]string{"", "new", "a\nb"}))
	if want := strings.Replace(strings.Replace(sample, "line one\nline two\n", "new\n", 1), "\"x y\"\n----\n", "\"x y\"\n----\na\nb\n", 1); got != want {
		t.Fatalf("rewritten:\n%s\nwant:\n%s", got, want)
	}
}

func TestParseMissingSeparator(t *testing.T) {
	_, err := Parse("bad.txt", []byte("seed 7\n----\n\nnodes 1\nadvance 1ms\n----\n"))
	if err == nil || !strings.Contains(err.Error(), "bad.txt:4") {
		t.Fatalf("error %v, want one naming bad.txt:4", err)
	}
}

func TestSplit(t *testing.T) {
	got, err := split(`cast 1 g1 "a \"b\"  c" count=3`)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"cast", "1", "g1", `a "b"  c`, "count=3"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if _, err := split(`cast 1 g1 "open`); err == nil {
		t.Fatal("an unterminated string was accepted")
	}
}

// run executes commands in a fresh Env and returns the joined output.
func run(t *testing.T, e *Env, cmds ...string) string {
	t.Helper()
	var out []string
	for _, c := range cmds {
		out = append(out, tidy(e.Run(c)))
	}
	return strings.Join(out, "\n")
}

// TestBadCommands: each malformed command gives one error, and the
// Env stays usable.
func TestBadCommands(t *testing.T) {
	e := NewEnv()
	for _, c := range []string{
		"", "frobnicate", "cast", "cast 1 g1", "view g1 1", "seed x", "nodes 0", "nodes n",
		"spec nosuch", "spec fifo", "advance -1s", "advance soon", "loss uniform:200%", "trace loud",
		`cast 1 g1 "x`, "print", "check", "stabilize max=forever", "partition 1", "net latency=1",
		"advance 11m", "stabilize max=1h",
	} {
		out := tidy(e.Run(c))
		if !strings.HasPrefix(out, "error: ") || strings.Count(out, "error:") != 1 {
			t.Errorf("%q: got %q, want one error", c, out)
		}
	}
	out := run(t, e, "nodes 1 2", "spec reliable", "view g1 1 2", "cast 1 g1 ok", "stabilize", "check delivered")
	if !strings.Contains(out, `n2 <- n1 g1 #1 "ok"`) || !strings.Contains(out, "ok: every live member") {
		t.Fatalf("after errors, the scenario did not run:\n%s", out)
	}
	for _, c := range []string{"seed 3", "cast 1 g1 x count=0", "cast 1 g1 x every=0s", "cast 1 g1 x n=2", "cast 3 g1 x", "spec fifo : reliable", "nodes 2"} {
		if got := tidy(e.Run(c)); !strings.HasPrefix(got, "error: ") || strings.Count(got, "error:") != 1 {
			t.Errorf("%q: got %q, want one error", c, got)
		}
	}
}

// TestFIFOViolationReported: reliable alone delivers out of order after a
// loss; told to expect FIFO, the harness reports it.
func TestFIFOViolationReported(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		e := NewEnv()
		run(t, e, "nodes 1 2", "spec reliable(nak_delay=5ms)", "view g1 1 2", "loss uniform:100% to=2", "cast 1 g1 a", "loss none", "cast 1 g1 b")
		e.fifo = fifo
		out := run(t, e, "stabilize")
		if !strings.Contains(out, `n2 <- n1 g1 #1 "a" (nak)`) {
			t.Fatalf("the lost message was not recovered:\n%s", out)
		}
		v := e.Violations()
		if fifo != (len(v) == 1) || fifo && !strings.Contains(out, "violation: n2 delivered n1 g1 #1 after #2: out of FIFO order") {
			t.Fatalf("fifo=%v: violations %q in\n%s", fifo, v, out)
		}
	}
}

// TestDuplicateReported feeds the probe the same delivery twice.
func TestDuplicateReported(t *testing.T) {
	e := NewEnv()
	run(t, e, "nodes 1 2", "spec fifo : reliable", "view g1 1 2", "cast 1 g1 a", "stabilize")
	if len(e.Violations()) != 0 {
		t.Fatalf("violations in a clean run: %q", e.Violations())
	}
	m := event.DefaultPool.FromBytes(encode(1, "a"))
	e.deliver(2, &event.Event{Kind: event.Cast, Group: 1, Peer: 1, Msg: m})
	m.Release()
	if v := e.Violations(); len(v) != 1 || !strings.Contains(v[0], "n2 delivered n1 g1 #1 2 times") {
		t.Fatalf("violations %q", v)
	}
}

// TestMissingOwed: a receiver cut off is owed what it missed; once it is
// out of the view (or crashed) it is not.
func TestMissingOwed(t *testing.T) {
	e := NewEnv()
	run(t, e, "nodes 1 2 3", "spec reliable", "view g1 1 2 3", "partition 1,2 | 3", "cast 1 g1 a count=3", "advance 500ms")
	if m := e.Missing(); !slices.Equal(m, []string{"n3 lacks n1 g1 #1..#3"}) {
		t.Fatalf("missing %q", m)
	}
	run(t, e, "view g1 1 2")
	if m := e.Missing(); len(m) != 0 {
		t.Fatalf("n3 left, yet missing %q", m)
	}
	run(t, e, "cast 2 g1 b", "crash 1", "advance 10ms")
	if m := e.Missing(); len(m) != 0 {
		t.Fatalf("missing %q", m)
	}
}

// TestStabilizeBound: a gms stack never goes idle (heartbeats), and
// stabilize says it stopped at its bound.
func TestStabilizeBound(t *testing.T) {
	e := NewEnv()
	out := run(t, e, "nodes 1", "spec gms", "join 1 g1", "stabilize max=300ms")
	if !strings.Contains(out, "not idle after 300ms (bound)") || e.now() != 300e6 {
		t.Fatalf("at %v:\n%s", e.now(), out)
	}
}

func FuzzScript(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("nodes 1 2 3\n----\n\nspec fifo : reliable\n----\n\nview g1 1 2 3\n----\n\ncast 1 g1 x count=3\n----\n\npartition 1 | 2,3\n----\n\nstabilize max=50ms\n----\n\ncheck delivered\n----\n"))
	f.Add([]byte("spec gms(service=9)\n----\n\nnodes 9 1\n----\n\njoin 1 g2\n----\n\nfreeze 1 5ms\n----\n\nadvance 20ms\n----\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := Parse("fuzz.txt", src)
		if err != nil {
			return
		}
		if len(s.Cases) > 20 {
			s.Cases = s.Cases[:20]
		}
		e := NewEnv()
		for _, c := range s.Cases {
			// keep each case cheap: a fuzzer can ask for hours of
			// virtual time
			if strings.HasPrefix(c.Cmd, "advance") || strings.HasPrefix(c.Cmd, "stabilize") {
				c.Cmd = "advance 10ms"
			}
			e.Run(c.Cmd)
		}
		outs := make([]string, len(s.Cases))
		again, err := Parse("fuzz.txt", s.Format(outs))
		if err != nil || len(again.Cases) != len(s.Cases) {
			t.Fatalf("formatted script does not parse back: %v", err)
		}
	})
}

// TestStabilizeWaitsForPackets: a packet sent at time 0 to a stack with no
// timers is still in flight, so stabilize runs until it has arrived.
func TestStabilizeWaitsForPackets(t *testing.T) {
	e := NewEnv()
	run(t, e, "net latency=5ms", "nodes 1 2", "spec reliable")
	e.net.Node(1).Send(2, []byte{0}) // a malformed frame: no timer follows it
	if b := e.busy(); len(b) != 1 || b[0] != "packets in flight" {
		t.Fatalf("busy %q", b)
	}
	out := run(t, e, "stabilize")
	if !strings.Contains(out, "idle after") || e.now() <= 5e6 || e.net.Stats().Deliveries != 1 {
		t.Fatalf("stabilize stopped at %v before the packet arrived:\n%s", e.now(), out)
	}
}

// TestCheck: a script whose expected output is stale is reported (and its
// rewrite matches the run); a script whose members end lacking messages
// fails whatever its expected output says.
func TestCheck(t *testing.T) {
	src := []byte("nodes 1 2\n----\n\nspec reliable\n----\n\nview g1 1 2\n----\nstale\n\ncast 1 g1 x\n----\n\nstabilize\n----\n")
	res, err := Check("stale.txt", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failures) != 0 || len(res.Diffs) != 3 || !strings.Contains(res.Diffs[0], "stale.txt:7: view g1 1 2: output differs") {
		t.Fatalf("failures %q, diffs %q", res.Failures, res.Diffs)
	}
	again, err := Check("stale.txt", res.Rewritten)
	if err != nil || len(again.Failures)+len(again.Diffs) != 0 || string(again.Rewritten) != string(res.Rewritten) {
		t.Fatalf("the rewritten script does not pass: %v %q %q", err, again.Failures, again.Diffs)
	}
	cut := []byte("nodes 1 2\n----\n\nspec reliable\n----\n\nview g1 1 2\n----\n\npartition 1 | 2\n----\n\ncast 1 g1 x\n----\n")
	res, err = Check("cut.txt", cut)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failures) != 1 || !strings.Contains(res.Failures[0], "n2 lacks n1 g1 #1") {
		t.Fatalf("failures %q", res.Failures)
	}
}
