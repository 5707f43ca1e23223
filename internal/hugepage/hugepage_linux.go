package hugepage

import (
	"runtime"
	"syscall"
	"unsafe"
)

// hugeSize is the huge page size on the platforms Linux runs Go on
// (x86-64, arm64 with 4 KB base pages).
const hugeSize = 2 << 20

// madvHugepage is MADV_HUGEPAGE (the syscall package does not name it).
const madvHugepage = 14

func prepare(n int) {
	// A large allocation takes fresh pages that nothing has touched yet:
	// advised before its first touch, a region gets huge pages as it is
	// faulted in, by whichever allocation touches it first.
	b := make([]byte, n)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	beg := (p + hugeSize - 1) &^ (hugeSize - 1)
	end := (p + uintptr(n)) &^ (hugeSize - 1)
	if beg < end {
		// EINVAL where the kernel has no transparent huge pages: then
		// nothing changes.
		syscall.Syscall(syscall.SYS_MADVISE, beg, end-beg, madvHugepage)
	}
	runtime.KeepAlive(b)
	b = nil
	runtime.GC() // the region goes back to the heap, still advised
}
