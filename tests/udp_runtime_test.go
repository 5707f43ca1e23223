package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/experiment"
	"github.com/layercast/layercast/experiment/udprun"
)

// TestUDPNodesAndWorkerShareGroup is issue 9's one-runtime check: in a
// network namespace, `stacktool gms` and three `stacktool node` processes
// deliver each other's casts, and a fourth node run through the bench
// worker path (`stacktool worker`, experiment/udprun) joins the same group
// through the same service and hears them too, and they hear it. Before
// the CLI ran on stack.Node and transport/udp, its nodes multicast on
// other addresses and ports than the workers, and none of this was heard.
func TestUDPNodesAndWorkerShareGroup(t *testing.T) {
	ns := newNetns(t)
	bin := stacktool(t)
	// specs/gms.stack with a failure timeout long enough that a loaded
	// machine (2 cores, parallel tests) never removes a live node: this
	// test is about who hears whom, not about failure detection.
	const spec = "fifo : reliable : gms(heartbeat=100ms, fd_timeout=3s)"
	const svcAddr = "127.0.0.1:7600"
	svc := ns.startService(t, bin, svcAddr, "--view-interval", "100ms")
	// The worker joins a running group (what it casts in a view of its
	// own, before the others joined, would be owed to nobody).
	nodes := startMembers(t, ns, bin, spec, svcAddr, "news", 3, 7600)

	// The worker: the line protocol of experiment/udprun, spoken here as
	// the parent would, with a service instead of a static book.
	const sent = 100 // the worker's casts: 50 msgs/s for 2 s
	sc, _ := json.Marshal(experiment.Scenario{Rate: 50, Duration: 2 * time.Second, MsgSize: 64, Seed: 4})
	w := ns.command(bin, "worker", "--id", "4", "--spec", spec, "--scenario", string(sc),
		"--mcast-port", strconv.Itoa(47000), "--gms", svcAddr, "--join", "news", "--deadline", "40s")
	stdin, err := w.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := w.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	w.Stderr = &stderr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<16), 1<<26)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_ = w.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = w.Process.Kill() // our own child, by PID
			<-exited
		}
		if t.Failed() {
			t.Logf("worker stderr:\n%s", stderr.String())
		}
	})
	expect := func(verb string, d time.Duration) string {
		t.Helper()
		timeout := time.After(d)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("worker exited before %q", verb)
				}
				if v, rest, _ := strings.Cut(l, " "); v == verb {
					return rest
				}
			case <-timeout:
				t.Fatalf("worker: no %q within %v", verb, d)
			}
		}
	}
	tell := func(line string) {
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatalf("telling the worker %q: %v", line, err)
		}
	}
	expect("ready", 10*time.Second)
	epoch := time.Now()
	tell(fmt.Sprintf("start %d -", epoch.UnixNano())) // no book: the worker learns its peers
	expect("joined", 15*time.Second)
	tell(fmt.Sprintf("go %d", time.Since(epoch)+50*time.Millisecond))

	// Every stacktool node delivers the worker's casts, all of them, and
	// the other nodes' casts.
	allHeard := func() bool {
		for i := 1; i <= 3; i++ {
			h := heardFrom(nodes[i])
			if h["n4"] != sent {
				return false
			}
			for j := 1; j <= 3; j++ {
				if j != i && h[fmt.Sprintf("n%d", j)] < 50 {
					return false
				}
			}
		}
		return true
	}
	for end := time.Now().Add(15 * time.Second); !allHeard() && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
	}

	// The worker heard every node, in order, once each.
	tell("stop")
	var rep udprun.WorkerReport
	if err := json.Unmarshal([]byte(expect("report", 15*time.Second)), &rep); err != nil {
		t.Fatalf("worker report: %v", err)
	}
	if !allHeard() {
		for i := 1; i <= 3; i++ {
			t.Errorf("node%d delivered %v; want all %d of n4's and at least 50 of each other node's", i, heardFrom(nodes[i]), sent)
		}
		t.Logf("worker: sent %+v, net %+v, transport %+v, layers %+v", rep.Sent, rep.Net, rep.Transport, rep.Layers)
	}
	got := map[event.NodeID]int{}
	for _, r := range rep.Deliveries {
		got[r.Sender]++
	}
	for i := event.NodeID(1); i <= 3; i++ {
		if got[i] < 50 {
			t.Errorf("the worker delivered %d messages from n%d, want at least 50", got[i], i)
		}
	}
	if rep.Duplicates != 0 || rep.FIFOViolations != 0 || rep.Foreign != 0 {
		t.Errorf("worker: %d duplicates, %d FIFO violations, %d foreign payloads; want none", rep.Duplicates, rep.FIFOViolations, rep.Foreign)
	}
	if n := rep.Sent; len(n) != 1 || n[0].Count != sent {
		t.Errorf("worker sent %+v, want %d to news", n, sent)
	}
	t.Logf("worker n4 delivered %v (by sender); transport learned %d addresses", got, rep.Transport.Learned)

	stopCleanly(t, svc, nodes, 3)
}

// TestUDPNodeLogLevels: at the default level a node logs views and
// delivery counts and none of its layers' protocol lines; with
// --log-level debug the layers' lines (reliable's digests and NAKs) are
// there too, as records naming their layer.
func TestUDPNodeLogLevels(t *testing.T) {
	ns := newNetns(t)
	bin := stacktool(t)
	const svcAddr = "127.0.0.1:7700"
	const spec = "fifo : reliable : gms(heartbeat=100ms, fd_timeout=3s)"
	ns.startService(t, bin, svcAddr)
	level := map[int]string{1: "info", 2: "debug"}
	nodes := map[int]*proc{}
	for i := 1; i <= 2; i++ {
		nodes[i] = start(t, fmt.Sprintf("node%d", i), ns.command(bin, "node", "--spec", spec, "--gms", svcAddr,
			"--join", "news", "--id", strconv.Itoa(i), "--cast", "50", "--report", "200ms", "--log-level", level[i]))
	}
	for i := 1; i <= 2; i++ {
		nodes[i].waitFor(t, regexp.MustCompile(`msg=delivered .*from=n\d:[1-9]`), 10*time.Second, "a delivery count")
	}
	layerLine := regexp.MustCompile(`level=DEBUG .* layer=reliable `)
	nodes[2].waitFor(t, layerLine, 5*time.Second, "reliable's debug records")
	for i := 1; i <= 2; i++ {
		nodes[i].Cmd.Process.Signal(syscall.SIGTERM)
		<-nodes[i].Done
	}
	for _, l := range nodes[1].lines() {
		if strings.Contains(l, "layer=") || !strings.Contains(l, "level=INFO") {
			t.Errorf("node1 at --log-level info printed %q; want only its own info records", l)
			break
		}
	}
	out, err := ns.command(bin, "node", "--spec", spec, "--gms", svcAddr, "--join", "news", "--log-level", "loud").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--log-level") || strings.Contains(string(out), "panic") {
		t.Errorf("--log-level loud: err %v, output %q; want one error naming the flag", err, out)
	}
}
