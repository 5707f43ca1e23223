package experiment

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/units"
	"github.com/layercast/layercast/stack"
)

func TestAssignBalanced(t *testing.T) {
	for _, c := range []struct{ n, d, s int }{
		{16, 4, 8}, {64, 4, 8}, {10, 3, 5}, {7, 2, 7}, {128, 10, 16}, {5, 5, 5}, {6, 1, 2}, {9, 4, 3},
	} {
		sc := Default()
		sc.Nodes, sc.GroupsPerNode, sc.GroupSize = c.n, c.d, c.s
		a, err := Assign(sc)
		if err != nil {
			t.Fatalf("Assign(%d,%d,%d) = %v", c.n, c.d, c.s, err)
		}
		if got, want := len(a.Groups), c.n*c.d/c.s; got != want {
			t.Errorf("Assign(%d,%d,%d): %d groups, want %d", c.n, c.d, c.s, got, want)
		}
		for g, ms := range a.Groups {
			if len(ms) != c.s {
				t.Errorf("Assign(%d,%d,%d): %v has %d members, want %d", c.n, c.d, c.s, g, len(ms), c.s)
			}
			for i := 1; i < len(ms); i++ {
				if ms[i] == ms[i-1] {
					t.Errorf("Assign(%d,%d,%d): %v has %v twice", c.n, c.d, c.s, g, ms[i])
				}
			}
		}
		for _, n := range a.Nodes {
			if len(a.Of[n]) != c.d {
				t.Errorf("Assign(%d,%d,%d): %v is in %d groups, want %d", c.n, c.d, c.s, n, len(a.Of[n]), c.d)
			}
		}
	}
}

func TestAssignDependsOnSeedOnly(t *testing.T) {
	sc := Default()
	a1, _ := Assign(sc)
	a2, _ := Assign(sc)
	sc.Seed = 2
	a3, _ := Assign(sc)
	same := func(x, y *Assignment) bool {
		for g, ms := range x.Groups {
			if len(y.Groups[g]) != len(ms) {
				return false
			}
			for i := range ms {
				if ms[i] != y.Groups[g][i] {
					return false
				}
			}
		}
		return true
	}
	if !same(a1, a2) {
		t.Error("two assignments with the same seed differ")
	}
	if same(a1, a3) {
		t.Error("seeds 1 and 2 gave the same assignment")
	}
	sc.Senders = 3
	a4, _ := Assign(sc)
	if len(a4.Senders) != 3 {
		t.Errorf("senders=3 chose %v", a4.Senders)
	}
}

func TestScenarioErrors(t *testing.T) {
	sc := Default()
	for _, c := range []struct{ key, val, want string }{
		{"nodes", "x", "not an integer"},
		{"nodes", "0", "out of range"},
		{"rate", "-3", "out of range"},
		{"rate", "fast", "neither"},
		{"duration", "10", "duration"},
		{"msg-size", "10", "out of range"},
		{"nodez", "3", `did you mean "nodes"`},
	} {
		err := sc.Set(c.key, c.val)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Set(%q, %q) = %v, want error containing %q", c.key, c.val, err, c.want)
		}
	}
	sc = Default()
	sc.GroupSize = 20
	if err := sc.Check(); err == nil || !strings.Contains(err.Error(), "larger than the number of nodes") {
		t.Errorf("group size > nodes: Check() = %v", err)
	}
	sc = Default()
	sc.GroupsPerNode = 3
	sc.GroupSize = 5
	if err := sc.Check(); err == nil || !strings.Contains(err.Error(), "not divisible") || !strings.Contains(err.Error(), "try --group-size") {
		t.Errorf("16*3 %% 5: Check() = %v, want a divisibility error with suggestions", err)
	}
}

func TestScenarioFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.scenario")
	os.WriteFile(p, []byte("# comment\nnodes: 32   # trailing\n\ngroup-size: 4\nrate: max\n"), 0o644)
	sc := Default()
	if err := sc.LoadFile(p); err != nil {
		t.Fatal(err)
	}
	if sc.Nodes != 32 || sc.GroupSize != 4 || sc.Rate != 0 {
		t.Errorf("LoadFile: nodes=%d group-size=%d rate=%v", sc.Nodes, sc.GroupSize, sc.Rate)
	}
	os.WriteFile(p, []byte("nodes: 32\nbogus line\n"), 0o644)
	if err := sc.LoadFile(p); err == nil || !strings.Contains(err.Error(), "x.scenario:2") {
		t.Errorf("LoadFile(bad line) = %v, want file:line", err)
	}
	if err := sc.LoadFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("LoadFile(missing) succeeded")
	}
}

func TestHistQuantiles(t *testing.T) {
	var h hist
	for i := 1; i <= 100000; i++ {
		h.add(time.Duration(i) * time.Microsecond)
	}
	for _, q := range []float64{0.5, 0.9, 0.99} {
		got := float64(h.quantile(q))
		want := q * 100000 * 1000
		if got < want*0.98 || got > want*1.02 {
			t.Errorf("quantile(%v) = %v, want %v within 2%%", q, got, want)
		}
	}
	if h.max != int64(100*time.Millisecond) {
		t.Errorf("max = %v", h.max)
	}
	for v := int64(0); v < 1<<20; v += 37 {
		if i := histIndex(v); histIndex(histValue(i)) != i {
			t.Fatalf("bucket %d of %d does not contain its own middle %d", i, v, histValue(i))
		}
	}
}

