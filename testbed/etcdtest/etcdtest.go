// Package etcdtest starts a real etcd server on loopback for one test: the
// etcd binary of Debian's etcd-server package (scripts/setup-ci.sh installs
// it), with its data in the test's temporary directory. Tests that need it
// skip when the binary is missing. It is test support for this module;
// import it from _test.go files only.
package etcdtest

import (
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/testbed/testkit"
)

// ready matches etcd's line saying it serves clients (3.4's zap and
// capnslog loggers word it differently).
var ready = regexp.MustCompile(`serving client traffic|ready to serve client requests`)

// Server is a running etcd.
type Server struct {
	// Endpoint is its client URL (http://127.0.0.1:PORT).
	Endpoint string
	proc     *testkit.Proc
}

// Binary returns the etcd binary's path, or skips t.
func Binary(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("needs the etcd binary (Debian's etcd-server; scripts/setup-ci.sh installs it)")
	}
	return p
}

// FreePorts returns n TCP ports free on 127.0.0.1 now.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// Start runs etcd serving clients on 127.0.0.1:client (peers on
// 127.0.0.1:peer) with its data in a directory of t's, through wrap (nil:
// exec.Command; a test in a network namespace passes its own), and waits
// until it serves. The process is killed when t ends.
func Start(t testing.TB, wrap func(name string, args ...string) *exec.Cmd, client, peer int) *Server {
	t.Helper()
	bin := Binary(t)
	if wrap == nil {
		wrap = exec.Command
	}
	cu, pu := fmt.Sprintf("http://127.0.0.1:%d", client), fmt.Sprintf("http://127.0.0.1:%d", peer)
	s := &Server{Endpoint: cu}
	s.proc = testkit.StartProc(t, "etcd", wrap(bin, "--name", "lctest", "--data-dir", t.TempDir(),
		"--listen-client-urls", cu, "--advertise-client-urls", cu,
		"--listen-peer-urls", pu, "--initial-advertise-peer-urls", pu,
		"--initial-cluster", "lctest="+pu, "--logger", "zap", "--log-level", "info"), 20)
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		for _, l := range s.proc.Tail(0) {
			if ready.MatchString(l) {
				return s
			}
		}
		select {
		case <-s.proc.Done:
			t.Fatalf("etcd exited before serving:\n%s", strings.Join(s.proc.Tail(20), "\n"))
		default:
		}
	}
	t.Fatalf("etcd did not serve within 20s:\n%s", strings.Join(s.proc.Tail(20), "\n"))
	return nil
}
