//go:build linux && amd64

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/testutil"
	"github.com/bpftape/bpftape/replay/symbolize"
)

// quietStdout sends this process's stdout, which a -c command inherits,
// to /dev/null until the test ends: the chain prints its ground truth at
// every run.
func quietStdout(t *testing.T) {
	t.Helper()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = null
	t.Cleanup(func() {
		os.Stdout = saved
		null.Close()
	})
}

// TestStacksShortLived records commands that exit within a millisecond
// of their only event: the chain workload run with one call of leaf, 100
// times under -c (the gate execs it), then 100 times one after another
// from a shell under one -c (each followed, forked and exec'd by the
// shell). Every leaf event's user stack must fold into main;top;mid;leaf,
// with no note (no "exited before its mappings were read"): the recorder
// has their mappings from the kernel's side-band records. Before them,
// this test resolved 53 of 100 single runs and about 16 of the 100 shell
// runs on the 6.18 build machine (by hand: 2 of 10, and 8 to 32 of 100).
func TestStacksShortLived(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	dir := t.TempDir()
	exe := buildChain(t, dir)
	probe := fmt.Sprintf("leaf=u:%s:leaf(ustack)", exe)
	runs := 100
	if testing.Short() {
		runs = 10
	}
	quietStdout(t)
	capPath := filepath.Join(dir, "short.arrow")
	check := func(what string, n int) bool {
		t.Helper()
		out, errOut, code := runCLI(t, "stacks", capPath, "leaf")
		if want := fmt.Sprintf("main;top;mid;leaf %d\n", n); code != 0 || out != want || strings.Contains(errOut, "note:") {
			t.Errorf("%s: stacks: exit %d\n got %q\nwant %q\n%s", what, code, out, want, errOut)
			return false
		}
		return true
	}
	resolved := 0
	for run := range runs {
		_, stderr, code := runCLI(t, "record", "-o", capPath, "--force", "-c", exe+" 1", probe)
		if code != 0 {
			t.Fatalf("run %d: record: exit %d\n%s", run, code, stderr)
		}
		if check(fmt.Sprintf("run %d", run), 1) {
			resolved++
		} else if strings.Contains(stderr, "warning") {
			t.Logf("run %d: record:\n%s", run, stderr)
		}
	}
	t.Logf("%d of %d single runs resolved", resolved, runs)

	loop := fmt.Sprintf("sh -c 'i=0; while [ $i -lt %d ]; do %s 1; i=$((i + 1)); done'", runs, exe)
	_, stderr, code := runCLI(t, "record", "-o", capPath, "--force", "-c", loop, probe)
	if code != 0 || !strings.Contains(stderr, fmt.Sprintf(" %d ", runs)) {
		t.Fatalf("record of %d runs from a shell: exit %d\n%s", runs, code, stderr)
	}
	check(fmt.Sprintf("%d runs from a shell", runs), runs)
}

// TestProfileExec samples the CPU-bound chain under -c, built without PIE
// so that it runs at the addresses of the gate's own code (this non-PIE
// Go test binary, which the gate re-executes and which then execs the
// chain), 10 times: every sample of the chain's process after its exec
// (t:sched:sched_process_exec, in the same capture) resolves in the chain
// or its loader and libc (whose frames, without frame pointers, may end in
// garbage), none in the gate's code, and most fall under main.
func TestProfileExec(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	dir := t.TempDir()
	exe := filepath.Join(dir, "chain")
	src, err := filepath.Abs(filepath.Join("..", "..", "testdata", "stacks", "chain.c"))
	if err != nil {
		t.Fatal(err)
	}
	if err := testutil.CompileC(exe, "-O0", "-fno-omit-frame-pointer", "-fcf-protection=none", "-no-pie", "-fno-pie", "-g", src); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	quietStdout(t)
	const runs = 10
	capPath := filepath.Join(dir, "prof.arrow")
	for run := range runs {
		_, stderr, code := runCLI(t, "record", "-o", capPath, "--force", "-c", exe+" 100000000",
			"profile:hz:499", "exec=t:sched:sched_process_exec")
		if code != 0 {
			t.Fatalf("run %d: record: exit %d\n%s", run, code, stderr)
		}
		samples, inMain, bad := profileAfterExec(t, capPath, exe, self)
		t.Logf("run %d: %d samples after the exec, %d under main", run, samples, inMain)
		if len(bad) > 0 {
			t.Errorf("run %d: %d of %d samples after the exec do not resolve in the chain:\n%s\nrecord:\n%s",
				run, len(bad), samples, strings.Join(bad[:min(len(bad), 5)], "\n"), stderr)
		}
		// 0.2 s of one busy thread at 499 Hz: some 100 samples.
		if samples < 20 || inMain*10 < samples*8 {
			t.Errorf("run %d: %d samples after the exec, %d under main: want most under main", run, samples, inMain)
		}
	}
}

// profileAfterExec reads a capture of profile and exec probes of the
// command exe and returns how many profile samples of its process came
// after its exec, how many of those have main in their user stack, and
// the ones whose innermost frame no mapping covers, or with a frame in
// self (the gate's binary), folded with their objects.
func profileAfterExec(t *testing.T, capPath, exe, self string) (samples, inMain int, bad []string) {
	t.Helper()
	r, err := format.Open(capPath)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pid, err := strconv.ParseUint(r.Meta.Extra["pid"], 10, 32)
	if err != nil {
		t.Fatalf("capture's pid %q: %v", r.Meta.Extra["pid"], err)
	}
	profile, _ := r.Meta.Probe("profile")
	execID, _ := r.Meta.Probe("exec")
	prof := &r.Meta.Probes[profile]
	ustack := r.Column(prof.Fields[prof.Field("ustack")].Column)
	type sample struct {
		t  int64
		id uint64
	}
	var all []sample
	var execT int64
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len; i++ {
			if _, lost := b.Lost(i); lost || b.PID[i] != uint32(pid) {
				continue
			}
			switch int(b.Probe[i]) {
			case execID:
				execT = b.Time[i]
			case profile:
				all = append(all, sample{b.Time[i], uint64(b.Col(ustack).Int(i))})
			}
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if execT == 0 {
		t.Fatalf("no exec event of process %d", pid)
	}
	tb, err := r.StackTable()
	if err != nil {
		t.Fatal(err)
	}
	sym := symbolize.New(tb)
	for _, s := range all {
		if s.t <= execT {
			continue
		}
		samples++
		frames, ok := sym.Frames(uint32(pid), s.t, s.id)
		if !ok || len(frames) == 0 {
			continue // no user stack (a sample in the kernel at the exec)
		}
		var names []string
		wrong := false
		// The innermost frame must be in a mapping of the process (in
		// the loader, it may be code no symbol covers); the outer ones
		// of code built without frame pointers (the loader's, libc's)
		// may be garbage. None may be in the gate's binary.
		wrong = frames[0].Object == ""
		for _, f := range slices.Backward(frames) {
			names = append(names, f.Name)
			wrong = wrong || f.Object == self
			if f.Name == "main" && f.Object == exe {
				inMain++
			}
		}
		if wrong {
			objs := []string{}
			for _, f := range frames {
				objs = append(objs, f.Object)
			}
			bad = append(bad, strings.Join(names, ";")+" in "+strings.Join(objs, ","))
		}
	}
	return samples, inMain, bad
}
