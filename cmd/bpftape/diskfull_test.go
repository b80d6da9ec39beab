//go:build linux && amd64

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
)

// mount mounts what on a new directory under dir with mount(8) arguments,
// unmounted when the test ends.
func mount(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	mnt := filepath.Join(dir, name)
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", append(args, mnt)...).CombinedOutput(); err != nil {
		t.Fatalf("mount %v %s: %v\n%s", args, mnt, err, out)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, 0); err != nil {
			unix.Unmount(mnt, unix.MNT_DETACH)
		}
	})
	return mnt
}

// TestRecordDiskFull records a high-rate workload onto a 2 MiB tmpfs: the
// recording stops when the disk is full, with a message that says so and
// exit status 1; the -c command is stopped; no probe is left; and every
// complete batch of the file reads back intact (and repairs elsewhere).
func TestRecordDiskFull(t *testing.T) {
	bin, probes := bpftapeBin(t)
	dir := t.TempDir()
	mnt := mount(t, dir, "small", "-t", "tmpfs", "-o", "size=2m", "tmpfs")
	out, ready := filepath.Join(mnt, "c.arrow"), filepath.Join(dir, "ready")
	uprobes := uprobeLines()
	cmd := exec.Command(bin, "record", "-o", out, "--ready-file", ready, "-c", probes+" spin 30", "tick=u:"+probes+":tick(arg0)")
	done := make(chan result, 1)
	start := time.Now()
	go func() { done <- runBin(t, cmd) }()
	target := readyTarget(t, waitFile(t, ready, 10*time.Second))
	stopWatch := watchBPF(cmd.Process.Pid)
	var r result
	select {
	case r = <-done:
	case <-time.After(25 * time.Second):
		cmd.Process.Kill()
		killWait(target)
		t.Fatal("the recorder did not stop when the disk filled up")
	}
	progs, links := stopWatch()
	defer killWait(target)
	checkWriteFailed(t, r, target, "no space left on device", "the disk is full", "bpftape repair "+out)
	waitBPFGone(t, "after disk full", progs, links)
	checkUprobes(t, "after disk full", uprobes)

	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	run := readTicks(t, out, target, 0)
	t.Logf("disk full after %v: %d bytes, %d events in complete batches (%d lost), cut: %v",
		time.Since(start).Round(time.Millisecond), st.Size(), run.events, run.lost, run.cut)
	if !run.recovered || run.events == 0 || run.first != 0 || run.gaps > run.lost {
		t.Errorf("recovered %v, %d events from arg0 %d, %d missing, %d lost", run.recovered, run.events, run.first, run.gaps, run.lost)
	}
	// The summary counts what the file holds: the events of complete
	// batches, not those appended to the batch that did not fit.
	var summarized uint64
	if _, rest, ok := strings.Cut(r.stderr, "[ bpftape record: "); ok {
		n, _, _ := strings.Cut(rest, " events in")
		summarized, _ = strconv.ParseUint(strings.ReplaceAll(n, ",", ""), 10, 64)
	}
	if summarized != uint64(run.events) {
		t.Errorf("summary: %d events, the file holds %d\n%s", summarized, run.events, r.stderr)
	}
	fixed := filepath.Join(dir, "fixed.arrow")
	if rr := runBin(t, exec.Command(bin, "repair", out, fixed)); rr.code != exitOK {
		t.Fatalf("repair: exit %d", rr.code)
	}
	if got := readTicks(t, fixed, target, 0); got.events != run.events || got.recovered {
		t.Errorf("repaired: %d events (recovered %v), want %d", got.events, got.recovered, run.events)
	}
}

// TestRecordUnwritableOutput: an output on a read-only bind mount, on a
// read-only tmpfs, under a regular file or in a directory that does not
// exist fails with a clear error before the command runs and before any
// probe is attached.
func TestRecordUnwritableOutput(t *testing.T) {
	bin, probes := bpftapeBin(t)
	dir := t.TempDir()
	rw := filepath.Join(dir, "rw")
	os.MkdirAll(rw, 0o755)
	robind := mount(t, dir, "robind", "--bind", rw)
	if out, err := exec.Command("mount", "-o", "remount,bind,ro", robind).CombinedOutput(); err != nil {
		t.Fatalf("remount ro: %v\n%s", err, out)
	}
	rotmp := mount(t, dir, "rotmp", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs")
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	for _, tt := range []struct {
		out, want string
	}{
		{filepath.Join(robind, "c.arrow"), "read-only file system"},
		{filepath.Join(rotmp, "c.arrow"), "read-only file system"},
		{filepath.Join(file, "c.arrow"), "not a directory"},
		{filepath.Join(dir, "missing", "c.arrow"), "no such file or directory"},
	} {
		ran := filepath.Join(dir, "ran")
		uprobes := uprobeLines()
		cmd := exec.Command(bin, "record", "-o", tt.out, "-c", "touch "+ran, "u:"+probes+":tick", "t:syscalls:sys_exit_write(ret)")
		r := runBin(t, cmd)
		if r.code != exitFailure || !strings.HasPrefix(r.stderr, "bpftape record: output: open "+tt.out+": "+tt.want) {
			t.Errorf("-o %s: exit %d, stderr %q, want 'bpftape record: output: open ...: %s'", tt.out, r.code, r.stderr, tt.want)
		}
		if strings.Contains(r.stderr, "events in") {
			t.Errorf("-o %s: a recording summary was printed", tt.out)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Errorf("-o %s: the command ran", tt.out)
			os.Remove(ran)
		}
		checkUprobes(t, "-o "+tt.out, uprobes)
	}
}

// TestExportParquetDiskFull exports a capture whose Parquet file does not
// fit a 1 MiB tmpfs, as one file and partitioned: a clean error that says
// the disk is full, exit 1, and no file left behind. Before, Arrow Go's
// page writer segfaulted on the write after the failed one and left the
// half-written file.
func TestExportParquetDiskFull(t *testing.T) {
	bin, _ := bpftapeBin(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "big.arrow")
	if err := formattest.WriteFile(in, 2_000_000, nil, format.WriterOptions{}, 0); err != nil {
		t.Fatal(err)
	}
	mnt := mount(t, dir, "small", "-t", "tmpfs", "-o", "size=1m", "tmpfs")
	for _, args := range [][]string{
		{"export", in, "--format", "parquet", "-o", filepath.Join(mnt, "x.parquet")},
		{"export", in, "--format", "parquet", "--partition", "-o", filepath.Join(mnt, "parts")},
	} {
		r := runBin(t, exec.Command(bin, args...))
		if r.code != exitFailure || !strings.Contains(r.stderr, "no space left on device") || strings.Contains(r.stderr, "panic") {
			t.Errorf("%v: exit %d, want 1 and 'no space left on device'\n%s", args, r.code, r.stderr)
		}
		filepath.Walk(mnt, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				t.Errorf("%v left %s behind", args, p)
			}
			return nil
		})
	}
}
