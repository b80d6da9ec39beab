package record

import (
	"bytes"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// ErrUprobeConflict is the error of attaching a uprobe at an address where
// another tracer holds one with a different USDT semaphore
// (ref_ctr_offset): the kernel then refuses with EINVAL and logs
// "ref_ctr_offset mismatch".
var ErrUprobeConflict = errors.New("another tracer holds a uprobe at this address with a different USDT semaphore offset")

// uprobeConflict turns the EINVAL of a uprobe on binary path into
// ErrUprobeConflict, with what to do, when the kernel log shows a
// ref_ctr_offset mismatch on that file; any other error is returned as it
// is.
func uprobeConflict(err error, path string) error {
	if !errors.Is(err, unix.EINVAL) {
		return err
	}
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil || !refCtrMismatchLogged(st.Ino) {
		return err
	}
	return fmt.Errorf("%w (the kernel logged \"ref_ctr_offset mismatch\" for %s): "+
		"stop the other tracer and record again; Debian's python3-bpfcc 0.26 passes such an offset for every BCC uprobe, "+
		"so BCC and bpftape cannot probe the same address at once: %w", ErrUprobeConflict, path, err)
}

// refCtrMismatchLogged reports whether the kernel log (/dev/kmsg, root
// only) holds a "ref_ctr_offset mismatch" for the file of inode ino.
func refCtrMismatchLogged(ino uint64) bool {
	// Raw system calls: an os.File would wait in the poller at the end of
	// the log, where the read must fail with EAGAIN.
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	want := []byte(fmt.Sprintf("inode: 0x%x ", ino))
	buf := make([]byte, 8192) // one record per read
	found := false
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EPIPE) { // a record overwritten while reading: go on
			continue
		}
		if err != nil || n <= 0 {
			return found
		}
		rec := buf[:n]
		if bytes.Contains(rec, []byte("ref_ctr_offset mismatch")) && bytes.Contains(rec, want) {
			found = true
		}
	}
}
