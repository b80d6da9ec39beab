package boottime

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestNow checks that Now advances with time and is at least
// CLOCK_MONOTONIC, which stops while the machine is suspended: the boot
// clock is the monotonic one plus the time suspended, so Now read after
// CLOCK_MONOTONIC is never below it, however long the thread waited
// between the two reads.
func TestNow(t *testing.T) {
	var mono unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono); err != nil {
		t.Fatal(err)
	}
	b0 := Now()
	if b0 < mono.Nano() {
		t.Errorf("Now = %d, below CLOCK_MONOTONIC %d read before it", b0, mono.Nano())
	}
	time.Sleep(5 * time.Millisecond)
	if d := time.Duration(Now() - b0); d < 5*time.Millisecond || d > 5*time.Second {
		t.Errorf("Now advanced %v over a 5ms sleep", d)
	}
}
