package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/layercast/layercast/testbed/testkit"
)

var nsCount atomic.Int32

// netns is a network namespace with only loopback, multicast routed on it,
// created for one test and deleted after it.
type netns struct{ name string }

func newNetns(t *testing.T) *netns {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2) to create a network namespace")
	}
	ns := &netns{name: fmt.Sprintf("lcgms%d-%d", os.Getpid(), nsCount.Add(1))}
	if out, err := exec.Command("ip", "netns", "add", ns.name).CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns.name).Run() })
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "set", "lo", "multicast", "on"},
		{"route", "add", "224.0.0.0/4", "dev", "lo"},
	} {
		if out, err := ns.command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v in %s: %v: %s", args, ns.name, err, out)
		}
	}
	return ns
}

// command runs name inside the namespace (ip netns exec execs it, so the
// process's PID is the command's own).
func (ns *netns) command(name string, args ...string) *exec.Cmd {
	return ns.commandContext(context.Background(), name, args...)
}

// commandContext is command, killed when ctx is done.
func (ns *netns) commandContext(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns.name, name}, args...)...)
}

var (
	buildOnce sync.Once
	toolPath  string
	buildErr  error
)

// stacktool builds the command once per test binary (or takes the binary
// named by $STACKTOOL).
func stacktool(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if p := os.Getenv("STACKTOOL"); p != "" {
			toolPath = p // a binary built elsewhere
			return
		}
		dir, err := os.MkdirTemp("", "stacktool")
		if err != nil {
			buildErr = err
			return
		}
		toolPath = filepath.Join(dir, "stacktool")
		out, err := exec.Command("go", "build", "-o", toolPath, "../cmd/stacktool").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return toolPath
}

// proc is a child process whose output lines are kept.
type proc struct{ *testkit.Proc }

// start starts cmd as a proc named name (killed when t ends, its output
// logged if t failed).
func start(t *testing.T, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	return &proc{testkit.StartProc(t, name, cmd, 0)}
}

func (p *proc) lines() []string { return p.Tail(0) }

// waitFor waits until a line matches re, and returns its submatches.
func (p *proc) waitFor(t *testing.T, re *regexp.Regexp, d time.Duration, what string) []string {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		for _, l := range p.lines() {
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		}
		select {
		case <-p.Done:
			t.Fatalf("%s exited (%v) before %s", p.Name, p.Err, what)
		default:
		}
	}
	t.Fatalf("%s: no %s within %v", p.Name, what, d)
	return nil
}

// lastMatch returns the submatches of the last line matching re.
func (p *proc) lastMatch(re *regexp.Regexp) []string {
	ls := p.lines()
	for i := len(ls) - 1; i >= 0; i-- {
		if m := re.FindStringSubmatch(ls[i]); m != nil {
			return m
		}
	}
	return nil
}

// The log records of stacktool node (log/slog text) the tests read.
var deliveredLine = regexp.MustCompile(`level=INFO msg=delivered node=\S+ messages=(\d+) `)

// viewRe matches a node's record of a view of groups (a regexp
// alternative) whose members are members ("n1 n2") and the rest of the
// record matches rest.
func viewRe(groups, members, rest string) *regexp.Regexp {
	q := members
	if strings.Contains(members, " ") {
		q = `"` + members + `"`
	}
	return regexp.MustCompile(`level=INFO msg=view node=\S+ group=(` + groups + `) id=\d+ members=` + q + ` ` + rest)
}

// TestGMSOverUDP is issue 3's multi-process check: a gms process and four
// node processes over UDP in a network namespace; one node is killed with
// SIGKILL; the others install the view without it and keep delivering.
func TestGMSOverUDP(t *testing.T) {
	svc, nodes := killOneMember(t, "../specs/gms.stack", "news,sports", 4, 7400)
	svc.waitFor(t, regexp.MustCompile(`n4 failed`), time.Second, "failure report")
	// They keep delivering: each survivor's delivery count grows.
	before := map[int]int{}
	for i := 1; i <= 3; i++ {
		m := nodes[i].lastMatch(deliveredLine)
		if m == nil {
			t.Fatalf("node%d printed no delivery count", i)
		}
		before[i], _ = strconv.Atoi(m[1])
	}
	time.Sleep(time.Second)
	for i := 1; i <= 3; i++ {
		m := nodes[i].lastMatch(deliveredLine)
		after, _ := strconv.Atoi(m[1])
		// Two other survivors cast 50 msgs/s (over both groups): about
		// 100 deliveries in a second; ask for half of that.
		if after-before[i] < 50 {
			t.Errorf("node%d delivered %d messages in the second after the view change, want at least 50", i, after-before[i])
		}
	}
	stopCleanly(t, svc, nodes, 3)
}

