//go:build linux && amd64

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/testutil"
)

// The target lifecycle tests: the traced process exits, execs, has its
// binary replaced, or comes and goes by the dozen; the recorder stops or
// carries on cleanly, and after it exits — on its own, after SIGTERM or
// after an error — no BPF program or link it made is left in the kernel
// and uprobe_events is as it was.

// recording is a 'bpftape record' running in the background.
type recording struct {
	t       *testing.T
	cmd     *exec.Cmd
	out     string
	done    chan result
	uprobes map[string]bool
	stop    func() (progs, links []uint32)
	// what the recorder held once ready: the watcher samples every 20 ms
	held struct{ progs, links []uint32 }
}

// startRecording starts bpftape record with args (and -o, --ready-file)
// and waits until its probes are attached.
func startRecording(t *testing.T, bin string, args ...string) *recording {
	t.Helper()
	dir := t.TempDir()
	rc := &recording{t: t, out: filepath.Join(dir, "c.arrow"), done: make(chan result, 1), uprobes: uprobeLines()}
	ready := filepath.Join(dir, "ready")
	rc.cmd = exec.Command(bin, append([]string{"record", "-o", rc.out, "--ready-file", ready}, args...)...)
	go func() { rc.done <- runBin(t, rc.cmd) }()
	for rc.cmd.Process == nil {
		time.Sleep(time.Millisecond)
	}
	rc.stop = watchBPF(rc.cmd.Process.Pid)
	waitFile(t, ready, 10*time.Second)
	rc.held.progs, rc.held.links = bpfHeld(rc.cmd.Process.Pid)
	return rc
}

// wait waits for the recorder to exit, then checks that it left nothing
// behind.
func (rc *recording) wait(timeout time.Duration) result {
	rc.t.Helper()
	var r result
	select {
	case r = <-rc.done:
	case <-time.After(timeout):
		rc.cmd.Process.Kill()
		<-rc.done
		rc.t.Fatalf("the recorder did not stop within %v", timeout)
	}
	progs, links := rc.stop()
	progs, links = union(progs, rc.held.progs), union(links, rc.held.links)
	if len(progs) == 0 || len(links) == 0 {
		rc.t.Errorf("saw %d programs and %d links in the recorder's fdinfo", len(progs), len(links))
	}
	waitBPFGone(rc.t, "after the recorder exited", progs, links)
	checkUprobes(rc.t, "after the recorder exited", rc.uprobes)
	return r
}

// TestLifecyclePIDExits: the -p process exits mid-capture; the recorder
// stops by itself with a complete file.
func TestLifecyclePIDExits(t *testing.T) {
	bin, probes := bpftapeBin(t)
	// It ends 300 ms after the recorder is ready: a process that ends on
	// its own after a fixed time could end before a recorder slowed by a
	// loaded machine had attached (seen: "no such process" after 2 s).
	spin := exec.Command(probes, "spin", "60")
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	defer spin.Process.Kill()
	waited := make(chan error, 1)
	go func() { waited <- spin.Wait() }()
	rc := startRecording(t, bin, "-p", strconv.Itoa(spin.Process.Pid), "tick=u:"+probes+":tick(arg0)", "t:syscalls:sys_exit_write(ret)")
	time.Sleep(300 * time.Millisecond)
	spin.Process.Signal(syscall.SIGTERM)
	<-waited
	r := rc.wait(10 * time.Second)
	if r.code != 0 || !strings.Contains(r.stderr, "stopped: process exited") {
		t.Errorf("exit %d, want 0 and 'stopped: process exited'", r.code)
	}
	run := readTicks(t, rc.out, spin.Process.Pid, 0)
	if run.recovered || run.events == 0 || run.gaps > run.lost {
		t.Errorf("recovered %v, %d events, %d missing, %d lost", run.recovered, run.events, run.gaps, run.lost)
	}
}

// buildWorkload builds testdata/bpfload/workload.c, which waits for a line
// on stdin, calls work() 20 times, then execs /bin/true.
func buildWorkload(t *testing.T) string {
	t.Helper()
	return testutil.BuildC(t, "../../testdata/bpfload/workload.c", "workload")
}

