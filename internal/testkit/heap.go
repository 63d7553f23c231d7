package testkit

import "runtime"

// LiveHeap returns the live heap after a full collection (a second one
// runs what the first one's sweep left).
func LiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
