package boottime

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestNow checks that Now advances with time and is at least
// CLOCK_MONOTONIC, which stops while the machine is suspended.
func TestNow(t *testing.T) {
	b0 := Now()
	var mono unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono); err != nil {
		t.Fatal(err)
	}
	if b0 < mono.Nano()-int64(time.Millisecond) {
		t.Errorf("Now = %d, below CLOCK_MONOTONIC %d", b0, mono.Nano())
	}
	time.Sleep(5 * time.Millisecond)
	if d := time.Duration(Now() - b0); d < 5*time.Millisecond || d > 5*time.Second {
		t.Errorf("Now advanced %v over a 5ms sleep", d)
	}
}
