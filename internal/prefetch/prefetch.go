// Package prefetch tells the CPU which memory a program is about to read,
// so that it loads it while the program does other work.
//
// The simulator steps thousands of stacks in an order set by virtual time,
// so the memory of the next stack it steps is cold: each of its first
// reads (the node, the stack, its queues, its layers) would wait for main
// memory in turn. Knowing the next events in advance, it asks for that
// memory one or two events ahead instead. A hint changes nothing a program
// can observe but its speed: the same run, the same results.
package prefetch

import "unsafe"

// LineSize is the cache line size the hints assume.
const LineSize = 64

// Lines hints that n cache lines from p on will be read soon. A nil p or
// an n below one does nothing; p need not point to valid memory (a
// prefetch never faults), but it should.
func Lines(p unsafe.Pointer, n int) {
	if p == nil || n < 1 {
		return
	}
	lines(p, n)
}
