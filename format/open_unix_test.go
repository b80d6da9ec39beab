//go:build unix

package format

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenNotAFile: a directory, standard input, a pipe and a device are
// refused with what they are, before they are opened (opening a pipe with
// no writer would wait for ever), and a file cut within its schema is not
// called both an Arrow file and not one.
func TestOpenNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(dir, "c.arrow")
	writeCounted(t, full, Zstd, 10, 4)
	b, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.arrow")
	if err := os.WriteFile(cut, b[:40], 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{dir, dir + " is a directory, not a capture"},
		{"-", "-: a capture is not read from standard input"},
		{fifo, fifo + " is a pipe, not a file"},
		{"/dev/null", "/dev/null is a device, not a file"},
		{cut, cut + ": not a bpftape capture: the file ends before its schema is complete, 40 bytes in"},
	} {
		done := make(chan error, 1)
		go func() {
			r, err := Open(c.path)
			if err == nil {
				r.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("Open(%s): %v, want %q", c.path, err, c.want)
			}
			if c.path == cut && !errors.Is(err, ErrNotCapture) {
				t.Errorf("Open(%s): %v is not ErrNotCapture", c.path, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Open(%s) still waits after 10s", c.path)
		}
	}
}
