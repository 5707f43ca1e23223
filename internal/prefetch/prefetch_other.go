//go:build !amd64

package prefetch

import "unsafe"

// lines does nothing where no prefetch instruction is wired up.
func lines(p unsafe.Pointer, n int) {}
