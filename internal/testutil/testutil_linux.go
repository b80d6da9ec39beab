package testutil

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// OpenPTY opens a pseudo-terminal: the master side, which reads what is
// written to the slave, a terminal. The test's end closes both.
func OpenPTY(tb testing.TB) (master, slave *os.File) {
	tb.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		tb.Fatalf("open a pseudo-terminal: %v", err)
	}
	tb.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		tb.Fatalf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		tb.Fatalf("the pseudo-terminal's number: %v", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		tb.Fatalf("open the pseudo-terminal's slave: %v", err)
	}
	tb.Cleanup(func() { slave.Close() })
	return master, slave
}
