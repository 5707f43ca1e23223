package tests

import (
	"regexp"
	"syscall"
	"testing"
	"time"
)

// TestNodeLogsBlockUnblock: `stacktool node` over a view-synchronous stack
// (specs/vsync.stack) logs vsync's Block before the view that removes a
// killed member and Unblock after it, so an operator sees why casts paused.
func TestNodeLogsBlockUnblock(t *testing.T) {
	ns := newNetns(t)
	bin := stacktool(t)
	const svcAddr = "127.0.0.1:7480"
	svc := ns.startService(t, bin, svcAddr, "--view-interval", "100ms", "--fd-timeout", "1s")
	nodes := startMembers(t, ns, bin, "../specs/vsync.stack", svcAddr, "news", 3, 7480)
	time.Sleep(300 * time.Millisecond)
	if err := nodes[3].Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill node3 (pid %d): %v", nodes[3].Cmd.Process.Pid, err)
	}
	without := viewRe("news", "n1 n2", `.*left=n3$`)
	block := regexp.MustCompile(`level=INFO msg=block node=\S+ group=news$`)
	unblock := regexp.MustCompile(`level=INFO msg=unblock node=\S+ group=news$`)
	for i := 1; i <= 2; i++ {
		nodes[i].waitFor(t, without, 10*time.Second, "view without n3")
		nodes[i].waitFor(t, unblock, 5*time.Second, "unblock after the view")
		// The order in the log: the last block before the view, the
		// first unblock after it.
		b, v, u := -1, -1, -1
		for k, l := range nodes[i].lines() {
			switch {
			case v < 0 && block.MatchString(l):
				b = k
			case v < 0 && without.MatchString(l):
				v = k
			case v >= 0 && u < 0 && unblock.MatchString(l):
				u = k
			}
		}
		if b < 0 || v < 0 || u < 0 || !(b < v && v < u) {
			t.Errorf("node%d: want block < view without n3 < unblock in its log, got lines %d, %d, %d", i, b, v, u)
		}
	}
	for i := 1; i <= 2; i++ {
		nodes[i].Cmd.Process.Signal(syscall.SIGTERM)
	}
	svc.Cmd.Process.Signal(syscall.SIGINT)
}
