//go:build linux && amd64

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/humanfmt"
	"github.com/bpftape/bpftape/internal/testutil"
	"github.com/bpftape/bpftape/replay/replaytest"
)

// buildChain builds testdata/stacks/chain.c as the issue asks: -O0 with
// frame pointers (and without CET, so that every function starts with an
// emulated push %rbp).
func buildChain(t *testing.T, dir string) string {
	t.Helper()
	exe := filepath.Join(dir, "chain")
	src, err := filepath.Abs(filepath.Join("..", "..", "testdata", "stacks", "chain.c"))
	if err != nil {
		t.Fatal(err)
	}
	if err := testutil.CompileC(exe, "-O0", "-fno-omit-frame-pointer", "-fcf-protection=none", "-g", src); err != nil {
		t.Fatal(err)
	}
	return exe
}

// recordChain builds the chain workload in dir and records leaf's user
// stack on each of its n calls, into dir/leaf.arrow.
func recordChain(t *testing.T, dir string, n int) (exe, capPath string) {
	t.Helper()
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe = buildChain(t, dir)
	capPath = filepath.Join(dir, "leaf.arrow")
	stdout, stderr, code := runCLI(t, "record", "-o", capPath, "-c", fmt.Sprintf("%s %d", exe, n),
		fmt.Sprintf("leaf=u:%s:leaf(ustack)", exe))
	if code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, fmt.Sprintf("%s events", humanfmt.Commas(uint64(n)))) || !strings.Contains(stderr, " 0 lost") {
		t.Fatalf("record: want %d events, 0 lost:\n%s", n, stderr)
	}
	return exe, capPath
}

// TestStacksChain records leaf's user stack on every call of the chain
// workload and checks that `stacks` folds them into exactly
// "main;top;mid;leaf N", on this kernel, which adds the caller a uprobe on
// a function's first instruction misses (6.11), and with the recorder's
// own fix-up. Then the binary is deleted and the capture moved to another
// directory: the stacks still read the same, from the capture alone. (The
// report of such a capture in Chromium: TestStacksChainReport, built with
// -tags interop.)
func TestStacksChain(t *testing.T) {
	const n = 5000
	exe, capPath := recordChain(t, t.TempDir(), n)
	want := fmt.Sprintf("main;top;mid;leaf %d\n", n)
	check := func(what, path string) {
		t.Helper()
		out, errOut, code := runCLI(t, "stacks", path, "leaf")
		if code != 0 || out != want {
			t.Fatalf("%s: stacks: exit %d\n got %q\nwant %q\n%s", what, code, out, want, errOut)
		}
		if strings.Contains(errOut, "note:") {
			t.Errorf("%s: notes: %s", what, errOut)
		}
	}
	check("recorded", capPath)

	// The binary gone, the capture elsewhere: the same answer.
	if err := os.Remove(exe); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "copy.arrow")
	data, err := os.ReadFile(capPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(capPath); err != nil {
		t.Fatal(err)
	}
	check("binary deleted, capture copied", other)

	// stackcount's view, and offsets.
	out, _, code := runCLI(t, "stacks", "--text", other)
	if code != 0 || out != fmt.Sprintf("  leaf\n  mid\n  top\n  main\n    %d\n\n", n) {
		t.Errorf("stacks --text: exit %d\n%s", code, out)
	}
	out, _, code = runCLI(t, "stacks", "--offsets", "--by", "comm", other)
	if code != 0 || !strings.HasPrefix(out, "chain;main+0x") || !strings.Contains(out, ";leaf+0x0 ") {
		t.Errorf("stacks --offsets --by comm: exit %d\n%s", code, out)
	}
}

