//go:build linux && amd64

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ext4Shutdown is EXT4_IOC_SHUTDOWN, _IOR('X', 125, __u32) (the same
// number as XFS_IOC_GOINGDOWN): the file system stops, and every later
// read, write or fsync on it fails with EIO, as after a fatal device error.
// With EXT4_GOING_FLAGS_DEFAULT (0) it first writes back what is cached,
// so that what was written before it is on the device.
const ext4Shutdown = 0x8004587d

// TestRecordIOError records a high-rate workload onto an ext4 file system
// on a loop device and shuts the file system down under it, which makes
// the recorder's next write fail with EIO (this kernel has no
// device-mapper and no fault injection; a shut-down file system is how
// ext4 and XFS answer a failing device): the recording stops with a clear
// message and exit status 1, the -c command is stopped, no probe is left,
// and once the file system is mounted again the file's complete batches
// read back intact and repair into a standard Arrow file (which
// nodejs-polars reads alike, built with -tags interop).
func TestRecordIOError(t *testing.T) {
	bin, probes := bpftapeBin(t)
	for _, tool := range []string{"mkfs.ext4", "losetup"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (make deps installs e2fsprogs and mount): %v", tool, err)
		}
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "disk.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 64<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	// -o loop: mount(8) sets the loop device up with autoclear, so that
	// unmounting frees it.
	mnt := mount(t, dir, "ext4", "-t", "ext4", "-o", "loop", img)
	out, ready := filepath.Join(mnt, "c.arrow"), filepath.Join(dir, "ready")
	uprobes := uprobeLines()
	cmd := exec.Command(bin, "record", "-o", out, "--ready-file", ready, "-c", probes+" spin 30", "tick=u:"+probes+":tick(arg0)")
	done := make(chan result, 1)
	go func() { done <- runBin(t, cmd) }()
	target := readyTarget(t, waitFile(t, ready, 10*time.Second))
	defer killWait(target)
	stopWatch := watchBPF(cmd.Process.Pid)
	// Let some batches reach the file first.
	time.Sleep(1500 * time.Millisecond)
	before, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(mnt)
	if err != nil {
		t.Fatal(err)
	}
	shut := time.Now()
	err = unix.IoctlSetPointerInt(int(d.Fd()), ext4Shutdown, 0)
	d.Close()
	if err != nil {
		cmd.Process.Kill()
		<-done
		t.Fatalf("EXT4_IOC_SHUTDOWN: %v", err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the recorder did not stop after its file system failed")
	}
	progs, links := stopWatch()
	t.Logf("file system shut down with %d bytes written; the recorder stopped %v later", before.Size(), time.Since(shut).Round(time.Millisecond))
	checkWriteFailed(t, r, target, "input/output error", "the disk failed", "bpftape repair "+out)
	if len(progs) == 0 || len(links) == 0 {
		t.Errorf("saw %d programs and %d links in the recorder's fdinfo", len(progs), len(links))
	}
	waitBPFGone(t, "after EIO", progs, links)
	checkUprobes(t, "after EIO", uprobes)

	// The shut-down file system reads nothing either: mount it again.
	if err := unix.Unmount(mnt, 0); err != nil {
		t.Fatalf("unmount the shut-down file system: %v", err)
	}
	mnt = mount(t, dir, "ext4-again", "-t", "ext4", "-o", "loop", img)
	out = filepath.Join(mnt, "c.arrow")
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	run := readTicks(t, out, target, 0)
	t.Logf("after the EIO: %d bytes on the device, %d events in complete batches (%d lost), cut: %v", st.Size(), run.events, run.lost, run.cut)
	if st.Size() < before.Size() {
		t.Errorf("the device holds %d bytes, fewer than the %d written before the shutdown", st.Size(), before.Size())
	}
	if !run.recovered || run.events == 0 || run.first != 0 || run.gaps > run.lost {
		t.Errorf("recovered %v, %d events from arg0 %d, %d missing, %d lost", run.recovered, run.events, run.first, run.gaps, run.lost)
	}
	fixed := filepath.Join(dir, "fixed.arrow")
	if rr := runBin(t, exec.Command(bin, "repair", out, fixed)); rr.code != exitOK {
		t.Fatalf("repair: exit %d", rr.code)
	}
	if got := readTicks(t, fixed, target, 0); got.events != run.events || got.recovered {
		t.Errorf("repaired: %d events (recovered %v), want %d", got.events, got.recovered, run.events)
	}
	if !interopTests {
		return // the cross-check with polars needs -tags interop
	}
	pl := readPolars(t, fixed)
	if pl.PerProbe["tick"] != run.events || pl.Lost != run.lost {
		t.Errorf("polars reads %d tick events, %d lost; bpftape %d, %d", pl.PerProbe["tick"], pl.Lost, run.events, run.lost)
	}
}
