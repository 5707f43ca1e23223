package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// udpReport is the part of `stacktool run --json` this test checks.
type udpReport struct {
	Network            string  `json:"network"`
	MessagesSent       int64   `json:"messages_sent"`
	Deliveries         int64   `json:"deliveries"`
	DeliveriesExpected int64   `json:"deliveries_expected"`
	DeliveredAll       bool    `json:"delivered_all"`
	Duplicates         int64   `json:"duplicates"`
	FIFOViolations     int64   `json:"fifo_violations"`
	Missing            int64   `json:"missing"`
	ThroughputMsgsPerS float64 `json:"throughput_msgs_per_s"`
	WallSeconds        float64 `json:"wall_seconds"`
	LatencyMs          struct {
		P50, P99, Max float64
	} `json:"latency_ms"`
	Layers map[string]map[string]int64 `json:"layers"`
	Notes  []string                    `json:"notes"`
}

// checkAllDelivered fails t unless the run went over UDP, cast sent
// messages, and delivered exactly the deliveries expected, each once and in
// FIFO order.
func (r *udpReport) checkAllDelivered(t *testing.T, sent, deliveries int64) {
	t.Helper()
	if r.Network != "udp" {
		t.Errorf("network %q, want udp", r.Network)
	}
	if r.MessagesSent != sent {
		t.Errorf("messages_sent %d, want %d", r.MessagesSent, sent)
	}
	if r.DeliveriesExpected != deliveries || r.Deliveries != deliveries || !r.DeliveredAll || r.Missing != 0 {
		t.Errorf("deliveries %d of %d expected (missing %d, delivered_all %v), want %d of %d\nnotes: %s",
			r.Deliveries, r.DeliveriesExpected, r.Missing, r.DeliveredAll, deliveries, deliveries, strings.Join(r.Notes, "; "))
	}
	if r.Duplicates != 0 || r.FIFOViolations != 0 {
		t.Errorf("%d duplicates and %d FIFO violations, want none", r.Duplicates, r.FIFOViolations)
	}
}

// runUDP runs `stacktool run ARGS` (a run with --network udp --json) in a
// new network namespace with loopback only, within timeout, and decodes
// its report into r. A run that exits non-zero is fatal unless partial is
// set and it still printed a report (a checked outcome failed: the report
// says which).
func runUDP(t *testing.T, timeout time.Duration, partial bool, r any, args ...string) {
	t.Helper()
	ns := newNetns(t)
	tool := stacktool(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := ns.commandContext(ctx, tool, append([]string{"run"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil && !(partial && stdout.Len() > 0) {
		t.Fatalf("stacktool run %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), r); err != nil {
		t.Fatalf("report is not one JSON object: %v\n%s", err, stdout.String())
	}
}

// TestUDPFourProcessesFIFOReliable is issue 2's network-namespace check:
// in a namespace with loopback only, created here, `stacktool run
// fifo:reliable --network udp` runs 4 node processes in one group of 4, one
// sender casting 20,000 messages; every receiver must deliver all of them
// in order.
func TestUDPFourProcessesFIFOReliable(t *testing.T) {
	var r udpReport
	runUDP(t, 60*time.Second, false, &r, "fifo:reliable", "--network", "udp",
		"--nodes", "4", "--groups-per-node", "1", "--group-size", "4", "--senders", "1",
		"--rate", "10000", "--duration", "2s", "--drain", "10s", "--json")
	t.Logf("udp run: %d sent, %d deliveries, %.0f msgs/s per receiver, latency p50 %.3f ms p99 %.3f ms max %.3f ms, wall %.2fs; reliable %v",
		r.MessagesSent, r.Deliveries, r.ThroughputMsgsPerS, r.LatencyMs.P50, r.LatencyMs.P99, r.LatencyMs.Max, r.WallSeconds, r.Layers["reliable"])
	// 3 receivers x 20,000 messages, each exactly once, in FIFO order.
	r.checkAllDelivered(t, 20000, 60000)
	if got := r.Layers["fifo"]["delivered"]; got != 60000 {
		t.Errorf("fifo layer delivered %d, want 60000", got)
	}
}

// TestUDPOutsideNamespaceExplains: where lo cannot carry multicast (no
// MULTICAST flag or no 224.0.0.0/4 route), the udp network refuses with one
// message saying how to run it. The namespace is made without the route.
func TestUDPOutsideNamespaceExplains(t *testing.T) {
	ns := newNetns(t)
	if out, err := ns.command("ip", "route", "del", "224.0.0.0/4", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("ip route del: %v: %s", err, out)
	}
	tool := stacktool(t)
	out, err := ns.command(tool, "run", "fifo:reliable", "--network", "udp", "--nodes", "4",
		"--groups-per-node", "1", "--group-size", "4", "--duration", "1s").CombinedOutput()
	if err == nil {
		t.Fatalf("run without a multicast route succeeded:\n%s", out)
	}
	for _, want := range []string{"no route for 224.0.0.0/4 on lo", "unshare -n", "ip netns exec"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("message lacks %q:\n%s", want, out)
		}
	}
	if bytes.Contains(out, []byte("panic")) {
		t.Errorf("panicked:\n%s", out)
	}
}

// TestUDPLossRecovered: with --loss uniform:2% each worker drops received
// packets by the model before its stack sees them; fifo:reliable recovers
// every loss by NAK over the real network, in order.
func TestUDPLossRecovered(t *testing.T) {
	var r struct {
		udpReport
		Loss struct {
			Dropped     int64            `json:"dropped"`
			Recovered   int64            `json:"recovered"`
			RecoveredBy map[string]int64 `json:"recovered_by"`
		} `json:"loss"`
	}
	runUDP(t, 60*time.Second, false, &r, "fifo:reliable", "--network", "udp",
		"--nodes", "4", "--groups-per-node", "1", "--group-size", "4", "--senders", "1",
		"--rate", "5000", "--duration", "1s", "--drain", "10s", "--loss", "uniform:2%", "--json")
	t.Logf("udp run under 2%% loss: %d deliveries of %d, dropped %d, recovered %d %v, latency p99 %.1f ms",
		r.Deliveries, r.DeliveriesExpected, r.Loss.Dropped, r.Loss.Recovered, r.Loss.RecoveredBy, r.LatencyMs.P99)
	if !r.DeliveredAll || r.Deliveries != 15000 || r.FIFOViolations != 0 || r.Duplicates != 0 {
		t.Errorf("delivered %d of 15000 (all: %v), %d FIFO violations, %d duplicates", r.Deliveries, r.DeliveredAll, r.FIFOViolations, r.Duplicates)
	}
	// About 2% of 15,000 data packets; far fewer would mean no loss was applied.
	if r.Loss.Dropped < 100 || r.Loss.RecoveredBy["nak"] < 100 {
		t.Errorf("dropped %d, recovered by nak %d: the loss model did not act", r.Loss.Dropped, r.Loss.RecoveredBy["nak"])
	}
}
