package record

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/testutil"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/record/usdt"
)

// TestSameSiteTwice records several probes, each with fields of its own, on
// one tracepoint, one uprobe address, one function's return and one USDT
// site. Two probes on one tracepoint failed with "cannot create bpf perf
// link: file exists": the kernel runs a program at most once per
// tracepoint.
func TestSameSiteTwice(t *testing.T) { testSameSiteTwice(t, false) }

// testSameSiteTwice is TestSameSiteTwice, with Options.NoCookies set to
// noCookies.
func testSameSiteTwice(t *testing.T, noCookies bool) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe := buildProbes(t)
	const n = 300
	cases := []struct {
		mode   string
		probes []string
		names  []string
	}{
		{"writes", []string{"t:syscalls:sys_enter_write", "w2=t:syscalls:sys_enter_write(count)", "w3=t:syscalls:sys_enter_write(fd)"},
			[]string{"sys_enter_write", "w2", "w3"}},
		{"burst", []string{"a=u:" + exe + ":tick(arg0)", "b=u:" + exe + ":tick(arg0:u8)", "c=ur:" + exe + ":tick", "d=ur:" + exe + ":tick(retval:u16)"},
			[]string{"a", "b", "c", "d"}},
		{"sizes", []string{"s1=U:" + exe + ":test:sizes(arg0)", "s2=U:" + exe + ":test:sizes(arg7)"}, []string{"s1", "s2"}},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			s, _ := mustRecord(t, Options{Command: []string{exe, tc.mode, fmt.Sprint(n)}, Probes: tc.probes, NoCookies: noCookies})
			if s.ExitCode != 0 {
				t.Fatalf("workload exit %d", s.ExitCode)
			}
			checkAttachMode(t, readCapture(t, s.Output), noCookies)
			for i, name := range tc.names {
				if got := s.Probes[i].Events; got != n {
					t.Errorf("%s (%s): %d events, want %d", name, tc.probes[i], got, n)
				}
			}
		})
	}
}

// TestFollowCommand records a -c command that runs the workload twice
// through a shell: the events are the workload's, not the shell's, and a
// copy of the workload that the command did not start is not recorded.
// Before, -c recorded the shell's process only: 0 events.
func TestFollowCommand(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe := buildProbes(t)
	other := exec.Command(exe, "spin", "30") // calls tick all along, untraced
	other.Stdout = io.Discard
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()

	script := fmt.Sprintf("%s burst 100 && %s burst 200 && (%s burst 300)", exe, exe, exe)
	s, _ := mustRecord(t, Options{Command: []string{"sh", "-c", script}, Probes: []string{"u:" + exe + ":tick(arg0)"}})
	if s.ExitCode != 0 {
		t.Fatalf("exit %d", s.ExitCode)
	}
	c := readCapture(t, s.Output)
	pids := map[uint32]int{}
	for _, r := range c.rows["tick"] {
		pids[r.pid]++
	}
	if len(c.rows["tick"]) != 600 || len(pids) != 3 {
		t.Errorf("%d events from processes %v, want 600 from 3", len(c.rows["tick"]), pids)
	}
	if pids[uint32(other.Process.Pid)] > 0 || pids[uint32(s.TargetPID)] > 0 {
		t.Errorf("events of the shell %d or of the untraced copy %d: %v", s.TargetPID, other.Process.Pid, pids)
	}
	if s.Followed < 4 {
		t.Errorf("followed %d processes, want the shell, its subshell and 3 workloads", s.Followed)
	}

	// --follow=false: the shell's process only, whose uprobes the kernel
	// filters; the workloads it starts are not recorded.
	s, _ = mustRecord(t, Options{Command: []string{"sh", "-c", script}, NoFollow: true, Probes: []string{"u:" + exe + ":tick(arg0)"}})
	if s.Events != 0 || s.Followed != 0 {
		t.Errorf("--follow=false: %d events, %d processes followed", s.Events, s.Followed)
	}
}