// TestStacksRecursion: a recursive function's entry stacks have one
// frame a call level (the caller the recorder gives back to an entry
// stack returns where the caller's caller does, which once made it look
// as if the kernel had put it there already: one level went missing).
func TestStacksRecursion(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	dir := t.TempDir()
	src, exe := filepath.Join(dir, "rec.c"), filepath.Join(dir, "rec")
	const code = `
volatile long s;
__attribute__((noinline)) int rec(int d) { s++; if (d <= 0) return 0; return rec(d - 1) + 1; }
int main(void) { for (int i = 0; i < 100; i++) rec(3); return 0; }
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cf := range []string{"-fcf-protection=none", "-fcf-protection=full"} { // push %rbp or endbr64 first
		if err := testutil.CompileC(exe, "-O1", "-fno-omit-frame-pointer", cf, "-g", src); err != nil {
			t.Fatal(err)
		}
		capPath := filepath.Join(dir, "rec"+cf+".arrow")
		if out, errOut, code := runCLI(t, "record", "-o", capPath, "-c", exe, fmt.Sprintf("u:%s:rec(d,ustack)", exe)); code != 0 {
			t.Fatalf("%s: record: exit %d\n%s%s", cf, code, out, errOut)
		}
		out, errOut, code := runCLI(t, "stacks", capPath)
		if code != 0 {
			t.Fatalf("%s: stacks: exit %d\n%s", cf, code, errOut)
		}
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			stack, n, _ := strings.Cut(line, " ")
			if i := strings.Index(";"+stack, ";main;"); i >= 0 {
				stack = stack[i:]
			}
			got[stack] = n
		}
		want := map[string]string{"main;rec": "100", "main;rec;rec": "100", "main;rec;rec;rec": "100", "main;rec;rec;rec;rec": "100"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: stacks:\n%s\nwant 100 at each depth, 1 to 4", cf, out)
		}
	}
}

// TestStacksErrors: clear one-line usage errors, exit 2.
func TestStacksErrors(t *testing.T) {
	up := filepath.Join(seedCaptures(t), replaytest.UprobesFile)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"stacks"}, "want FILE [PROBE]"},
		{[]string{"stacks", up}, "has no stacks"},
		{[]string{"stacks", "--user", "--kernel", up}, "exclude each other"},
	} {
		_, stderr, code := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestProfile samples a CPU-bound workload at 199 Hz: most samples fall in
// its hot function.
func TestProfile(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	dir := t.TempDir()
	src := filepath.Join(dir, "spin.c")
	if err := os.WriteFile(src, []byte(`#include <time.h>
volatile unsigned long sink;
__attribute__((noinline)) void hot(void) { for (int i = 0; i < 1000; i++) sink += i; }
__attribute__((noinline)) void cold(void) { sink++; }
int main(void) {
	struct timespec s, n;
	clock_gettime(CLOCK_MONOTONIC, &s);
	do { hot(); cold(); clock_gettime(CLOCK_MONOTONIC, &n); } while ((n.tv_sec - s.tv_sec) * 1000000000L + (n.tv_nsec - s.tv_nsec) < 2000000000L);
	return 0;
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "spin")
	if err := testutil.CompileC(exe, "-O1", "-fno-omit-frame-pointer", src); err != nil {
		t.Fatal(err)
	}
	capPath := filepath.Join(dir, "prof.arrow")
	start := time.Now()
	if _, stderr, code := runCLI(t, "record", "-o", capPath, "-c", exe, "profile:hz:199"); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	elapsed := time.Since(start)
	out, stderr, code := runCLI(t, "stacks", "--user", capPath)
	if code != 0 {
		t.Fatalf("stacks: exit %d\n%s", code, stderr)
	}
	var total, hot uint64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		i := strings.LastIndexByte(line, ' ')
		var v uint64
		fmt.Sscan(line[i+1:], &v)
		total += v
		if strings.HasSuffix(line[:i], ";hot") {
			hot += v
		}
	}
	// 2 s of one busy thread at 199 Hz: about 400 samples.
	if total < 200 || hot*10 < total*8 {
		t.Errorf("%d samples in %v, %d in hot: want most in hot\n%s", total, elapsed, hot, out)
	}
	if !strings.Contains(out, "main;hot ") {
		t.Errorf("no main;hot stack:\n%s", out)
	}
	// As a pprof CPU profile: the same stacks, each sample one period of
	// CPU time (go tool pprof reads it).
	prof := filepath.Join(dir, "prof.pb.gz")
	if _, stderr, code := runCLI(t, "export", capPath, "--user", "-o", prof); code != 0 {
		t.Fatalf("export -f pprof: exit %d\n%s", code, stderr)
	}
	raw := samePprofStacks(t, prof, 0, out)
	if strings.Join(raw.types, " ") != "samples/count cpu/nanoseconds" {
		t.Errorf("sample types %v, want samples/count cpu/nanoseconds", raw.types)
	}
	for line, v := range raw.stacks {
		if period := int64(1_000_000_000 / 199); v[1] != v[0]*period {
			t.Errorf("%s: %d samples, %d ns of CPU, want %d ns each", line, v[0], v[1], period)
		}
	}
}