// TestCollectorChecks feeds the collector by hand: an in-order stream, a
// duplicate, a reordering and a missing message must each be counted.
func TestCollectorChecks(t *testing.T) {
	c, sc := testCollector(t, 3, 1, 3)
	g := event.GroupID(1)
	buf := make([]byte, PayloadHeader)
	deliver := func(rx event.NodeID, idx uint64, rec string) {
		PutStamp(buf, Stamp{Sender: 1, Group: g, Index: idx, Sent: 0})
		d := stack.Delivery{Group: g, From: 1, Payload: buf, Recovery: event.Recovery{By: rec, Discovered: event.Time(2 * time.Millisecond)}}
		c.Delivered(rx, &d, event.Time(5*time.Millisecond))
	}
	for i := uint64(0); i < 4; i++ {
		c.Sent(1, g, i)
	}
	for i := uint64(0); i < 4; i++ {
		deliver(2, i, "")
	}
	deliver(2, 1, "") // duplicate
	// The network dropped n3's copies of 1 and 2: their deliveries are
	// recoveries.
	c.Dropped(DropModel, 3, &Stamp{Sender: 1, Group: g, Index: 1})
	c.Dropped(DropModel, 3, &Stamp{Sender: 1, Group: g, Index: 2})
	deliver(3, 0, "")    // in order
	deliver(3, 2, "nak") // ahead of 1: FIFO violation
	deliver(3, 1, "nak") // fills the gap
	r := c.Finish(Outcome{End: event.Time(time.Second)})
	if r.Duplicates != 1 || r.FIFOViolations != 1 {
		t.Errorf("duplicates=%d fifo=%d, want 1 and 1", r.Duplicates, r.FIFOViolations)
	}
	if r.DeliveriesExpected != 8 || r.Deliveries != 7 || r.DeliveredAll || r.Missing != 1 {
		t.Errorf("expected=%d deliveries=%d all=%v missing=%d, want 8 7 false 1", r.DeliveriesExpected, r.Deliveries, r.DeliveredAll, r.Missing)
	}
	if r.Loss.Recovered != 2 || r.Loss.RecoveredBy["nak"] != 2 {
		t.Errorf("recovered=%d by=%v", r.Loss.Recovered, r.Loss.RecoveredBy)
	}
	// Recovery latency: delivered at 5ms, would have arrived at 0+latency.
	if want := units.Ms(float64(5*time.Millisecond - sc.Latency)); r.Loss.RecoveryLatencyMs.Mean != want {
		t.Errorf("recovery latency %v, want %v", r.Loss.RecoveryLatencyMs.Mean, want)
	}
	// Node 3 crashed: its missing message no longer counts.
	r = c.Finish(Outcome{End: event.Time(time.Second), Alive: func(n event.NodeID) bool { return n != 3 }})
	if !r.DeliveredAll || r.DeliveriesExpected != 4 {
		t.Errorf("with n3 dead: all=%v expected=%d, want true 4", r.DeliveredAll, r.DeliveriesExpected)
	}
}

func TestLossModelsRates(t *testing.T) {
	for _, spec := range []string{"uniform:5%", "bursty:5%,4", "markov:5%,3"} {
		m, err := ParseLoss(spec)
		if err != nil {
			t.Fatalf("ParseLoss(%q) = %v", spec, err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		drops, runs, prev := 0, 0, false
		const n = 400000
		for i := 0; i < n; i++ {
			d := m.Drop(1, rng)
			if d {
				drops++
				if !prev {
					runs++
				}
			}
			prev = d
		}
		if rate := float64(drops) / n; rate < 0.045 || rate > 0.055 {
			t.Errorf("%s: loss rate %.4f, want 0.05 +- 0.005", spec, rate)
		}
		mean := float64(drops) / float64(runs)
		switch spec {
		case "bursty:5%,4":
			if mean < 3.9 || mean > 4.5 {
				t.Errorf("%s: mean burst %.2f, want about 4", spec, mean)
			}
		case "markov:5%,3":
			if mean < 2.7 || mean > 3.4 {
				t.Errorf("%s: mean burst %.2f, want about 3", spec, mean)
			}
		}
	}
	for _, bad := range []string{"uniform:150%", "uniform", "bursty:5%", "gauss:5%", "uniform:5%,3", "markov:5%,0"} {
		if _, err := ParseLoss(bad); err == nil {
			t.Errorf("ParseLoss(%q) accepted", bad)
		}
	}
}

func TestParseFault(t *testing.T) {
	f, err := ParseFault("freeze:n3@2s+500ms")
	if err != nil || f.Kind != FaultFreeze || f.Node != 3 || f.At != event.Time(2*time.Second) || f.For != 500*time.Millisecond {
		t.Errorf("ParseFault(freeze) = %+v, %v", f, err)
	}
	f, err = ParseFault("crash:7@1.5s")
	if err != nil || f.Kind != FaultCrash || f.Node != 7 || f.At != event.Time(1500*time.Millisecond) {
		t.Errorf("ParseFault(crash) = %+v, %v", f, err)
	}
	for _, bad := range []string{"crash:3", "crash:x@1s", "freeze:3@1s", "melt:3@1s", "crash:0@1s", "crash:3@soon"} {
		if _, err := ParseFault(bad); err == nil {
			t.Errorf("ParseFault(%q) accepted", bad)
		}
	}
}
