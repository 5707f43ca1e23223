package testkit

import "runtime"

// LiveHeap is the live heap in bytes after two collections: the second
// frees what the pools' victim caches kept after the first, so what remains
// is what the code under test really holds alive.
func LiveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