// TestOffCPU records sched_switch system-wide while a workload sleeps 20
// times 50 ms, and checks that its off-CPU time in nanosleep sums to
// within 5% of the second it slept, and that a flame graph of it renders.
//
// The workload then blocks on its stdin until the recording has ended, so
// that the recorder reads its mappings while it exists however late the
// recorder runs. A system-wide recording on a loaded host (go test runs
// packages in parallel on 2 CPUs) may lose events, counted and reported; a
// lost switch loses its nap's time, so a recording that lost any is taken
// again, up to 3 times.
func TestOffCPU(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	dir := t.TempDir()
	src := filepath.Join(dir, "sleeper.c")
	if err := os.WriteFile(src, []byte(`#include <stdio.h>
#include <time.h>
#include <unistd.h>
__attribute__((noinline)) void nap(long ms) { struct timespec ts = {0, ms * 1000000L}; nanosleep(&ts, 0); }
__attribute__((noinline)) void waiter(int n, long ms) { for (int i = 0; i < n; i++) nap(ms); }
int main(void) {
	struct timespec a, b;
	char c;
	clock_gettime(CLOCK_MONOTONIC, &a);
	waiter(20, 50);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%lld\n", (b.tv_sec - a.tv_sec) * 1000000000LL + b.tv_nsec - a.tv_nsec);
	fflush(stdout);
	return read(0, &c, 1) < 0;
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "sleeper")
	if err := testutil.CompileC(exe, "-O1", "-fno-omit-frame-pointer", src); err != nil {
		t.Fatal(err)
	}
	capPath := filepath.Join(dir, "sw.arrow")
	var recStderr string
	var elapsed time.Duration // the workload's own count of its naps' wall time
	for attempt := 1; ; attempt++ {
		os.Remove(capPath)
		recStderr, elapsed = recordSleeper(t, exe, capPath, filepath.Join(dir, fmt.Sprintf("ready%d", attempt)))
		if _, lost, _ := countEvents(t, capPath); lost == 0 {
			break
		}
		t.Logf("attempt %d lost events:\n%s", attempt, recStderr)
		if attempt == 3 {
			t.Fatalf("every recording lost events")
		}
	}
	out, stderr, code := runCLI(t, "stacks", "--offcpu", "--comm", "sleeper", capPath)
	if code != 0 {
		t.Fatalf("stacks --offcpu: exit %d\n%s", code, stderr)
	}
	var slept uint64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		i := strings.LastIndexByte(line, ' ')
		if strings.Contains(line, ";waiter;") && strings.Contains(line, "nanosleep") {
			var v uint64
			fmt.Sscan(line[i+1:], &v)
			slept += v
		}
	}
	// At least the sleep asked for, at most the naps' wall time (a loaded
	// host adds the wait for a CPU after each wake-up, as offcputime counts).
	// A nap whose switch-in the capture lacks is left out, and noted: on the
	// development VM no tracepoint fires for the threads of its pid 1 (perf
	// and bpftrace see none either), so a nap that ends with one of them
	// handing the CPU to the sleeper has no switch-in. The capture lost no
	// event, so a missing one is such a switch, once in 20 runs or so.
	missing := 0
	if m := regexp.MustCompile(`note: (\d+) of the picked threads' switch-outs followed another`).FindStringSubmatch(stderr); m != nil {
		missing, _ = strconv.Atoi(m[1])
	}
	if missing > 2 {
		t.Errorf("%d of the sleeper's naps have no switch-in, want at most 2:\n%s", missing, stderr)
	}
	want := time.Duration(20-missing) * 50 * time.Millisecond
	if d := time.Duration(slept); d < want || d > elapsed {
		t.Errorf("off-CPU time in nanosleep %v, want %v to %v (the naps' wall time)\n%s\nstacks: %s\nrecord: %s", d, want, elapsed, out, stderr, recStderr)
	}
	t.Logf("off-CPU time in nanosleep: %v for %v of sleep in %v (naps without a switch-in: %d)", time.Duration(slept), want, elapsed, missing)
	if strings.Contains(stderr, "too low") {
		t.Errorf("a system-wide capture warned: %s", stderr)
	}
	// As a pprof profile of off-CPU time: the same stacks and nanoseconds.
	prof := filepath.Join(dir, "offcpu.pb.gz")
	if _, stderr, code := runCLI(t, "export", capPath, "--offcpu", "--comm", "sleeper", "-o", prof); code != 0 {
		t.Fatalf("export -f pprof --offcpu: exit %d\n%s", code, stderr)
	}
	if raw := samePprofStacks(t, prof, 1, out); strings.Join(raw.types, " ") != "switches/count off-cpu/nanoseconds" {
		t.Errorf("sample types %v, want switches/count off-cpu/nanoseconds", raw.types)
	}
	// With -c the programs keep the command's events only, and most of its
	// switch-ins are another task's: the times are too low, and it says so.
	only := filepath.Join(dir, "only.arrow")
	if _, stderr, code := runCLI(t, "record", "-o", only, "-c", "sh -c '"+exe+" </dev/null'",
		"t:sched:sched_switch(prev_pid,next_pid,kstack,ustack)"); code != 0 {
		t.Fatalf("record -c: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := runCLI(t, "stacks", "--offcpu", "--comm", "sleeper", only); code != 0 || !strings.Contains(stderr, "off-CPU times are too low: the capture kept only the sched_switch events of the -c command's processes") {
		t.Errorf("stacks --offcpu of a -c capture: exit %d, no warning:\n%s", code, stderr)
	}
	svg := filepath.Join(dir, "offcpu.svg")
	if _, stderr, code := runCLI(t, "flamegraph", "--offcpu", "--comm", "sleeper", capPath, "-o", svg); code != 0 {
		t.Fatalf("flamegraph: exit %d\n%s", code, stderr)
	}
	data, err := os.ReadFile(svg)
	if err != nil || !strings.Contains(string(data), "waiter") || !strings.Contains(string(data), "Off-CPU") {
		t.Errorf("flame graph: %v, %d bytes without waiter or its title", err, len(data))
	}
}

// recordSleeper records sched_switch system-wide with stacks while exe
// runs its naps, and returns the recorder's stderr and the naps' wall time
// that exe prints. exe's stdin is closed once the recording has ended.
func recordSleeper(t *testing.T, exe, capPath, ready string) (string, time.Duration) {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		_, stderr, code := runCLI(t, "record", "-o", capPath, "-d", "5s", "--ready-file", ready,
			"t:sched:sched_switch(prev_pid,next_pid,prev_state,kstack,ustack)")
		if code != 0 {
			stderr = fmt.Sprintf("exit %d: %s", code, stderr)
		}
		done <- stderr
	}()
	waitFile(t, ready, 30*time.Second)
	cmd := exec.Command(exe)
	hold, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stderr := <-done
	hold.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("sleeper: %v %s", err, out.String())
	}
	if strings.HasPrefix(stderr, "exit ") {
		t.Fatalf("record: %s", stderr)
	}
	var ns int64
	if _, err := fmt.Sscan(out.String(), &ns); err != nil || ns <= 0 {
		t.Fatalf("sleeper printed %q: %v", out.String(), err)
	}
	return stderr, time.Duration(ns)
}

