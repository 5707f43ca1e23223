// Package hugepage asks the operating system to back the memory a large
// simulation is about to allocate with huge pages (2 MB on x86-64 Linux).
//
// A simulated network of thousands of nodes keeps some hundred megabytes
// of small objects, and each step touches a few dozen of them on as many
// pages: with 4 KB pages nearly every touch misses the CPU's address
// translation cache as well as its data caches. The Go runtime asks for
// huge pages only where the system gives them to every process
// (transparent huge pages "always"); where the system gives them on
// request ("madvise", a common default), Prepare requests them for the
// heap a run is about to grow into. It changes nothing a program can
// observe but its speed and, at most by the unused part of the last huge
// page of each region, its resident memory.
package hugepage

import "sync"

// Prepare grows the Go heap by about n bytes (at most MaxPrepare) of
// address space that the operating system is asked to back with huge pages
// once touched, and hands it back to the heap, where the allocations that
// follow find it. It costs one garbage collection (call it before building
// a large simulation, when the heap is small). It does nothing where huge
// pages cannot be requested.
//
// The region stays the heap's, advised, once its objects are garbage, so a
// process prepares once for the most it was asked: a later call for no
// more does nothing. Each call did it again, and a second run in one
// process (a benchmark's, a sweep's) had the runtime clear the 384 MB it
// reused for 2,048 nodes, about a quarter of a second, and touch it all
// before it was advised.
func Prepare(n int) {
	n = min(n, MaxPrepare)
	mu.Lock()
	defer mu.Unlock()
	if n > prepared {
		prepare(n)
		prepared = n
	}
}

var (
	mu       sync.Mutex
	prepared int // the most Prepare was asked for
)

// MaxPrepare bounds what Prepare asks for: address space only, but one
// allocation the system could refuse on a small machine.
const MaxPrepare = 1 << 30