// TestLifecycleExec: the -p process is a shell that execs into the probed
// binary, which execs /bin/true: its uprobes fire only while it runs the
// probed binary, every exec is seen, and the recorder stops when the
// process exits.
func TestLifecycleExec(t *testing.T) {
	bin, _ := bpftapeBin(t)
	work := buildWorkload(t)
	sh := exec.Command("sh", "-c", "read line; exec "+work+" args")
	stdin, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var shOut bytes.Buffer
	sh.Stdout = &shOut
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer sh.Process.Kill()
	pid := sh.Process.Pid
	rc := startRecording(t, bin, "-p", strconv.Itoa(pid), "work=u:"+work+":work(arg0)", "exec=t:sched:sched_process_exec")
	io.WriteString(stdin, "go\ngo\n") // one line for sh's read, one for the workload
	stdin.Close()
	if err := sh.Wait(); err != nil {
		t.Fatalf("target: %v", err)
	}
	r := rc.wait(10 * time.Second)
	if r.code != 0 || !strings.Contains(r.stderr, "stopped: process exited") {
		t.Errorf("exit %d, want 0 and 'stopped: process exited'", r.code)
	}
	rd, err := format.Open(rc.out)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	counts := map[string]int{}
	var comms []string
	for rd.Next() {
		b := rd.Batch()
		for i := 0; i < b.Len; i++ {
			if _, ok := b.Lost(i); ok {
				continue
			}
			if b.PID[i] != uint32(pid) {
				t.Errorf("event of pid %d", b.PID[i])
			}
			name := rd.Meta.Probes[b.Probe[i]].Name
			counts[name]++
			if name == "exec" {
				comms = append(comms, b.Comm(i))
			}
		}
	}
	if counts["work"] != 20 || counts["exec"] != 2 {
		t.Errorf("%d work events (want 20), %d execs (want 2: the workload, then true), exec comms %q", counts["work"], counts["exec"], comms)
	}
}

// TestLifecycleBinaryReplaced: the traced binary is replaced on disk (a
// new file renamed over it, as package managers do) while a process of the
// old one runs: the old process stays traced, the new file's processes are
// not, and nothing breaks.
func TestLifecycleBinaryReplaced(t *testing.T) {
	bin, probes := bpftapeBin(t)
	dir := t.TempDir()
	exe := filepath.Join(dir, "probes")
	copyFile(t, probes, exe)
	rc := startRecording(t, bin, "tick=u:"+exe+":tick(arg0)")
	old := exec.Command(exe, "spin", "2")
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	// The replacement differs (another build), as an upgrade would.
	newExe := filepath.Join(dir, "probes.new")
	if err := testutil.CompileC(newExe, "../../record/testdata/probes.c", "-O1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(newExe, exe); err != nil {
		t.Fatal(err)
	}
	fresh := exec.Command(exe, "burst", "1000")
	if out, err := fresh.CombinedOutput(); err != nil {
		t.Fatalf("new binary: %v\n%s", err, out)
	}
	if err := old.Wait(); err != nil {
		t.Fatalf("old process: %v", err)
	}
	rc.cmd.Process.Signal(syscall.SIGINT)
	r := rc.wait(10 * time.Second)
	if r.code != 0 || !strings.Contains(r.stderr, "stopped: interrupted") {
		t.Errorf("exit %d", r.code)
	}
	run := readTicks(t, rc.out, old.Process.Pid, 0) // fails on an event of another pid
	if run.events == 0 || run.first != 0 || run.gaps > run.lost {
		t.Errorf("old process: %d events from arg0 %d, %d missing, %d lost", run.events, run.first, run.gaps, run.lost)
	}
	t.Logf("old process: %d events; replacement's process: none", run.events)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestLifecycleChurn records system-wide while 40 processes come and go, 4
// at a time, and stops with SIGTERM: every process's calls are recorded or
// counted lost.
func TestLifecycleChurn(t *testing.T) {
	bin, probes := bpftapeBin(t)
	rc := startRecording(t, bin, "tick=u:"+probes+":tick(arg0)", "exit=t:sched:sched_process_exit")
	const procs, calls = 40, 5000
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	var mu sync.Mutex
	pids := map[uint32]bool{}
	for i := 0; i < procs; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c := exec.Command(probes, "burst", strconv.Itoa(calls))
			if err := c.Run(); err != nil {
				t.Errorf("workload: %v", err)
				return
			}
			mu.Lock()
			pids[uint32(c.Process.Pid)] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	time.Sleep(200 * time.Millisecond)
	rc.cmd.Process.Signal(syscall.SIGTERM)
	r := rc.wait(10 * time.Second)
	if r.code != 0 || !strings.Contains(r.stderr, "stopped: interrupted") {
		t.Errorf("exit %d after SIGTERM", r.code)
	}
	rd, err := format.Open(rc.out)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	perPID := map[uint32]uint64{}
	exits := map[uint32]bool{}
	var lost uint64
	for rd.Next() {
		b := rd.Batch()
		for i := 0; i < b.Len; i++ {
			if n, ok := b.Lost(i); ok {
				if rd.Meta.Probes[b.Probe[i]].Name == "tick" {
					lost += n
				}
				continue
			}
			switch rd.Meta.Probes[b.Probe[i]].Name {
			case "tick":
				perPID[b.PID[i]]++
			case "exit":
				if pids[b.PID[i]] {
					exits[b.PID[i]] = true
				}
			}
		}
	}
	if err := rd.Err(); err != nil || rd.Recovered {
		t.Fatalf("read: %v, recovered %v", err, rd.Recovered)
	}
	var total uint64
	for pid, n := range perPID {
		if !pids[pid] {
			t.Errorf("tick events of pid %d, not a workload", pid)
		}
		total += n
	}
	if total+lost != procs*calls || len(exits) != procs {
		t.Errorf("%d processes: %d recorded + %d lost != %d calls; %d exits seen", len(perPID), total, lost, procs*calls, len(exits))
	}
	t.Logf("%d processes came and went: %d events recorded, %d lost", procs, total, lost)
}

// TestLifecycleErrorAfterAttach: the recorder fails once every probe is
// attached (its ready file cannot be written): it exits 1, the -c command
// never runs, and everything it attached is gone.
func TestLifecycleErrorAfterAttach(t *testing.T) {
	bin, probes := bpftapeBin(t)
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	uprobes := uprobeLines()
	cmd := exec.Command(bin, "record", "-o", filepath.Join(dir, "c.arrow"), "--ready-file", filepath.Join(dir, "no", "ready"),
		"-c", "touch "+ran, "u:"+probes+":tick", "ur:"+probes+":tick", "t:syscalls:sys_exit_write")
	done := make(chan result, 1)
	go func() { done <- runBin(t, cmd) }()
	for cmd.Process == nil {
		time.Sleep(time.Millisecond)
	}
	stop := watchBPFEvery(cmd.Process.Pid, time.Millisecond)
	r := <-done
	progs, links := stop()
	if r.code != exitFailure || !strings.Contains(r.stderr, "bpftape record: ready file: ") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the command ran")
	}
	if len(progs) == 0 {
		t.Error("never saw the recorder's BPF programs")
	}
	t.Logf("the recorder held programs %v and links %v", progs, links)
	waitBPFGone(t, "after the error", progs, links)
	checkUprobes(t, "after the error", uprobes)
}

