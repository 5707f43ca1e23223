package prefetch

import "unsafe"

// lines issues PREFETCHT0 for n >= 1 lines from p (prefetch_amd64.s).
//
//go:noescape
func lines(p unsafe.Pointer, n int)
