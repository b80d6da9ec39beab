package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// gcPercent reads the collector's GOGC.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// TestLateFirstGC: with GOGC set, lateFirstGC leaves the collector alone;
// without, it runs at firstGCPercent until its first cycle, and at the
// GOGC it had from then on.
func TestLateFirstGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(77))
	t.Setenv("GOGC", "77")
	lateFirstGC()
	if p := gcPercent(); p != 77 {
		t.Fatalf("with GOGC set, GOGC is %d, want 77", p)
	}
	os.Unsetenv("GOGC") // t.Setenv puts it back
	lateFirstGC()
	if p := gcPercent(); p != firstGCPercent {
		t.Fatalf("before the first cycle, GOGC is %d, want %d", p, firstGCPercent)
	}
	// The cleanup runs on a goroutine of its own after the cycle.
	for deadline := time.Now().Add(10 * time.Second); gcPercent() != 77; {
		if time.Now().After(deadline) {
			t.Fatalf("after a cycle, GOGC is %d, want 77 back", gcPercent())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}
