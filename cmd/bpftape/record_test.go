//go:build linux && amd64

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/testutil"
)

// The record tests run the real binary: signals, exit statuses and a
// killed recorder cannot be tested in-process.

var (
	binOnce sync.Once
	binErr  error
)

// bpftapeBin builds bpftape and the C test workload once per test binary,
// in binDir (TestMain removes it).
func bpftapeBin(t *testing.T) (bin, probes string) {
	t.Helper()
	testutil.RequireBPF(t, bpf.CheckFeatures)
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "bpftape-record-test"); binErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, "bpftape"), ".").CombinedOutput()
		if err != nil {
			binErr = errors.New("go build: " + err.Error() + "\n" + string(out))
			return
		}
		binErr = testutil.CompileC(filepath.Join(binDir, "probes"), "../../record/testdata/probes.c")
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "bpftape"), filepath.Join(binDir, "probes")
}

type result struct {
	code           int
	stdout, stderr string
	// cpu is the user and system time the command took, maxRSS its peak
	// resident set in bytes.
	cpu    time.Duration
	maxRSS int64
}

func runBin(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb bytes.Buffer
	if cmd.Stdout == nil {
		cmd.Stdout = &out
	}
	cmd.Stderr = &errb
	// A command the recorder left running keeps its output pipes open.
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	if cmd.ProcessState == nil { // it did not start
		t.Fatalf("run %v: %v", cmd.Args, err)
	}
	r := result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String(),
		cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSS = ru.Maxrss << 10 // Linux gives kilobytes
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) {
		t.Fatalf("run %v: %v", cmd.Args, err)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		r.code = 128 + int(ws.Signal())
	}
	t.Logf("%v: exit %d\nstderr:\n%s", cmd.Args, r.code, r.stderr)
	return r
}

