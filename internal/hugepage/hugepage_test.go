package hugepage

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// anonHuge is this process's anonymous memory backed by huge pages, in
// kB, or -1 if the system does not say.
func anonHuge() int {
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "AnonHugePages:" {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// Where the system gives huge pages on request, the small objects
// allocated after Prepare land on huge pages; elsewhere Prepare is
// harmless.
func TestSmallObjectsAfterPrepareOnHugePages(t *testing.T) {
	Prepare(256 << 20)
	var keep [][]byte
	for range 64 << 20 / 512 {
		keep = append(keep, bytes.Repeat([]byte{1}, 512))
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if runtime.GOOS != "linux" || err != nil || !bytes.Contains(mode, []byte("[madvise]")) {
		t.Skipf("huge pages are not given on request here (%q)", bytes.TrimSpace(mode))
	}
	if got := anonHuge(); got < 8<<10 {
		t.Errorf("64 MB of 512-byte objects allocated after Prepare: %d kB of them on huge pages, want at least 8 MB", got)
	}
	runtime.KeepAlive(keep)
}

// A process prepares once for the most it was asked: asked again for no
// more, Prepare allocates nothing (a second run in one process reused the
// region, cleared, and touched it before advising it).
func TestPrepareOnce(t *testing.T) {
	Prepare(32 << 20)
	if n := testing.AllocsPerRun(3, func() { Prepare(32 << 20); Prepare(16 << 20) }); n != 0 {
		t.Errorf("Prepare for no more than before: %v allocations, want 0", n)
	}
}
