//go:build linux && amd64

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/testutil"
)

// The hostile-debuglink tests: an unprivileged process runs a stripped
// binary whose .gnu_debuglink names, next to it, a FIFO, a link to a
// device or to a FIFO, or a directory. The root recorder, symbolizing its
// stacks, must neither hang on it nor open it, and must end on time with
// a complete capture.

// nobody is the unprivileged user the workloads run as.
const nobody = 65534

// hostileSpin builds testdata/debuglink/spin.c, stripped, with a
// .gnu_debuglink to spin.debug, in a new directory of nobody's, and has
// make put something else than a debug file at spin.debug. It returns the
// binary and spin.debug's path.
func hostileSpin(t *testing.T, make func(debug string) error) (bin, debug string) {
	t.Helper()
	for _, tool := range []string{"objcopy", "strip", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("no %s", tool)
		}
	}
	// Not under t.TempDir, whose parent nobody cannot enter.
	dir, err := os.MkdirTemp("", "bpftape-debuglink-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	full := filepath.Join(dir, "spin.full")
	bin, debug = filepath.Join(dir, "spin"), filepath.Join(dir, "spin.debug")
	if err := testutil.CompileC(full, "-O1", "-g", "../../testdata/debuglink/spin.c"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"objcopy", "--only-keep-debug", full, debug},
		{"strip", "--strip-all", "-o", bin, full},
		{"objcopy", "--add-gnu-debuglink=" + debug, bin},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	for _, p := range []string{full, debug} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := make(debug); err != nil {
		t.Fatal(err)
	}
	// All of it nobody's, as if that user had made it.
	for _, p := range []string{dir, bin, debug} {
		if err := os.Lchown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, debug
}

// nobodyFIFO is testutil.WatchFIFO of a FIFO that nobody owns.
func nobodyFIFO(t *testing.T, path string) (opened func() bool) {
	t.Helper()
	opened = testutil.WatchFIFO(t, path)
	if err := os.Lchown(path, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	return opened
}

// runAsNobody starts bin as nobody; it is killed at the end of the test.
func runAsNobody(t *testing.T, bin string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// hostileCase is what spin.debug is, and what the recorder says of it.
type hostileCase struct {
	name string
	// make puts it at debug; opened, if not nil, reports whether a FIFO
	// it watches was opened.
	make func(t *testing.T, debug string) (opened func() bool)
	want string // in the NoSymbols of spin's object
}

var hostileCases = []hostileCase{
	{"fifo", func(t *testing.T, debug string) func() bool {
		return nobodyFIFO(t, debug)
	}, "a FIFO, not a regular file"},
	{"link to a device", func(t *testing.T, debug string) func() bool {
		must(t, os.Symlink("/dev/zero", debug))
		return nil
	}, "a symbolic link on the way, which is not followed there"},
	{"link to a fifo", func(t *testing.T, debug string) func() bool {
		// The link is not followed: the FIFO behind it is never opened.
		fifo := filepath.Join(filepath.Dir(debug), "pipe")
		opened := nobodyFIFO(t, fifo)
		must(t, os.Symlink(fifo, debug))
		return opened
	}, "a symbolic link on the way, which is not followed there"},
	{"directory", func(t *testing.T, debug string) func() bool {
		must(t, os.Mkdir(debug, 0o755))
		return nil
	}, "a directory, not a regular file"},
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// hostileRecording is a recording of a hostile spin process.
type hostileRecording struct {
	cmd    *exec.Cmd
	out    string
	spin   string
	opened func() bool
	want   string
	start  time.Time     // when the recorder was started
	exited chan struct{} // closed when the recorder has exited, with err
	err    error
	stderr strings.Builder
}

// startHostile starts spin with tc's debug file as nobody, and a
// recorder of its stacks with args.
func startHostile(t *testing.T, bin string, tc hostileCase, args ...string) *hostileRecording {
	t.Helper()
	h := &hostileRecording{want: tc.want, exited: make(chan struct{})}
	var opened func() bool
	h.spin, _ = hostileSpin(t, func(debug string) error {
		opened = tc.make(t, debug)
		return nil
	})
	h.opened = opened
	spin := runAsNobody(t, h.spin, "60")
	h.out = filepath.Join(t.TempDir(), "c.arrow")
	h.cmd = exec.Command(bin, append([]string{"record", "-o", h.out, "-p", strconv.Itoa(spin.Process.Pid)}, args...)...)
	h.cmd.Stderr = &h.stderr
	h.start = time.Now()
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		h.err = h.cmd.Wait()
		close(h.exited)
	}()
	t.Cleanup(func() {
		h.cmd.Process.Kill()
		<-h.exited
	})
	return h
}

// wait waits for the recorder to exit, at most limit (then it is killed
// and the test fails), and returns when it did.
func (h *hostileRecording) wait(t *testing.T, limit time.Duration) time.Time {
	t.Helper()
	select {
	case <-h.exited:
		end := time.Now()
		if h.err != nil {
			t.Errorf("record: %v\n%s", h.err, h.stderr.String())
		}
		return end
	case <-time.After(limit):
		h.cmd.Process.Kill()
		<-h.exited
		t.Fatalf("the recorder was still running after %v\n%s", limit, h.stderr.String())
	}
	return time.Time{}
}

// check checks the capture: a footer, events, spin's object saying why it
// has no symbols; and that the watched FIFO was never opened.
func (h *hostileRecording) check(t *testing.T) {
	t.Helper()
	if h.opened != nil && h.opened() {
		t.Error("the recorder opened the FIFO")
	}
	events, _, recovered := countEvents(t, h.out)
	if recovered || events == 0 {
		t.Errorf("%d events, recovered (no footer) %v; want events and a footer\n%s", events, recovered, h.stderr.String())
	}
	r, err := format.Open(h.out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, err := r.StackTable()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, o := range tb.Objects {
		if o.Path == h.spin {
			found = true
			if !strings.Contains(o.NoSymbols, "refused "+h.spin+".debug: "+h.want) {
				t.Errorf("spin's object says %q, want it to say %q", o.NoSymbols, h.want)
			}
		}
	}
	if !found {
		t.Errorf("no object %s in the stack table: %+v", h.spin, tb.Objects)
	}
	t.Logf("%d events", events)
}

// TestRecordHostileDebugLink records, for 2 s, the stacks of a process
// whose stripped binary's .gnu_debuglink names a FIFO, a link to
// /dev/zero, a link to a FIFO, or a directory: each recording ends within
// 3 s, with a footer and the events it saw, and no FIFO is ever opened.
func TestRecordHostileDebugLink(t *testing.T) {
	bin, _ := bpftapeBin(t)
	for _, tc := range hostileCases {
		t.Run(tc.name, func(t *testing.T) {
			h := startHostile(t, bin, tc, "-d", "2s", "profile:hz:99")
			if d := h.wait(t, 30*time.Second).Sub(h.start); d > 3*time.Second {
				t.Errorf("record -d 2s took %v", d)
			} else {
				t.Logf("record -d 2s took %v", d)
			}
			h.check(t)
		})
	}
}

// TestRecordHostileDebugLinkSignal: the same recording with a FIFO,
// stopped by SIGINT or SIGTERM 1 s in, ends within 1 s of the signal with a
// footer.
func TestRecordHostileDebugLinkSignal(t *testing.T) {
	bin, _ := bpftapeBin(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			ready := filepath.Join(t.TempDir(), "ready")
			h := startHostile(t, bin, hostileCases[0], "-d", "60s", "--ready-file", ready, "profile:hz:99")
			deadline := time.Now().Add(10 * time.Second)
			for {
				if _, err := os.Stat(ready); err == nil {
					break
				} else if !errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
					t.Fatalf("no ready file: %v\n%s", err, h.stderr.String())
				}
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(time.Second)
			sent := time.Now()
			if err := h.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if d := h.wait(t, 30*time.Second).Sub(sent); d > time.Second {
				t.Errorf("the recorder ended %v after %v", d, sig)
			} else {
				t.Logf("ended %v after %v", d, sig)
			}
			if !strings.Contains(h.stderr.String(), "stopped: interrupted") {
				t.Errorf("stderr does not say it was interrupted:\n%s", h.stderr.String())
			}
			h.check(t)
		})
	}
}
