package experiment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/experiment"
	"github.com/layercast/layercast/stack"
)

// passLayer passes everything through and counts what it saw, so the
// harness's own bookkeeping can be checked without a real protocol.
type passLayer struct {
	stack.Base
	casts, acks, peak *stack.Counter
}

func (p *passLayer) Init(ctx *stack.Context) error {
	p.Ctx = ctx
	p.casts = ctx.Counter("casts")
	p.acks = ctx.Counter("acks_sent")
	p.peak = ctx.Counter("peak_buffer_bytes")
	return nil
}

func (p *passLayer) Down(ev *event.Event) {
	if ev.Kind == event.Cast && !ev.Control {
		p.casts.Inc()
		p.acks.Add(2) // pretend: two acks per message
		p.peak.Max(100)
	}
	p.Ctx.Down(ev)
}

// holdLayer holds every group off after each 10 casts and lets it go 20ms
// later, to exercise the senders' back-pressure path.
type holdLayer struct {
	stack.Base
	n map[event.GroupID]int
}

func (h *holdLayer) Init(ctx *stack.Context) error {
	h.Ctx = ctx
	h.n = map[event.GroupID]int{}
	return nil
}

func (h *holdLayer) Down(ev *event.Event) {
	if ev.Kind == event.Cast && !ev.Control {
		h.n[ev.Group]++
		if h.n[ev.Group]%10 == 0 {
			g := ev.Group
			h.Ctx.Up(&event.Event{Kind: event.HoldOff, Group: g})
			h.Ctx.NewTimer(func() { h.Ctx.Up(&event.Event{Kind: event.Resume, Group: g}) }).Reset(20 * time.Millisecond)
		}
	}
	h.Ctx.Down(ev)
}

func init() {
	compose.Register(compose.LayerInfo{Name: "exptest_pass", Summary: "test: passes events through.",
		New: func(compose.Params) (stack.Layer, error) { return &passLayer{}, nil },
		Counters: []compose.CounterDoc{
			{Name: "casts", Doc: "casts passed down"},
			{Name: "acks_sent", Role: compose.AckRole, Doc: "pretend acknowledgements, two per cast"},
			{Name: "peak_buffer_bytes", Kind: compose.Peak, Role: compose.BufferPeakRole, Doc: "pretend buffer peak"},
		},
		// The layer's own reading of its counters: the report shows it
		// without any change to experiment/.
		Summarize: func(c compose.Counters) compose.Summary {
			var s compose.Summary
			if n := c.Total["casts"]; n > 0 {
				s.Ratio("acks_per_cast", float64(c.Total["acks_sent"])/float64(n))
			}
			busiest := ""
			var most int64
			for _, nc := range c.Nodes {
				if v := nc.Values["casts"]; v > most {
					busiest, most = nc.Node.String(), v
				}
			}
			s.Notes = append(s.Notes, fmt.Sprintf("%d nodes ran me; %s cast most (%d)", len(c.Nodes), busiest, most))
			s.Extra = map[string]int64{"most": most}
			return s
		},
	})
	compose.Register(compose.LayerInfo{Name: "exptest_hold", Summary: "test: holds groups off now and then.",
		New: func(compose.Params) (stack.Layer, error) { return &holdLayer{}, nil }})
}

// run runs spec (a spec string or a .stack file) on the simulator under the
// default scenario with overrides as stacktool run flags (key, value pairs).
func run(t *testing.T, spec string, kv ...string) *experiment.Report {
	t.Helper()
	return runScenario(t, spec, experiment.Default(), kv...)
}

