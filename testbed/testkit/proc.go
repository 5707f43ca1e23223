package testkit

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// Proc is a child process a test started, its output lines (stdout and
// stderr together) kept as they come, for the tests that drive stacktool
// or etcd as processes.
type Proc struct {
	// Name names the process in the test's log.
	Name string
	// Cmd is the started command; its Process is the test's own child.
	Cmd *exec.Cmd
	// Done is closed once the process has exited; Err is then what Wait
	// returned.
	Done chan struct{}
	Err  error

	mu  sync.Mutex
	out []string
}

// StartProc starts cmd and keeps its output. When tb ends the process is
// killed by its PID if it still runs, and if tb failed its last logLines
// lines of output (0: all) are logged.
func StartProc(tb testing.TB, name string, cmd *exec.Cmd, logLines int) *Proc {
	tb.Helper()
	p := &Proc{Name: name, Cmd: cmd, Done: make(chan struct{})}
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p.mu.Lock()
			p.out = append(p.out, sc.Text())
			p.mu.Unlock()
		}
	}()
	go func() {
		p.Err = cmd.Wait()
		w.Close()
		close(p.Done)
	}()
	tb.Cleanup(func() {
		select {
		case <-p.Done:
		default:
			p.Cmd.Process.Kill() // our own child, by PID
			<-p.Done
		}
		if tb.Failed() {
			tb.Logf("%s output:\n%s", p.Name, strings.Join(p.Tail(logLines), "\n"))
		}
	})
	return p
}

// Tail returns the last n lines of the output so far (0: all of it).
func (p *Proc) Tail(n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n > 0 && len(p.out) > n {
		return append([]string(nil), p.out[len(p.out)-n:]...)
	}
	return append([]string(nil), p.out...)
}