// TestLifecycleDoubleInterrupt: a -c command that ignores SIGTERM and
// SIGINT is killed by a second Ctrl-C, which aborts the recorder at once;
// before, the recorder exited and left the command running, although the
// help promises SIGKILL.
func TestLifecycleDoubleInterrupt(t *testing.T) {
	bin, _ := bpftapeBin(t)
	rc := startRecording(t, bin, "-c", `sh -c "trap '' TERM INT; while :; do sleep 0.05; done"`, "t:syscalls:sys_enter_nanosleep")
	target := readyTarget(t, waitFile(t, filepath.Join(filepath.Dir(rc.out), "ready"), time.Second))
	// The ready file comes before the command runs: wait for its trap.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", target))
		_, ign, _ := strings.Cut(string(b), "SigIgn:\t")
		if mask, err := strconv.ParseUint(strings.Fields(ign + " x")[0], 16, 64); err == nil && mask&0x4002 == 0x4002 {
			break // SIGINT (bit 1) and SIGTERM (bit 14)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command does not ignore SIGTERM and SIGINT:\n%s", b)
		}
	}
	rc.cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(repeatGrace + 200*time.Millisecond) // sooner is the same stop
	rc.cmd.Process.Signal(syscall.SIGINT)
	r := rc.wait(10 * time.Second)
	if r.code != 128+int(syscall.SIGINT) || !strings.Contains(r.stderr, "aborting") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(target, 0) != syscall.ESRCH {
		if time.Now().After(deadline) {
			t.Fatalf("the command %d is still running after the recorder aborted", target)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLifecycleTimeout: 'timeout N bpftape record' signals bpftape and then
// its process group, two signals microseconds apart: one stop, and a
// complete capture, with SIGINT and with timeout's SIGTERM. (Go may merge
// the two, so timeout alone does not always send both.)
func TestLifecycleTimeout(t *testing.T) {
	bin, _ := bpftapeBin(t)
	timeout, err := exec.LookPath("timeout")
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []string{"INT", "TERM"} {
		out := filepath.Join(t.TempDir(), "c.arrow")
		r := runBin(t, exec.Command(timeout, "--preserve-status", "-s", sig, "2", bin, "record", "-o", out, "t:syscalls:sys_enter_nanosleep"))
		if r.code != exitOK || strings.Contains(r.stderr, "aborting") {
			t.Errorf("timeout -s %s: exit %d, stderr:\n%s", sig, r.code, r.stderr)
		}
		if _, _, recovered := countEvents(t, out); recovered {
			t.Errorf("timeout -s %s: the capture has no footer", sig)
		}
	}
	// Two signals 20ms apart, as a script's kill twice: one stop.
	rc := startRecording(t, bin, "t:syscalls:sys_enter_nanosleep")
	rc.cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(20 * time.Millisecond)
	rc.cmd.Process.Signal(syscall.SIGINT)
	if r := rc.wait(10 * time.Second); r.code != exitOK || strings.Contains(r.stderr, "aborting") {
		t.Errorf("two SIGINTs 20ms apart: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if _, _, recovered := countEvents(t, rc.out); recovered {
		t.Error("two SIGINTs 20ms apart: the capture has no footer")
	}
}