// runScenario is run from the scenario sc.
func runScenario(t *testing.T, spec string, sc experiment.Scenario, kv ...string) *experiment.Report {
	t.Helper()
	sp, err := compose.Load(spec)
	if err != nil {
		t.Fatalf("compose.Load(%q) = %v", spec, err)
	}
	for i := 0; i < len(kv); i += 2 {
		if err := sc.Set(kv[i], kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := experiment.Run(context.Background(), "sim", sp, sc, nil)
	if err != nil {
		t.Fatalf("Run(%q) = %v", spec, err)
	}
	return rep
}

func TestHarnessCountsAndChecks(t *testing.T) {
	// 8 nodes in 4 groups of 4, 2 groups each; 3 senders at 100/s for 2s.
	rep := run(t, "exptest_pass", "nodes", "8", "groups-per-node", "2", "group-size", "4",
		"senders", "3", "rate", "100", "duration", "2s", "latency", "2ms", "jitter", "0")
	if rep.MessagesSent != 3*200 {
		t.Errorf("messages_sent = %d, want 600", rep.MessagesSent)
	}
	if rep.DeliveriesExpected != 600*3 || rep.Deliveries != 1800 || !rep.DeliveredAll {
		t.Errorf("deliveries %d of %d (all=%v), want 1800 of 1800", rep.Deliveries, rep.DeliveriesExpected, rep.DeliveredAll)
	}
	if rep.Duplicates != 0 || rep.FIFOViolations != 0 || rep.Loss.Dropped != 0 || rep.Loss.Recovered != 0 {
		t.Errorf("dup=%d fifo=%d dropped=%d recovered=%d, want zeros", rep.Duplicates, rep.FIFOViolations, rep.Loss.Dropped, rep.Loss.Recovered)
	}
	if rep.LatencyMs.P50 != 2 || rep.LatencyMs.Max != 2 {
		t.Errorf("latency %+v, want 2ms exactly (no jitter)", rep.LatencyMs)
	}
	if rep.Overhead.AcksPerMsg != 2 || rep.PeakBufferBytes != 100 || rep.Layers["exptest_pass"]["casts"] != 600 {
		t.Errorf("acks/msg=%v peak=%d layers=%v", rep.Overhead.AcksPerMsg, rep.PeakBufferBytes, rep.Layers)
	}
	// Each receiver gets 100/s from each sender sharing a group with it,
	// split over the sender's 2 groups: throughput is about 50/s per
	// (sender, shared group), so between 50 and 300.
	if rep.ThroughputMsgsPerS < 50 || rep.ThroughputMsgsPerS > 300 {
		t.Errorf("throughput per receiver %v msgs/s, want 50..300", rep.ThroughputMsgsPerS)
	}
	// Ended early: everything was delivered at about 2s + 2ms.
	if rep.SimSeconds > 2.1 {
		t.Errorf("sim_seconds = %v, want the run to stop once all is delivered", rep.SimSeconds)
	}
}

func TestHarnessLossIsMeasured(t *testing.T) {
	// No recovery layer: the loss shows as missing deliveries and the
	// report says so.
	rep := run(t, "exptest_pass", "nodes", "8", "groups-per-node", "2", "group-size", "4", "duration", "1s", "loss", "uniform:10%")
	if rep.DeliveredAll || rep.Loss.Dropped == 0 || rep.Missing == 0 || len(rep.Notes) == 0 {
		t.Errorf("10%% loss without recovery: all=%v dropped=%d missing=%d notes=%q", rep.DeliveredAll, rep.Loss.Dropped, rep.Missing, rep.Notes)
	}
	if rep.Missing != rep.DeliveriesExpected-rep.Deliveries {
		t.Errorf("missing %d != expected %d - delivered %d", rep.Missing, rep.DeliveriesExpected, rep.Deliveries)
	}
}

func TestHarnessCrashedNodesExcluded(t *testing.T) {
	rep := run(t, "exptest_pass", "nodes", "8", "groups-per-node", "2", "group-size", "4", "duration", "2s", "fault", "crash:3@1s")
	if !rep.DeliveredAll {
		t.Errorf("survivors should have everything from surviving senders: %d of %d, notes %q", rep.Deliveries, rep.DeliveriesExpected, rep.Notes)
	}
	full := run(t, "exptest_pass", "nodes", "8", "groups-per-node", "2", "group-size", "4", "duration", "2s")
	if rep.MessagesSent >= full.MessagesSent {
		t.Errorf("crashed sender kept sending: %d messages, %d without the crash", rep.MessagesSent, full.MessagesSent)
	}
}

func TestHarnessBackpressure(t *testing.T) {
	for _, rate := range []string{"2000", "max"} {
		rep := run(t, "exptest_hold : exptest_pass", "nodes", "8", "groups-per-node", "2", "group-size", "4",
			"rate", rate, "duration", "1s", "jitter", "0")
		if rep.Backpressure == 0 {
			t.Errorf("rate %s: no back-pressure seen", rate)
		}
		if !rep.DeliveredAll || rep.FIFOViolations != 0 || rep.MessagesSent == 0 {
			t.Errorf("rate %s: all=%v fifo=%d sent=%d", rate, rep.DeliveredAll, rep.FIFOViolations, rep.MessagesSent)
		}
		// Each node holds each of its 2 groups 20ms after every 10 casts:
		// at most about 500 casts per (node, group) per second.
		if per := float64(rep.MessagesSent) / 16; per > 520 || per < 400 {
			t.Errorf("rate %s: %v casts per (node, group) in 1s, want about 500 with the holds", rate, per)
		}
	}
}

func TestHarnessRepeatable(t *testing.T) {
	kv := []string{"nodes", "8", "groups-per-node", "2", "group-size", "4", "duration", "1s", "loss", "uniform:5%"}
	a, _ := json.Marshal(run(t, "exptest_pass", kv...).Mask())
	b, _ := json.Marshal(run(t, "exptest_pass", kv...).Mask())
	if string(a) != string(b) {
		t.Errorf("same seed, different reports:\n%s\n%s", a, b)
	}
	c, _ := json.Marshal(run(t, "exptest_pass", append(kv, "seed", "2")...).Mask())
	if string(a) == string(c) {
		t.Error("seeds 1 and 2 gave identical reports")
	}
}

func TestUnknownNetwork(t *testing.T) {
	sp, err := compose.Load("exptest_pass")
	if err != nil {
		t.Fatal(err)
	}
	_, err = experiment.Run(context.Background(), "pigeon", sp, experiment.Default(), nil)
	if err == nil || !strings.Contains(err.Error(), "sim") {
		t.Errorf("Run on an unknown network = %v, want an error listing the networks", err)
	}
}

func TestHarnessFreezePausesSender(t *testing.T) {
	kv := []string{"nodes", "8", "groups-per-node", "2", "group-size", "4", "duration", "1s", "jitter", "0"}
	full := run(t, "exptest_pass", kv...)
	rep := run(t, "exptest_pass", append(kv, "fault", "freeze:3@300ms+200ms")...)
	// The frozen node's arrivals wait in its receive buffer and its sends
	// resume (catching up) once it thaws: nothing is lost.
	if !rep.DeliveredAll || rep.MessagesSent != full.MessagesSent || rep.Backpressure != 0 {
		t.Errorf("freeze: all=%v sent=%d (without freeze %d), notes %q", rep.DeliveredAll, rep.MessagesSent, full.MessagesSent, rep.Notes)
	}
	if rep.LatencyMs.Max < 150 {
		t.Errorf("freeze: max latency %vms, want the 200ms freeze to show", rep.LatencyMs.Max)
	}
}

// A layer registered with its own counters and Summarize shows up in a
// run's report (ratios beside its counters in JSON, notes, extra, the acks
// row) with no change to experiment/: the harness reads counters by the
// roles the registration gives them, never by name.
func TestLayerExplainsItself(t *testing.T) {
	rep := run(t, "exptest_pass", "nodes", "8", "groups-per-node", "2", "group-size", "4",
		"senders", "3", "rate", "100", "duration", "2s", "latency", "2ms", "jitter", "0")
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var js struct {
		Layers   map[string]map[string]float64 `json:"layers"`
		Notes    []string                      `json:"notes"`
		Extra    map[string]map[string]int64   `json:"extra"`
		Overhead struct {
			AcksPerMsg   float64            `json:"acks_per_msg"`
			AcksPerMsgBy map[string]float64 `json:"acks_per_msg_by"`
		} `json:"overhead"`
	}
	if err := json.Unmarshal(raw, &js); err != nil {
		t.Fatal(err)
	}
	if got := js.Layers["exptest_pass"]; got["acks_per_cast"] != 2 || got["casts"] != 600 {
		t.Errorf("layers.exptest_pass = %v, want acks_per_cast 2 beside casts 600", got)
	}
	// 3 senders of 200 messages each; all 8 nodes run the layer.
	want := "exptest_pass: 8 nodes ran me; "
	var note string
	for _, n := range js.Notes {
		if strings.HasPrefix(n, want) {
			note = n
		}
	}
	if !strings.HasSuffix(note, "cast most (200)") {
		t.Errorf("notes %q, want one starting %q and ending in 'cast most (200)'", js.Notes, want)
	}
	if js.Extra["exptest_pass"]["most"] != 200 {
		t.Errorf("extra = %v, want exptest_pass.most 200", js.Extra)
	}
	if js.Overhead.AcksPerMsgBy["exptest_pass"] != 2 || js.Overhead.AcksPerMsg != 2 {
		t.Errorf("overhead acks %v by %v, want 2 from exptest_pass", js.Overhead.AcksPerMsg, js.Overhead.AcksPerMsgBy)
	}
	var b strings.Builder
	if err := experiment.WriteTable(&b, []*experiment.Report{rep}, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "exptest_pass 2.000") {
		t.Errorf("the table does not show the layer's acks per message:\n%s", b.String())
	}
}

// TestSoakCountsWhatItTried: each spec's line counts the crashes, freezes,
// partitions and bursty-loss runs its scenarios set, and the owed
// deliveries the checks covered.
func TestSoakCountsWhatItTried(t *testing.T) {
	sp, err := compose.Load("fifo:reliable")
	if err != nil {
		t.Fatal(err)
	}
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	res := experiment.Soak(context.Background(), experiment.SoakOptions{Seeds: seeds, Quick: true, Workers: 1,
		Specs: []experiment.SoakSpec{{Name: "fifo:reliable", Spec: sp}}})
	var want experiment.SoakTried
	for _, s := range seeds {
		sc := experiment.SoakScenario(s, true)
		for _, f := range sc.Faults {
			switch f[:strings.Index(f, ":")+1] {
			case "crash:":
				want.Crashes++
			case "freeze:":
				want.Freezes++
			case "partition:":
				want.Partitions++
			}
		}
		if l := sc.Loss; strings.HasPrefix(l, "bursty") || strings.HasPrefix(l, "markov") {
			want.Bursts++
		}
	}
	got := res.BySpec[0].Tried
	if want.Crashes+want.Freezes+want.Partitions == 0 {
		t.Fatalf("seeds %v set no fault: pick seeds that do", seeds)
	}
	if got.Checked <= 0 {
		t.Errorf("checked %d owed deliveries, want some", got.Checked)
	}
	got.Checked = 0
	if got != want {
		t.Errorf("tried %+v, want %+v", got, want)
	}
}
