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

// DecodeBound is what decoding n bytes may allocate, whatever lengths the
// bytes claim: the msgpack codec allocates a container at most MaxInitLen
// elements ahead of its data (a few levels deep), otherwise in proportion
// to the input.
func DecodeBound(n int) uint64 { return 4<<20 + 64*uint64(n) }
