package main

import (
	"os"
	"runtime"
	"runtime/debug"
)

// firstGCPercent is the collector's GOGC until its first cycle. A verb on
// a capture of ten million events allocates about 6 MB and lives 50-100
// ms; at GOGC=100 the collector ran twice in it (at 4 and 7 MB), for 5-7
// ms of CPU, a tenth of the verb's. Until the first cycle, which then
// waits for a 16 MB heap, the collector runs at GOGC=400; from it, at
// whatever GOGC was, so that a verb with a big heap grows it no more than
// before.
const firstGCPercent = 400

// lateFirstGC has the collector's first cycle wait for a 16 MB heap, unless
// the user set GOGC, which stands.
func lateFirstGC() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	was := debug.SetGCPercent(firstGCPercent)
	// A sentinel nothing refers to: its cleanup runs after the first
	// cycle. (32 bytes: the tiny allocator's objects, under 16, may
	// never be cleaned up.)
	runtime.AddCleanup(new([32]byte), func(int) { debug.SetGCPercent(was) }, 0)
}
