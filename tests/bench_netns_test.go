package tests

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBenchInNetns: `stacktool bench --netns` makes its own namespace,
// runs 1 sender and 1 receiver process over loopback multicast, prints
// run's JSON (network udp, everything delivered) plus the CPU time of each
// process and per message, and removes the namespace.
func TestBenchInNetns(t *testing.T) {
	needNetns(t)
	before, _ := exec.Command("ip", "netns", "list").Output()
	rep := benchNetns(t, "fifo : reliable : pack", "--receivers", "1", "--messages", "3000", "--size", "200")
	if rep.Network != "udp" || rep.Sent != 3000 || len(rep.Broken) > 0 || rep.Throughpt <= 0 {
		t.Errorf("bench = network %q, sent %d, broken %v, throughput %v; want udp, 3000, none, > 0", rep.Network, rep.Sent, rep.Broken, rep.Throughpt)
	}
	if len(rep.CPU) != 2 || rep.CPU["n1"] <= 0 && rep.CPU["n2"] <= 0 {
		t.Errorf("cpu_seconds = %v, want the two processes' CPU time", rep.CPU)
	}
	if rep.PerMsg["sender"] <= 0 || rep.PerMsg["receiver_mean"] <= 0 {
		t.Errorf("cpu_us_per_msg = %v, want sender and receiver_mean above 0", rep.PerMsg)
	}
	after, _ := exec.Command("ip", "netns", "list").Output()
	for _, l := range strings.Split(string(after), "\n") {
		if strings.HasPrefix(l, "lcbench") && !strings.Contains(string(before), l) {
			t.Errorf("namespace %q left behind", l)
		}
	}
}

// TestBenchBadInput: bad flags are bad input (exit 2), one line.
func TestBenchBadInput(t *testing.T) {
	bin := stacktool(t)
	for _, args := range [][]string{
		{"bench", "fifo : reliable", "--receivers", "0"},
		{"bench", "fifo : reliable", "--size", "3"},
		{"bench"},
		{"bench", "fifo : nosuchlayer"},
	} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || strings.Count(strings.TrimSpace(string(out)), "\n") > 6 {
			t.Errorf("stacktool %q = %v, %q; want exit 2 with a short error", args, err, out)
		}
	}
}

// TestBenchFanoutWithoutMulticast: in a namespace whose loopback has no
// multicast route, bench --fanout (multicast carried by unicast to each
// member) delivers everything for fifo : reliable with 3 receivers.
func TestBenchFanoutWithoutMulticast(t *testing.T) {
	rep := benchNetns(t, "fifo : reliable", "--receivers", "3", "--messages", "3000", "--size", "200", "--fanout")
	rep.checkDelivered(t, 9000)
}

// benchReport is what the tests read of `stacktool bench --json`.
type benchReport struct {
	Network   string                        `json:"network"`
	Sent      int64                         `json:"messages_sent"`
	Expected  int64                         `json:"deliveries_expected"`
	Delivered int64                         `json:"deliveries_of_expected"`
	Broken    []string                      `json:"broken_promises"`
	CPU       map[string]float64            `json:"cpu_seconds"`
	PerMsg    map[string]float64            `json:"cpu_us_per_msg"`
	Throughpt float64                       `json:"throughput_msgs_per_s"`
	Layers    map[string]map[string]float64 `json:"layers"`
}

// benchNetns runs `stacktool bench ARGS --netns --json` (skipping t where
// it cannot make a namespace) and decodes its report; a failed run or a
// report that does not decode is fatal.
func benchNetns(t *testing.T, args ...string) benchReport {
	t.Helper()
	needNetns(t)
	out, err := exec.Command(stacktool(t), append(append([]string{"bench"}, args...), "--netns", "--json")...).Output()
	if err != nil {
		t.Fatalf("bench %q: %v\n%s", args, err, out)
	}
	var rep benchReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("bench --json output does not decode: %v\n%s", err, out)
	}
	return rep
}

// checkDelivered fails t unless every one of the deliveries expected was
// made (as many as want) and no promise was broken.
func (rep benchReport) checkDelivered(t *testing.T, want int64) {
	t.Helper()
	if rep.Expected != want || rep.Delivered != want || len(rep.Broken) > 0 {
		t.Errorf("delivered %d of %d (broken %v), want %d of %d", rep.Delivered, rep.Expected, rep.Broken, want, want)
	}
}

// needNetns skips a test that makes network namespaces where it cannot.
func needNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2)")
	}
}

// TestBenchTenPercentLoss: at 10% loss at every receiver (data and control
// alike), `fifo : reliable : pack` over UDP delivers everything to 3
// receivers, and the sender never runs further ahead than a receiver's
// window (100-byte messages: max_buffer holds ten times the window's
// count). Before, what lay beyond the window was dropped and NAKed again,
// round after round.
func TestBenchTenPercentLoss(t *testing.T) {
	rep := benchNetns(t, "fifo : reliable : pack", "--receivers", "3", "--messages", "20000", "--size", "100", "--loss", "10%")
	rep.checkDelivered(t, 60000)
	if n := rep.Layers["reliable"]["out_of_window"]; n != 0 {
		t.Errorf("reliable out_of_window = %v, want 0", n)
	}
}

// TestBenchSenderLossOff: --sender-loss=false applies --loss at the
// receivers only (as bench/peers inject it into JGroups and NORM, whose
// senders lose none of the NAKs and acknowledgements sent to them): the
// flag is taken through --netns's re-run and the workers, and everything
// is delivered at 10% loss.
func TestBenchSenderLossOff(t *testing.T) {
	rep := benchNetns(t, "fifo : reliable", "--receivers", "3", "--messages", "20000", "--size", "200", "--loss", "10%", "--sender-loss=false")
	rep.checkDelivered(t, 60000)
}
