package testutil

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// CPUTime returns the user and system CPU time this process has used.
func CPUTime() time.Duration {
	var creation, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user); err != nil {
		panic(fmt.Sprintf("GetProcessTimes: %v", err))
	}
	// Filetimes count 100 ns intervals; these are durations, not dates.
	ticks := func(t windows.Filetime) int64 { return int64(t.HighDateTime)<<32 | int64(t.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100)
}

// WatchFIFO skips the test: Windows has no FIFOs in its file system (its
// named pipes live under \\.\pipe\).
func WatchFIFO(tb testing.TB, path string) (opened func() bool) {
	tb.Helper()
	tb.Skip("skipping: no FIFOs on Windows")
	return nil
}
