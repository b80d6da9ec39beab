//go:build unix

package testutil

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// CPUTime returns the user and system CPU time this process has used.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(fmt.Sprintf("getrusage: %v", err))
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// WatchFIFO makes a FIFO at path and waits, on a goroutine, to open it for
// writing, which happens as soon as anyone opens it for reading: opened
// reports whether that happened (waiting up to 20 ms for an opener that
// just came). The test's end releases the writer.
func WatchFIFO(tb testing.TB, path string) (opened func() bool) {
	tb.Helper()
	if err := unix.Mkfifo(path, 0o644); err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
			unix.Close(fd)
		}
	}()
	tb.Cleanup(func() {
		select {
		case <-done:
			return
		default:
		}
		// A reader of our own lets the writer through.
		if fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
			<-done
			unix.Close(fd)
		}
	})
	return func() bool {
		select {
		case <-done:
			return true
		case <-time.After(20 * time.Millisecond):
			return false
		}
	}
}
