package tests

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// bridged is n network namespaces, each with an eth0 on one bridge that
// lives in a hub namespace of its own: nothing touches the host's
// namespace, and everything is removed when the test ends, failed or not.
type bridged struct {
	hub string
	ns  []*netns // ns[i] has address 10.77.0.(i+1) on eth0
}

func newBridged(t *testing.T, n int) *bridged {
	t.Helper()
	needNetns(t)
	id := fmt.Sprintf("%d-%d", os.Getpid(), nsCount.Add(1))
	b := &bridged{hub: "lcbrhub" + id}
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	add := func(name string) {
		t.Helper()
		if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
			t.Skipf("cannot create a network namespace: %v: %s", err, out)
		}
		t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	}
	add(b.hub)
	ip("-n", b.hub, "link", "add", "br0", "type", "bridge", "mcast_snooping", "0")
	ip("-n", b.hub, "link", "set", "br0", "up")
	for i := range n {
		ns := &netns{name: fmt.Sprintf("lcbr%d-%s", i+1, id)}
		add(ns.name)
		hubEnd := fmt.Sprintf("vh%d", i+1)
		ip("-n", b.hub, "link", "add", hubEnd, "type", "veth", "peer", "name", "eth0", "netns", ns.name)
		ip("-n", b.hub, "link", "set", hubEnd, "master", "br0", "up")
		ip("-n", ns.name, "link", "set", "lo", "up")
		ip("-n", ns.name, "addr", "add", fmt.Sprintf("10.77.0.%d/24", i+1), "dev", "eth0")
		ip("-n", ns.name, "link", "set", "eth0", "multicast", "on", "up")
		ip("-n", ns.name, "route", "add", "224.0.0.0/4", "dev", "eth0")
		b.ns = append(b.ns, ns)
	}
	return b
}

// TestBridgedNamespaces: four namespaces on a bridge, one process each:
// the membership service and three nodes in overlapping groups (n1: a,b;
// n2: b,c; n3: a,c), multicast on eth0. n3 is killed by its PID; the
// survivors install views without it and go on delivering each other's
// casts in their shared group b.
func TestBridgedNamespaces(t *testing.T) {
	b := newBridged(t, 4)
	bin := stacktool(t)
	const spec = "fifo : reliable : pack : gms(heartbeat=100ms, fd_timeout=1s)"
	b.ns[0].startService(t, bin, "10.77.0.1:7000", "--view-interval", "100ms", "--fd-timeout", "1s")
	joins := []string{"a,b", "b,c", "a,c"}
	nodes := make([]*proc, 3)
	for i := range nodes {
		nodes[i] = start(t, fmt.Sprintf("node%d", i+1), b.ns[i+1].command(bin, "node",
			"--spec", spec, "--gms", "10.77.0.1:7000", "--join", joins[i], "--id", strconv.Itoa(i+1),
			"--listen", fmt.Sprintf("10.77.0.%d:7001", i+2), "--mcast-if", "eth0", "--cast", "50", "--report", "200ms"))
	}
	nodes[0].waitFor(t, viewRe("b", "n1 n2", ""), 20*time.Second, "view of b with n1 and n2")
	nodes[0].waitFor(t, viewRe("a", "n1 n3", ""), 20*time.Second, "view of a with n1 and n3")
	nodes[1].waitFor(t, viewRe("c", "n2 n3", ""), 20*time.Second, "view of c with n2 and n3")
	from := regexp.MustCompile(`msg=delivered node=n1 messages=\d+ from="?[^"]*n2:(\d+)`)
	nodes[0].waitFor(t, from, 10*time.Second, "deliveries from n2 at n1")

	_ = nodes[2].Cmd.Process.Kill() // by PID
	<-nodes[2].Done
	nodes[0].waitFor(t, viewRe("a", "n1", ""), 15*time.Second, "view of a without n3")
	nodes[1].waitFor(t, viewRe("c", "n2", ""), 15*time.Second, "view of c without n3")
	before, _ := strconv.Atoi(nodes[0].lastMatch(from)[1])
	time.Sleep(time.Second)
	after, _ := strconv.Atoi(nodes[0].lastMatch(from)[1])
	if after <= before {
		t.Errorf("n1 delivered %d messages from n2 before and %d after a second: the survivors stopped", before, after)
	}
	// Nothing the survivors promised is lost: the only messages a survivor
	// may give up on are the killed node's (a node logs each loss as a
	// WARN "lost" line, naming the sender).
	lostFromKilled := regexp.MustCompile(`level=WARN msg=lost .*from=n3\b`)
	for i := 0; i < 2; i++ {
		for _, l := range nodes[i].lines() {
			if regexp.MustCompile(`level=(ERROR|WARN)`).MatchString(l) && !lostFromKilled.MatchString(l) {
				t.Errorf("node%d: %s", i+1, l)
			}
		}
	}
}
