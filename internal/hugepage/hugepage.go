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

// Prepare grows the Go heap by about n bytes (at most MaxPrepare) of
// address space that the operating system is asked to back with huge pages
// once touched, and hands it back to the heap, where the allocations that
// follow find it. It costs one garbage collection (call it before building
// a large simulation, when the heap is small). It does nothing where huge
// pages cannot be requested.
func Prepare(n int) {
	if n > 0 {
		prepare(min(n, MaxPrepare))
	}
}

// MaxPrepare bounds what Prepare asks for: address space only, but one
// allocation the system could refuse on a small machine.
const MaxPrepare = 1 << 30