// TestSeed002Stacks runs seed 002's stack examples on this host as the
// README shows them (testdata/seed002/stacks.sh): profile -F 49 of the
// chain workload, stackcount t:block:block_rq_insert under a dd with
// O_DIRECT, and stackcount submit_bio, which this kernel (no kprobes)
// must refuse saying why while the others run.
func TestSeed002Stacks(t *testing.T) {
	bin, _ := bpftapeBin(t)
	dir := t.TempDir()
	script, err := filepath.Abs(filepath.Join("..", "..", "testdata", "seed002", "stacks.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", script, dir)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
	r := runBin(t, cmd)
	if r.code != 0 {
		t.Fatalf("stacks.sh: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	section := func(title string) string {
		_, after, ok := strings.Cut(r.stdout, "## "+title+"\n")
		if !ok {
			t.Fatalf("no section %q in\n%s", title, r.stdout)
		}
		before, _, _ := strings.Cut(after, "\n## ")
		return before
	}
	prof := section("profile -F 49")
	if !strings.Contains(prof, "\nmain;top") {
		t.Errorf("profile: no main;top stack:\n%s", prof)
	}
	if _, err := os.Stat(filepath.Join(dir, "prof.svg")); err != nil {
		t.Errorf("flame graph: %v", err)
	}
	rq := section("stackcount t:block:block_rq_insert")
	if !strings.Contains(rq, "\n  do_syscall_64\n") || !strings.Contains(rq, "\n  blk_") {
		t.Errorf("block_rq_insert: no block layer stack from a system call:\n%s", rq)
	}
	bio := section("stackcount submit_bio")
	// This host has no kprobes: the example says so; a kernel with them
	// shows submit_bio's stacks.
	if !strings.Contains(bio, "(not on this kernel:") && !strings.Contains(bio, "\n  submit_bio\n") {
		t.Errorf("submit_bio: neither stacks nor why not:\n%s", bio)
	}
	t.Logf("submit_bio: %s", strings.TrimSpace(bio))
}

// TestTracepointKernelStacks: the kernel stack of a syscall tracepoint
// holds the syscall entry, on every event.
func TestTracepointKernelStacks(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	capPath := filepath.Join(t.TempDir(), "open.arrow")
	if _, stderr, code := runCLI(t, "record", "-o", capPath, "-c", "ls /", "t:syscalls:sys_enter_openat(kstack)"); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	out, stderr, code := runCLI(t, "stacks", "--comm", "ls", capPath)
	if code != 0 || out == "" {
		t.Fatalf("stacks: exit %d\n%s", code, stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.Contains(line, "do_syscall_64") {
			t.Errorf("a stack without the syscall entry: %s", line)
		}
	}
}