// killOneMember starts a membership service and n members of groups (a
// comma-separated list) running spec in a new namespace, with ports from
// port; lets them cast for a moment, kills member n with SIGKILL and waits
// until every survivor has installed the views without it.
func killOneMember(t *testing.T, spec, groups string, n, port int) (*proc, map[int]*proc) {
	t.Helper()
	ns := newNetns(t)
	bin := stacktool(t)
	svcAddr := fmt.Sprintf("127.0.0.1:%d", port)
	svc := ns.startService(t, bin, svcAddr, "--view-interval", "100ms", "--fd-timeout", "1s")
	nodes := startMembers(t, ns, bin, spec, svcAddr, groups, n, port)
	// Let traffic flow, then kill the last node outright.
	time.Sleep(500 * time.Millisecond)
	if err := nodes[n].Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill node%d (pid %d): %v", n, nodes[n].Cmd.Process.Pid, err)
	}
	killed := time.Now()
	var rest []string
	for i := 1; i < n; i++ {
		rest = append(rest, fmt.Sprintf("n%d", i))
	}
	without := viewRe(strings.ReplaceAll(groups, ",", "|"), strings.Join(rest, " "), fmt.Sprintf(`.*left=n%d$`, n))
	for i := 1; i < n; i++ {
		nodes[i].waitFor(t, without, 10*time.Second, fmt.Sprintf("view without n%d", n))
	}
	t.Logf("survivors installed the view without n%d %v after SIGKILL (%s; service view_interval 100ms)", n, time.Since(killed).Round(time.Millisecond), spec)
	return svc, nodes
}

