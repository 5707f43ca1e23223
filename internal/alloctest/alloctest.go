// Package alloctest measures what a decoder allocates, for the tests and
// fuzz targets that check no allocation is sized by a field the sender
// chose (issue 16).
package alloctest

import "runtime"

// Bytes is how many bytes fn allocates: the process's total, so run it
// where nothing else runs (a test or a fuzz worker).
func Bytes(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// MinBytes is the least of runs measures of fn, for a bound tight enough
// that the fuzz worker's own allocations (its other goroutines count in the
// process's total) could cross it: they only add, so the least measure is
// fn's own. fn must start afresh each time (a new decoder, a new buffer).
func MinBytes(runs int, fn func()) uint64 {
	least := Bytes(fn)
	for range runs - 1 {
		least = min(least, Bytes(fn))
	}
	return least
}

// DecodeBound is what decoding n bytes may allocate, whatever lengths the
// bytes claim: the msgpack codec allocates a container at most MaxInitLen
// elements ahead of its data (a few levels deep), otherwise in proportion
// to the input.
func DecodeBound(n int) uint64 { return 4<<20 + 64*uint64(n) }
