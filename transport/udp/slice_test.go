package udp

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestShortSlices: every thread of the process runs with the slice asked
// for, and 0 gives the kernel's default back. Kernels before 6.12 keep no
// slice per thread (sched_getattr reports 0): skipped there.
func TestShortSlices(t *testing.T) {
	n, err := ShortSlices(200 * time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	defer ShortSlices(0)
	if n == 0 {
		t.Fatal("no thread took the slice")
	}
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skip(err)
	}
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		a, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			continue // exited meanwhile
		}
		if a.Runtime == 0 {
			t.Skip("this kernel keeps no slice per thread (before Linux 6.12)")
		}
		if a.Runtime != uint64(200*time.Microsecond) {
			t.Errorf("thread %d: slice %v, want 200us", tid, time.Duration(a.Runtime))
		}
	}
	// A thread started afterwards (a goroutine locked to its thread makes
	// the runtime clone another for the rest) inherits it.
	done := make(chan uint64)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		go func() {}()
		a, err := unix.SchedGetAttr(0, 0)
		if err != nil {
			done <- 0
			return
		}
		done <- a.Runtime
	}()
	if got := <-done; got != uint64(200*time.Microsecond) {
		t.Errorf("a goroutine's thread: slice %v, want 200us", time.Duration(got))
	}
	if _, err := ShortSlices(0); err != nil {
		t.Fatal(err)
	}
	a, err := unix.SchedGetAttr(0, 0)
	if err == nil && a.Runtime == uint64(200*time.Microsecond) {
		t.Errorf("after ShortSlices(0): slice still %v, want the kernel's default", time.Duration(a.Runtime))
	}
}