// TestFollowPID records a running shell with -p, which starts workloads
// while each recording runs: without --follow they are not recorded; with
// --follow they are, until the shell exits.
func TestFollowPID(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe := buildProbes(t)
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	sh := exec.Command("sh", "-c", fmt.Sprintf("read x; %[1]s burst 100; %[1]s burst 200; : >%[2]s; read y; %[1]s burst 100; %[1]s burst 200", exe, started))
	sh.Stdout = io.Discard
	in, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sh.Process.Kill(); sh.Wait() }() // a failed recording leaves it reading

	// Without --follow, -p records the shell only: the 300 ticks of the
	// workloads it starts once the probes are attached are not recorded.
	// The recording ends when they have run.
	ready := filepath.Join(dir, "ready-nofollow")
	whenReady(ready, 0, func() { io.WriteString(in, "go\n") })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	whenReady(started, 0, cancel)
	var log bytes.Buffer
	s, err := Record(ctx, Options{Output: filepath.Join(dir, "nofollow.arrow"), Log: &log, PID: sh.Process.Pid, ReadyFile: ready,
		Probes: []string{"u:" + exe + ":tick(arg0)"}})
	if log.Len() > 0 {
		t.Logf("log:\n%s", log.String())
	}
	if err != nil {
		t.Fatalf("-p without --follow: %v", err)
	}
	t.Logf("-p without --follow: stopped %q with %d events, %d followed", s.Stopped, s.Events, s.Followed)
	if _, err := os.Stat(started); err != nil {
		t.Fatalf("-p without --follow stopped (%s) before the shell ran its workloads", s.Stopped)
	}
	if s.Events != 0 || s.Followed != 0 {
		t.Errorf("-p without --follow: %d events, %d followed, want the workloads' 300 ticks not recorded", s.Events, s.Followed)
	}

	// With --follow, the workloads the shell starts next are recorded.
	ready = filepath.Join(dir, "ready-follow")
	whenReady(ready, 0, func() { io.WriteString(in, "go\n") })
	s, _ = mustRecord(t, Options{PID: sh.Process.Pid, Follow: true, ReadyFile: ready, Probes: []string{"u:" + exe + ":tick(arg0)"}})
	if s.Stopped != "process exited" || s.Events != 300 {
		t.Errorf("--follow: stopped %q with %d events, want process exited with 300", s.Stopped, s.Events)
	}
	if _, err := Record(context.Background(), Options{Output: filepath.Join(t.TempDir(), "x.arrow"), Follow: true,
		Probes: []string{"u:" + exe + ":tick"}}); !usage.Is(err) {
		t.Errorf("--follow without -p: %v, want a usage error", err)
	}
}

// TestAbortKillsCommand stops a recording whose -c command ignores SIGTERM,
// then aborts it as a second Ctrl-C does: the command is killed at once,
// not left running when bpftape exits.
func TestAbortKillsCommand(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	abort, killed := make(chan struct{}), make(chan struct{})
	whenReady(ready, 200*time.Millisecond, cancel)                  // the first Ctrl-C
	whenReady(ready, 700*time.Millisecond, func() { close(abort) }) // the second
	start := time.Now()
	s, err := Record(ctx, Options{Output: filepath.Join(dir, "c.arrow"), ReadyFile: ready, KillGrace: time.Minute,
		Command: []string{"sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"},
		Probes:  []string{"t:syscalls:sys_enter_nanosleep"}, Abort: abort, Killed: killed})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-killed:
	default:
		t.Error("Killed not closed")
	}
	if s.ExitCode != 128+9 || time.Since(start) > 30*time.Second {
		t.Errorf("exit %d after %v: want SIGKILL at once, not after the 1m grace", s.ExitCode, time.Since(start))
	}
	if unix.Kill(s.TargetPID, 0) != unix.ESRCH {
		t.Errorf("command %d still exists", s.TargetPID)
	}
}

// TestUprobeConflict registers a uprobe the way Debian's python3-bpfcc
// does (with a ref_ctr_offset), then records a uprobe at the same address:
// the kernel refuses it with EINVAL, and the error says that another tracer
// holds the address, not just "invalid argument".
func TestUprobeConflict(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe := buildProbes(t)
	probes, err := usdt.Read(exe)
	if err != nil {
		t.Fatal(err)
	}
	var sema uint64
	for _, p := range probes {
		if p.Semaphore != 0 {
			sema = p.Semaphore
		}
	}
	if sema == 0 {
		t.Fatal("no USDT semaphore in the workload")
	}
	objs, err := bpf.Load(bpf.Options{RingSize: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	defer objs.Close()
	ex, err := link.OpenExecutable(exe)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ex.Uprobe("tick", objs.ProbeUprobe, &link.UprobeOptions{RefCtrOffset: sema})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	_, err, _ = record(t, Options{Command: []string{exe, "burst", "10"}, Probes: []string{"u:" + exe + ":tick"}})
	if !errors.Is(err, ErrUprobeConflict) || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("err = %v, want ErrUprobeConflict wrapping EINVAL", err)
	}
	t.Logf("error: %v", err)
}
