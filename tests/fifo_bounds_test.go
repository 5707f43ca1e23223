package tests

import (
	"slices"
	"strings"
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/experiment"
	_ "github.com/layercast/layercast/layers/all"
)

// TestFifoNeverGivesUpUnderReliable: with the default bounds, fifo's reorder
// buffer can never overflow over reliable (reliable tracks at most `window`
// numbers ahead of the first gap and drops, then NAKs, what lies beyond), so
// a slow recovery costs time, never a message. Before the bounds agreed
// (reliable's window 8192 against fifo's 4096 messages and 4 MB), a sender
// at 20,000 msgs/s with NAKs answered half a second late overflowed fifo,
// which gave the gap up: a promise broken with nothing to explain it.
func TestFifoNeverGivesUpUnderReliable(t *testing.T) {
	rep, _ := simRun(t, "fifo : reliable(nak_delay=400ms, nak_retry=400ms)", "",
		"nodes", "3", "group-size", "3", "groups-per-node", "1", "senders", "1",
		"rate", "20000", "duration", "1s", "drain", "10s", "loss", "uniform:2%", "seed", "3")
	if len(rep.Broken) != 0 || rep.Missing != 0 {
		t.Fatalf("broken %q, missing %d: fifo gave up messages reliable was still recovering", rep.Broken, rep.Missing)
	}
}

// TestFifoFitsAWiderReliableWindow: a user who widens reliable's window
// (window=16384, max_buffer=32MB: a sender runs 16,384 messages ahead of a
// receiver's first gap) and leaves fifo at its defaults gets fifo's bounds
// raised to hold that window (compose fits them: LayerInfo.FitSpread), so
// a repair that takes a while costs time, not messages. With fifo's old
// fixed defaults written out (max_reorder=4096, 16MB) the same run gives up
// 4,186 messages reliable was still repairing (the trap found in issue 12's
// UDP benchmark), which the second case keeps proving, and `check` notes it.
func TestFifoFitsAWiderReliableWindow(t *testing.T) {
	run := func(spec string) *experiment.Report {
		t.Helper()
		rep, _ := simRun(t, spec, "", "nodes", "4", "group-size", "4", "groups-per-node", "1", "senders", "1",
			"rate", "max", "duration", "1s", "drain", "5s", "latency", "10ms", "loss", "bursty:5%,20", "seed", "1")
		return rep
	}
	rep := run("fifo : reliable(window=16384, max_buffer=32MB)")
	if len(rep.Broken) != 0 || rep.Missing != 0 || rep.Deliveries < 3*50000 {
		t.Fatalf("fitted fifo: broken %q, missing %d, %d deliveries (want everything, at least 150,000)", rep.Broken, rep.Missing, rep.Deliveries)
	}
	narrow := "fifo(max_reorder=4096, max_reorder_bytes=16MB) : reliable(window=16384, max_buffer=32MB)"
	rep = run(narrow)
	if rep.Missing == 0 {
		t.Fatalf("%s lost nothing: the run no longer reaches past fifo's old bounds, so it does not show the fitting matters", narrow)
	}
	if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.HasPrefix(n, "spec: fifo: ") }) {
		t.Errorf("the report of %s, which lost %d, does not say fifo's bounds are below reliable's window: notes %q", narrow, rep.Missing, rep.Notes)
	}
	ls, err := compose.ExplainString(narrow)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls[0].Notes) != 1 || !strings.Contains(ls[0].Notes[0], "gives up gaps") {
		t.Errorf("check's notes on fifo set below reliable's window: %q, want one saying it gives up gaps", ls[0].Notes)
	}
	ls, err = compose.ExplainString("fifo : reliable(window=16384)")
	if err != nil {
		t.Fatal(err)
	}
	if p := ls[0].Params; p.Int("max_reorder") != 16384 || p.Int("max_reorder_bytes") < 16383*1948 || p.Fitted("max_reorder") == "" || len(ls[0].Notes) != 0 {
		t.Errorf("fifo over reliable(window=16384): max_reorder %d, max_reorder_bytes %d, fitted %q, notes %q; want 16384, room for 16383 small messages, fitted, no note",
			p.Int("max_reorder"), p.Int("max_reorder_bytes"), p.Fitted("max_reorder"), ls[0].Notes)
	}
	ls, err = compose.ExplainString("fifo : reliable")
	if err != nil {
		t.Fatal(err)
	}
	if p := ls[0].Params; p.Int("max_reorder") != 4096 || p.Fitted("max_reorder") != "" || p.Fitted("max_reorder_bytes") != "" || len(ls[0].Notes) != 0 {
		t.Errorf("fifo over default reliable: max_reorder %d fitted %q/%q notes %q; want the defaults untouched", p.Int("max_reorder"), p.Fitted("max_reorder"), p.Fitted("max_reorder_bytes"), ls[0].Notes)
	}
}