func waitFile(t *testing.T, path string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil {
			return string(b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s did not appear within %v", path, timeout)
	return ""
}

// readyTarget returns the target pid a ready file names.
func readyTarget(t *testing.T, ready string) int {
	t.Helper()
	for _, l := range strings.Split(ready, "\n") {
		if v, ok := strings.CutPrefix(l, "target="); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no target= in ready file %q", ready)
	return 0
}

func countEvents(t *testing.T, path string) (events, lost uint64, recovered bool) {
	t.Helper()
	r, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len; i++ {
			if n, ok := b.Lost(i); ok {
				lost += n
			} else {
				events++
			}
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return events, lost, r.Recovered
}

func TestRecordExitStatus(t *testing.T) {
	bin, probes := bpftapeBin(t)
	dir := t.TempDir()
	for _, tt := range []struct {
		cmd  string
		code int
	}{
		{probes + " exit 0", 0},
		{probes + " exit 7", 7},
		{`sh -c 'kill -TERM $$'`, 128 + 15},
		{probes + " burst 1000", 0},
	} {
		out := filepath.Join(dir, "c.arrow")
		r := runBin(t, exec.Command(bin, "record", "-o", out, "--force", "-c", tt.cmd, "u:"+probes+":tick", "t:syscalls:sys_exit_write(ret)"))
		if r.code != tt.code || !strings.Contains(r.stderr, "stopped: command exited") {
			t.Errorf("-c %q: exit %d, want %d", tt.cmd, r.code, tt.code)
		}
	}
	events, _, _ := countEvents(t, filepath.Join(dir, "c.arrow"))
	if events < 1000 {
		t.Errorf("burst 1000: %d events", events)
	}
}

// TestRecordSIGINT interrupts recordings: the file is finished (it has its
// footer), the -c command is stopped with SIGTERM and its status returned.
func TestRecordSIGINT(t *testing.T) {
	bin, probes := bpftapeBin(t)
	for _, withCommand := range []bool{true, false} {
		dir := t.TempDir()
		out, ready := filepath.Join(dir, "c.arrow"), filepath.Join(dir, "ready")
		args := []string{"record", "-o", out, "--ready-file", ready, "u:" + probes + ":tick(arg0)"}
		var spin *exec.Cmd
		if withCommand {
			args = append(args, "-c", probes+" spin 60")
		} else {
			spin = exec.Command(probes, "spin", "60")
			if err := spin.Start(); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(bin, args...)
		done := make(chan result, 1)
		go func() { done <- runBin(t, cmd) }()
		waitFile(t, ready, 10*time.Second)
		time.Sleep(1200 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGINT)
		r := <-done
		if spin != nil {
			spin.Process.Kill()
			spin.Wait()
		}
		// Stopped as asked, the command too: 0 (docs/exit-status.md).
		want := 0
		if r.code != want || !strings.Contains(r.stderr, "stopped: interrupted") {
			t.Errorf("command %v: exit %d, want %d", withCommand, r.code, want)
		}
		events, _, recovered := countEvents(t, out)
		if recovered || events == 0 {
			t.Errorf("command %v: recovered %v, %d events", withCommand, recovered, events)
		}
	}
}

// TestRecordSIGKILL kills the recorder: the file is recovered up to its
// last complete batch, and no probe outlives the recorder.
func TestRecordSIGKILL(t *testing.T) {
	bin, probes := bpftapeBin(t)
	dir := t.TempDir()
	// Other tracers (perf probe, BCC) may have uprobe events of their own:
	// only new ones count.
	tracefsDirs := []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}
	before := map[string]bool{}
	for _, d := range tracefsDirs {
		b, _ := os.ReadFile(filepath.Join(d, "uprobe_events"))
		for _, l := range strings.Split(string(b), "\n") {
			before[l] = true
		}
	}
	out, ready := filepath.Join(dir, "c.arrow"), filepath.Join(dir, "ready")
	cmd := exec.Command(bin, "record", "-o", out, "--ready-file", ready, "-c", probes+" spin 60", "u:"+probes+":tick(arg0)")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	target := readyTarget(t, waitFile(t, ready, 10*time.Second))
	defer syscall.Kill(target, syscall.SIGKILL)
	time.Sleep(2500 * time.Millisecond) // batches are written at least once a second
	cmd.Process.Kill()
	cmd.Wait()
	events, _, recovered := countEvents(t, out)
	if !recovered || events == 0 {
		t.Errorf("recovered %v, %d events", recovered, events)
	}
	t.Logf("recovered %d events", events)
	for _, d := range tracefsDirs {
		b, _ := os.ReadFile(filepath.Join(d, "uprobe_events"))
		for _, l := range strings.Split(string(b), "\n") {
			if !before[l] {
				t.Errorf("uprobe_events after the recorder died: %q", l)
			}
		}
	}
}

// TestRecordAbort: a second SIGINT aborts at once with status 130, leaving
// a recoverable file.
func TestRecordAbort(t *testing.T) {
	bin, probes := bpftapeBin(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "c.arrow")
	r := abortRecording(t, bin, probes, dir, "-o", out)
	if r.code != 130 || !strings.Contains(r.stderr, "aborting") {
		t.Errorf("exit %d", r.code)
	}
	if events, _, recovered := countEvents(t, out); !recovered || events == 0 {
		t.Errorf("recovered %v, %d events", recovered, events)
	}
}

// TestRecordPrivileges runs the recorder without CAP_BPF, and as nobody.
func TestRecordPrivileges(t *testing.T) {
	bin, _ := bpftapeBin(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("skipping: setpriv (util-linux) not found")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	out := filepath.Join(dir, "c.arrow")
	for _, tt := range []struct {
		args []string
		want string
	}{
		// CAP_SYS_ADMIN stands in for both, so it goes too.
		{[]string{"--bounding-set=-bpf,-sys_admin"}, "running as root, but without CAP_BPF ("},
		{[]string{"--bounding-set=-perfmon,-sys_admin"}, "running as root, but without CAP_PERFMON ("},
		{[]string{"--reuid=65534", "--regid=65534", "--clear-groups"}, "running as uid 65534, without CAP_BPF and CAP_PERFMON"},
	} {
		// -d: should the check fail to stop it, the recording ends anyway.
		args := append(tt.args, bin, "record", "-o", out, "-d", "2", "t:syscalls:sys_exit_write")
		r := runBin(t, exec.Command(setpriv, args...))
		if r.code != exitFailure || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("setpriv %v: exit %d, stderr %q, want %q", tt.args, r.code, r.stderr, tt.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("setpriv %v: output file created", tt.args)
		}
	}
}

func TestRecordUsage(t *testing.T) {
	bin, probes := bpftapeBin(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "c.arrow")
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"record", "-o", out}, exitUsage, "no probes"},
		{[]string{"record", "-o", out, "u:" + probes}, exitUsage, "want uprobe:BINARY:SYMBOL"},
		{[]string{"record", "-o", out, "-d", "soon", "t:syscalls:sys_exit_write"}, exitUsage, "bad duration"},
		{[]string{"record", "-o", out, "--ringbuf-size", "3x", "t:syscalls:sys_exit_write"}, exitUsage, "bad size"},
		{[]string{"record", "-o", out, "--ringbuf-size", "5000", "t:syscalls:sys_exit_write"}, exitUsage, "power of two"},
		{[]string{"record", "-o", out, "--compress", "gzip", "t:syscalls:sys_exit_write"}, exitUsage, "unknown compression"},
		{[]string{"record", "-o", out, "-c", "'unterminated", "t:syscalls:sys_exit_write"}, exitUsage, "unterminated"},
		{[]string{"record", "-o", out, "-c", "", "t:syscalls:sys_exit_write"}, exitUsage, "-c: empty command"},
		{[]string{"record", "-o", "-", "t:syscalls:sys_exit_write"}, exitUsage, "-o -: record writes a capture file, not standard output"},
		{[]string{"record", "-o", out, "u:" + probes + ":tick(arg6)"}, exitUsage, "calling convention passes 6 integer arguments in registers, arg0..arg5"},
		{[]string{"record", "-o", out, "u:" + probes + ":0xffffffff"}, exitFailure, probes + ": address 0xffffffff is in no executable PT_LOAD segment (addresses"}, // the address said once
		{[]string{"record", "-o", out, "-c", "  ", "t:syscalls:sys_exit_write"}, exitUsage, "-c: empty command"},
		{[]string{"record", "-o", out, "t:syscalls:sys_exit_wrte"}, exitFailure, `did you mean "syscalls:sys_exit_write"`},
		{[]string{"record", "-o", out, "kprobe:vfs_read"}, exitFailure, "probe kprobe:vfs_read: this kernel has no kprobes (built without CONFIG_KPROBES"},
		{[]string{"record", "-o", filepath.Join(dir, "nodir", "c.arrow"), "-c", "touch " + filepath.Join(dir, "ran"), "t:syscalls:sys_exit_write"}, exitFailure, "output: open"},
	} {
		r := runBin(t, exec.Command(bin, tt.args...))
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) || !strings.HasPrefix(r.stderr, "bpftape record: ") {
			t.Errorf("%q: exit %d, stderr %q; want %d, %q", tt.args, r.code, r.stderr, tt.code, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran although the output could not be created")
	}
	r := runBin(t, exec.Command(bin, "record", "--help"))
	if r.code != exitOK || !strings.Contains(r.stdout, "PROBE := [NAME=]TYPE:TARGET[(FIELD,...)]") || !strings.Contains(r.stdout, "str(X)") {
		t.Errorf("--help: exit %d, stdout %q", r.code, r.stdout)
	}
}

// TestRecordFlags covers -d with -p, flags after probes, the ready file and
// the summary.
func TestRecordFlags(t *testing.T) {
	bin, probes := bpftapeBin(t)
	dir := t.TempDir()
	out, ready := filepath.Join(dir, "c.arrow"), filepath.Join(dir, "ready")
	spin := exec.Command(probes, "spin", "60")
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { spin.Process.Kill(); spin.Wait() }()
	start := time.Now()
	r := runBin(t, exec.Command(bin, "record", "u:"+probes+":tick(arg0)", "-p", strconv.Itoa(spin.Process.Pid),
		"-o", out, "-d", "0.8", "--ready-file", ready, "--ringbuf-size", "64K", "--compress", "lz4"))
	if r.code != 0 || time.Since(start) > 10*time.Second {
		t.Fatalf("exit %d after %v", r.code, time.Since(start))
	}
	for _, want := range []string{"stopped: duration ]", "events in 0.8", "tick", "uprobe", "bytes/event"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	if strings.Contains(r.stderr, "does not map") {
		t.Errorf("a warning that the process does not map its own binary:\n%s", r.stderr)
	}
	// A process that does not map the probed binary: recorded, with a
	// warning, as it would see none of its events.
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()
	r2 := runBin(t, exec.Command(bin, "record", "u:"+probes+":tick(arg0)", "-p", strconv.Itoa(sleep.Process.Pid), "-o", filepath.Join(dir, "c2.arrow"), "-d", "0.2"))
	if want := fmt.Sprintf("warning: process %d (-p) does not map %s: probe tick will record none of its events", sleep.Process.Pid, probes); r2.code != 0 || !strings.Contains(r2.stderr, want) {
		t.Errorf("-p of a process without the binary: exit %d, stderr:\n%s\nwant %q", r2.code, r2.stderr, want)
	}
	if b, err := os.ReadFile(ready); err != nil || !strings.Contains(string(b), "target="+strconv.Itoa(spin.Process.Pid)) {
		t.Errorf("ready file %q, %v", b, err)
	}
	rd, err := format.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	m := rd.Meta
	if m.Compression != "lz4" || m.Extra["ring_size"] != "65536" || m.Extra["pid"] != strconv.Itoa(spin.Process.Pid) ||
		len(m.CommandLine) < 3 || m.CommandLine[1] != "record" || !strings.HasPrefix(m.Tool, "bpftape "+Version) {
		t.Errorf("meta %+v", m)
	}
}

// TestRecordLoss overflows a one-page ring (--ringbuf-size 4096) with a
// burst: every call is either an event or counted in a loss record.
func TestRecordLoss(t *testing.T) {
	bin, probes := bpftapeBin(t)
	out := filepath.Join(t.TempDir(), "c.arrow")
	const n = 100000
	r := runBin(t, exec.Command(bin, "record", "-o", out, "--ringbuf-size", "4096", "-c", probes+" burst "+strconv.Itoa(n), "u:"+probes+":tick(arg0)"))
	if r.code != 0 || !strings.Contains(r.stderr, "WARNING: ") {
		t.Errorf("exit %d, no loss warning", r.code)
	}
	events, lost, _ := countEvents(t, out)
	t.Logf("%d recorded + %d lost", events, lost)
	if events+lost != n || lost == 0 {
		t.Errorf("%d recorded + %d lost != %d generated", events, lost, n)
	}
	// Loss records are stamped when the counts were read, and those read
	// after the window closed with its end: the losses came before it.
	rd, err := format.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	w := rd.Meta.Window
	for rd.Next() {
		b := rd.Batch()
		for i := 0; i < b.Len; i++ {
			if _, ok := b.Lost(i); ok && (w == nil || b.Time[i] < w.Start || b.Time[i] > w.End) {
				t.Errorf("a loss record at %d, outside the window %+v", b.Time[i], w)
			}
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
}
