package main

import (
	"encoding/json"
	"strings"
	"testing"

	"sync"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/experiment"
	"github.com/layercast/layercast/stack"
)

// panicLayer panics on the 50th cast it sends.
type panicLayer struct {
	stack.Base
	n int
}

func (p *panicLayer) Down(ev *event.Event) {
	if ev.Kind == event.Cast && !ev.Control {
		if p.n++; p.n == 50 {
			panic("clitest_panic: the 50th cast")
		}
	}
	p.Ctx.Down(ev)
}

// registerPanic registers clitest_panic once, from the test that uses it
// (not in init, so the catalogue other tests print is the real one).
var registerPanic = sync.OnceFunc(func() {
	compose.Register(compose.LayerInfo{Name: "clitest_panic", Summary: "test: panics on its 50th cast.",
		New: func(compose.Params) (stack.Layer, error) { return &panicLayer{}, nil }})
})

var small = []string{"--nodes", "6", "--group-size", "3", "--groups-per-node", "1", "--duration", "500ms", "--drain", "200ms"}

// TestExitCodes: 0 when every promise was kept, 1 when one was broken (the
// error says which) or a run panicked (with the replay command), 2 on bad
// input; for run, compare and soak.
func TestExitCodes(t *testing.T) {
	registerPanic()
	// Nothing gets through: reliable cannot deliver what it promised.
	lossy := append([]string{"--loss", "uniform:100%"}, small...)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{append([]string{"run", "fifo:reliable"}, small...), 0, ""},
		{append([]string{"compare", "fifo:reliable", "reliable"}, small...), 0, ""},
		{append([]string{"run", "fifo:reliable"}, lossy...), 1, "owed deliveries missing with no fault to explain them"},
		{append([]string{"run", "fifo:reliable", "--json"}, lossy...), 1, "promise broken"},
		{append([]string{"compare", "reliable", "fifo:reliable"}, lossy...), 1, "[2] fifo : reliable"},
		{append([]string{"run", "clitest_panic"}, small...), 1, "replay: stacktool run clitest_panic --nodes 6"},
		{[]string{"run", "fifo:reliable", "--loss", "uniform:150%"}, 2, "150"},
		{[]string{"run", "fifo:relaible"}, 2, "reliable"},
		{[]string{"run", "--bogus", "fifo:reliable"}, 2, "bogus"},
		{[]string{"compare"}, 2, "at least one spec"},
		{[]string{"soak"}, 2, "--seeds"},
		{[]string{"soak", "--seeds", "2", "--spec", "nonsense"}, 2, "nonsense"},
		{[]string{"soak", "--seeds", "1", "--quick", "--spec", "clitest_panic"}, 1, "broke an invariant"},
	} {
		out, err := runCLI(t, c.args...)
		if got := exitCode(err); got != c.code {
			t.Errorf("stacktool %s: exit %d (%v), want %d", strings.Join(c.args, " "), got, err, c.code)
			continue
		}
		// Spec errors show the text with a caret on further lines; the
		// others are one line.
		if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || (c.code == 1 && strings.Contains(err.Error(), "\n"))) {
			t.Errorf("stacktool %s: error %q, want one line containing %q", strings.Join(c.args, " "), err, c.want)
		}
		if c.code == 1 && strings.Contains(strings.Join(c.args, " "), "--json") {
			var m map[string]any
			if json.Unmarshal([]byte(out), &m) != nil || m["broken_promises"] == nil {
				t.Errorf("run --json of a broken promise printed no report with broken_promises:\n%s", out)
			}
		}
	}
}

// TestExitCodeMapping: what carries a code keeps it; a failed run is 1;
// anything else is bad input.
func TestExitCodeMapping(t *testing.T) {
	if exitCode(nil) != 0 || exitCode(brokenf("x")) != 1 || exitCode(&experiment.PanicError{}) != 1 || exitCode(errString("bad")) != 2 {
		t.Error("exitCode maps nil, brokenf, PanicError and a plain error wrong")
	}
}

type errString string

func (e errString) Error() string { return string(e) }