// TestNodeLogsBlockUnblock: `stacktool node` over a view-synchronous stack
// (specs/vsync.stack) logs vsync's Block before the view that removes a
// killed member and Unblock after it, so an operator sees why casts paused.
func TestNodeLogsBlockUnblock(t *testing.T) {
	svc, nodes := killOneMember(t, "../specs/vsync.stack", "news", 3, 7480)
	without := viewRe("news", "n1 n2", `.*left=n3$`)
	block := regexp.MustCompile(`level=INFO msg=block node=\S+ group=news$`)
	unblock := regexp.MustCompile(`level=INFO msg=unblock node=\S+ group=news$`)
	for i := 1; i <= 2; i++ {
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
	stopCleanly(t, svc, nodes, 2)
}

// stopCleanly stops nodes 1..live with SIGTERM and the service with
// SIGINT, and checks that each exits cleanly within 5 s.
func stopCleanly(t *testing.T, svc *proc, nodes map[int]*proc, live int) {
	t.Helper()
	for i := 1; i <= live; i++ {
		nodes[i].Cmd.Process.Signal(syscall.SIGTERM)
	}
	svc.Cmd.Process.Signal(syscall.SIGINT)
	stopping := map[string]*proc{"gms": svc}
	for i := 1; i <= live; i++ {
		stopping[fmt.Sprintf("node%d", i)] = nodes[i]
	}
	for name, p := range stopping {
		select {
		case <-p.Done:
			if p.Err != nil {
				t.Errorf("%s exited with %v after a stop signal, want a clean exit", name, p.Err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s did not stop within 5s of a stop signal", name)
		}
	}
}

// TestGMSBadInput: bad group names, a gms address that does not answer, and
// a malformed membership packet give clear errors and no panic.
func TestGMSBadInput(t *testing.T) {
	ns := newNetns(t)
	bin := stacktool(t)
	run := func(args ...string) (string, error) {
		cmd := ns.command(bin, args...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"empty group", []string{"node", "--spec", "../specs/gms.stack", "--gms", "127.0.0.1:7500", "--join", "news,,sports", "--id", "1"}, "group name is empty"},
		{"long group", []string{"node", "--spec", "../specs/gms.stack", "--gms", "127.0.0.1:7500", "--join", strings.Repeat("x", 300), "--id", "1"}, "at most 200"},
		{"no answer", []string{"node", "--spec", "../specs/gms.stack", "--gms", "127.0.0.1:7599", "--join", "news", "--id", "1", "--wait", "1s"}, "did not answer"},
		{"bad gms address", []string{"node", "--spec", "../specs/gms.stack", "--gms", "nowhere:x", "--join", "news", "--id", "1"}, "--gms"},
		{"no gms listen", []string{"gms"}, "--listen"},
		{"zero report", []string{"node", "--spec", "../specs/gms.stack", "--gms", "127.0.0.1:7500", "--join", "news", "--report", "0s"}, "--report"},
		{"cast rate", []string{"node", "--spec", "../specs/gms.stack", "--gms", "127.0.0.1:7500", "--join", "news", "--cast", "1e12"}, "--cast"},
		{"multicast port", []string{"node", "--spec", "../specs/gms.stack", "--gms", "127.0.0.1:7500", "--join", "news", "--mcast-port", "70000"}, "multicast port"},
		{"no gms in spec", []string{"node", "--spec", "fifo : reliable", "--gms", "127.0.0.1:7500", "--join", "news"}, "does not end in gms"},
		{"service id", []string{"node", "--spec", "fifo : reliable : gms(service=9)", "--gms", "127.0.0.1:7500", "--join", "news", "--id", "9"}, "reserved"},
	}
	for _, c := range cases {
		out, err := run(c.args...)
		if err == nil {
			t.Errorf("%s: stacktool %v succeeded, want an error", c.name, c.args)
		}
		if !strings.Contains(out, c.want) || strings.Contains(out, "panic") || strings.Count(strings.TrimSpace(out), "\n") > 2 {
			t.Errorf("%s: stacktool %v printed %q, want a short error mentioning %q", c.name, c.args, out, c.want)
		}
	}
	// A malformed membership packet to a running service: counted and
	// reported, the service keeps serving.
	const svcAddr = "127.0.0.1:7501"
	svc := ns.startService(t, bin, svcAddr)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash to send a raw UDP packet")
	}
	// A valid 10-byte frame (version 1, kind membership, group 0, source
	// n5) followed by bytes that are not a membership message.
	garbage := `printf '\x10\x10\x00\x00\x00\x00\x00\x00\x00\x05\xc1\xff\x93garbage' > /dev/udp/127.0.0.1/7501`
	if out, err := ns.command("bash", "-c", garbage).CombinedOutput(); err != nil {
		t.Fatalf("sending garbage: %v: %s", err, out)
	}
	svc.waitFor(t, regexp.MustCompile(`malformed`), 5*time.Second, "malformed packet report")
	node := start(t, "node1", ns.command(bin, "node", "--spec", "../specs/gms.stack", "--gms", svcAddr, "--join", "news", "--id", "1", "--listen", "127.0.0.1:7502"))
	node.waitFor(t, viewRe("news", "n1", ""), 10*time.Second, "view after the garbage")
}

// startMembers starts n `stacktool node` processes in ns, ids 1 to n, each
// joined to the comma-separated groups through the service at svcAddr,
// listening on 127.0.0.1:port+id and casting 50 msgs/s, and waits until
// every one has installed a view of every group with all n members.
func startMembers(t *testing.T, ns *netns, bin, spec, svcAddr, groups string, n, port int) map[int]*proc {
	t.Helper()
	nodes := map[int]*proc{}
	var ids []string
	for i := 1; i <= n; i++ {
		nodes[i] = start(t, fmt.Sprintf("node%d", i), ns.command(bin, "node",
			"--spec", spec, "--gms", svcAddr, "--join", groups,
			"--id", strconv.Itoa(i), "--listen", fmt.Sprintf("127.0.0.1:%d", port+i), "--cast", "50", "--report", "200ms"))
		ids = append(ids, fmt.Sprintf("n%d", i))
	}
	full := viewRe(strings.ReplaceAll(groups, ",", "|"), strings.Join(ids, " "), "")
	for i := 1; i <= n; i++ {
		nodes[i].waitFor(t, full, 15*time.Second, fmt.Sprintf("view with all %d members", n))
	}
	return nodes
}

// startService starts `stacktool gms --listen addr args...` in the
// namespace and waits until it says it is listening.
func (ns *netns) startService(t *testing.T, bin, addr string, args ...string) *proc {
	t.Helper()
	svc := start(t, "gms", ns.command(bin, append([]string{"gms", "--listen", addr}, args...)...))
	svc.waitFor(t, regexp.MustCompile(`msg=listening`), 10*time.Second, "listening record")
	return svc
}
