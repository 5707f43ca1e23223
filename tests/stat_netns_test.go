package tests

import (
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestStatRunningNode: `stacktool stat` against a running receiver (a
// `stacktool node --stat` in a namespace, in a group with a casting node)
// prints its layers' counters and its view; the same in the Prometheus
// format; once the node is gone, one clear error line and exit 1.
func TestStatRunningNode(t *testing.T) {
	ns := newNetns(t)
	bin := stacktool(t)
	const spec = "fifo : reliable : pack : gms(heartbeat=100ms, fd_timeout=3s)"
	const svc, statAddr = "127.0.0.1:7650", "127.0.0.1:7659"
	ns.startService(t, bin, svc, "--view-interval", "100ms")
	rx := start(t, "receiver", ns.command(bin, "node", "--spec", spec, "--gms", svc, "--join", "news",
		"--id", "1", "--listen", "127.0.0.1:7651", "--report", "200ms", "--stat", statAddr))
	tx := start(t, "sender", ns.command(bin, "node", "--spec", spec, "--gms", svc, "--join", "news",
		"--id", "2", "--listen", "127.0.0.1:7652", "--cast", "200", "--report", "200ms"))
	rx.waitFor(t, viewRe("news", "n1 n2", ""), 15*time.Second, "view with both nodes")
	rx.waitFor(t, regexp.MustCompile(`msg=delivered node=n1 messages=[1-9]`), 10*time.Second, "deliveries")

	out, err := ns.command(bin, "stat", statAddr).CombinedOutput()
	if err != nil {
		t.Fatalf("stat: %v\n%s", err, out)
	}
	for _, want := range []string{"node n1", "view news #", "n1 n2", "layer reliable", "layer pack", "unpacked_msgs", "drops: kernel 0"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("stat output lacks %q:\n%s", want, out)
		}
	}
	out, err = ns.command(bin, "stat", statAddr, "--prom").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `layercast_layer_counter{node="n1",layer="fifo"`) {
		t.Errorf("stat --prom = %v:\n%s", err, out)
	}

	_ = rx.Cmd.Process.Kill() // our own child, by PID
	<-rx.Done
	_ = tx
	out, err = ns.command(bin, "stat", statAddr).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 ||
		!strings.Contains(string(out), "no node serves statistics at "+statAddr) {
		t.Errorf("stat of a dead node = %v:\n%s\nwant exit 1 and one line", err, out)
	}
}
