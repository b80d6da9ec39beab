package boottime

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Now reads CLOCK_BOOTTIME in nanoseconds. It is safe in any goroutine.
// It panics on a kernel without CLOCK_BOOTTIME (before 2.6.39), where no
// event time could be compared with it.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		panic(fmt.Sprintf("clock_gettime(CLOCK_BOOTTIME): %v", err))
	}
	return ts.Nano()
}
