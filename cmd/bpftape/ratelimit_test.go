//go:build linux && (amd64 || arm64)

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/testutil"
)

// TestMaxRateFlags: a --max-rate that is not N/s or PROBE=N/s, a rate not
// above 0, a second rate for every probe, and a PROBE no probe is are
// one-line usage errors (exit 2), before anything is attached.
func TestMaxRateFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "c.arrow")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-rate", "100"}, `--max-rate "100": want N/s or PROBE=N/s`},
		{[]string{"--max-rate", "fast/s"}, `--max-rate "fast/s": want N/s or PROBE=N/s`},
		{[]string{"--max-rate", "0x10/s"}, `--max-rate "0x10/s": want N/s or PROBE=N/s`},
		{[]string{"--max-rate", "0/s"}, `want a rate above 0`},
		{[]string{"--max-rate", "-5/s"}, `want a rate above 0`},
		{[]string{"--max-rate", "2G/s"}, `want N/s or PROBE=N/s`},
		{[]string{"--max-rate", "=5/s"}, `no PROBE before the =`},
		{[]string{"--max-rate", "5/s", "--max-rate", "6/s"}, `a rate for every probe was given already (5/s)`},
		{[]string{"--max-rate", "nope=5/s"}, `no probe is named "nope", nor typed so (the probes: sched_switch)`},
	} {
		args := append(append([]string{"record", "-o", out, "-d", "1s"}, c.args...), "t:sched:sched_switch(prev_pid)")
		_, stderr, code := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line with %q", c.args, code, stderr, exitUsage, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: left %s behind", c.args, out)
		}
	}
	for _, c := range []struct {
		in   string
		want float64
	}{{"1000/s", 1000}, {"2.5/s", 2.5}, {"10k/s", 10000}, {"1M/s", 1e6}} {
		if got, err := parseRate(c.in); err != nil || got != c.want {
			t.Errorf("parseRate(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

// TestMaxRate records a workload that calls tick 2,000 times a second
// for 2 s (it writes how many calls it made) with two probes on tick, one
// limited to 200 events a second: that one recorded about 200 a second
// (the first tenth of a second's worth comes at once), its recorded and
// rate-limited events add up to the calls exactly, the other recorded
// every call, and info, the summary and an analysis say it is a subset.
func TestMaxRate(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	dir := t.TempDir()
	exe := buildTicker(t, dir)
	capPath := filepath.Join(dir, "rate.arrow")
	const limit = 200
	truth := filepath.Join(dir, "calls")
	_, stderr, code := runCLI(t, "record", "-o", capPath, "--max-rate", fmt.Sprintf("limited=%d/s", limit),
		"-c", exe+" 2000 2 "+truth, "limited=u:"+exe+":tick(arg0)", "all=u:"+exe+":tick(arg0)")
	if code != 0 {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	var calls int64
	var secs float64
	if data, err := os.ReadFile(truth); err != nil {
		t.Fatal(err)
	} else if _, err := fmt.Sscanf(string(data), "calls %d seconds %g", &calls, &secs); err != nil {
		t.Fatalf("workload wrote %q: %v", data, err)
	}
	r, err := format.Open(capPath)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	var lost uint64
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len; i++ {
			if n, ok := b.Lost(i); ok {
				lost += n
				continue
			}
			counts[r.Meta.Probes[b.Probe[i]].Name]++
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	m := r.Meta
	r.Close()
	_, p := m.Probe("limited")
	_, all := m.Probe("all")
	t.Logf("%d calls in %.3fs; limited recorded %d, rate-limited %d; all recorded %d; lost %d", calls, secs, counts["limited"], p.RateLimited, counts["all"], lost)
	if lost != 0 {
		t.Fatalf("%d events lost", lost)
	}
	if counts["limited"]+int64(p.RateLimited) != calls || counts["all"] != calls || all.RateLimited != 0 || all.MaxRate != 0 {
		t.Errorf("%d calls: limited recorded %d + %d rate-limited, all recorded %d (%d rate-limited, max rate %v); want the calls exactly",
			calls, counts["limited"], p.RateLimited, counts["all"], all.RateLimited, all.MaxRate)
	}
	// A tenth of a second's worth at the start (the first tokens), then
	// the rate; the refills, on a loaded host, may come late (fewer).
	want := float64(limit) * secs
	if got := float64(counts["limited"]); p.MaxRate != limit || got < 0.85*want || got > want+limit/10+5 {
		t.Errorf("limited recorded %v events in %.3fs at most %v/s (max rate %v), want %.0f (-15%%, +%d)", got, secs, limit, p.MaxRate, want, limit/10+5)
	}
	if !strings.Contains(stderr, fmt.Sprintf("limited kept at most %d events/s (--max-rate): %s more were rate-limited in the kernel", limit, commaInt(p.RateLimited))) {
		t.Errorf("the summary lacks the rate limit:\n%s", stderr)
	}
	info, _, code := runCLI(t, "info", capPath)
	if code != 0 {
		t.Fatalf("info: exit %d", code)
	}
	for _, re := range []string{
		`(?m)^rate-limited: +a subset: 1 of 2 probes recorded at most their --max-rate events a second`,
		fmt.Sprintf(`rate   at most %d events/s \(--max-rate\): %d more events were rate-limited in the kernel`, limit, p.RateLimited),
	} {
		if !regexp.MustCompile(re).MatchString(info) {
			t.Errorf("info lacks %s:\n%s", re, info)
		}
	}
	if _, stderr, code := runCLI(t, "count", capPath); code != 0 ||
		!strings.Contains(stderr, fmt.Sprintf("%d events rate-limited in the kernel (--max-rate: limited %d (at most %d/s))", p.RateLimited, p.RateLimited, limit)) {
		t.Errorf("count: exit %d, no rate-limit warning:\n%s", code, stderr)
	}
}

// buildTicker builds, in dir, a workload that calls tick(i) ARG1 times a
// second for ARG2 seconds, sleeping a millisecond between rounds, and
// writes "calls N seconds S sum X" to the file ARG3.
func buildTicker(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(dir, "ticker.c")
	if err := os.WriteFile(src, []byte(`#include <stdio.h>
#include <stdlib.h>
#include <time.h>
__attribute__((noinline)) long tick(long i) { __asm__ volatile("" ::: "memory"); return i; }
static double since(const struct timespec *t0) {
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t0->tv_sec) + (now.tv_nsec - t0->tv_nsec) / 1e9;
}
int main(int argc, char **argv) {
	long rate = atol(argv[1]), n = 0, sum = 0;
	double secs = atof(argv[2]), el;
	struct timespec t0, ms = {0, 1000000};
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((el = since(&t0)) < secs) {
		for (long due = (long)(el * rate); n < due; n++)
			sum += tick(n);
		nanosleep(&ms, 0);
	}
	FILE *f = fopen(argv[3], "w");
	fprintf(f, "calls %ld seconds %.6f sum %ld\n", n, since(&t0), sum);
	return fclose(f) != 0;
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "ticker")
	if err := testutil.CompileC(exe, "-O1", src); err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestMaxRateTracepoint records the ticker's sleeps with two probes on
// one tracepoint, one limited to 50 events a second: a rate-limited
// tracepoint gets a program of its own (bpf.RateLimitedCopies), the other
// shares the tracepoint's cookie program. The limited probe's recorded and
// rate-limited events add up to what the other recorded.
func TestMaxRateTracepoint(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	dir := t.TempDir()
	exe := buildTicker(t, dir)
	capPath := filepath.Join(dir, "tp.arrow")
	const tp = "t:syscalls:sys_enter_clock_nanosleep"
	_, stderr, code := runCLI(t, "record", "-o", capPath, "--max-rate", "limited=50/s",
		"-c", exe+" 100 1 "+filepath.Join(dir, "calls"), "limited="+tp, "all="+tp)
	if code != 0 {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	r, err := format.Open(capPath)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	counts := map[string]uint64{}
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len; i++ {
			if n, ok := b.Lost(i); ok {
				t.Fatalf("%d events lost", n)
			}
			counts[r.Meta.Probes[b.Probe[i]].Name]++
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	_, p := r.Meta.Probe("limited")
	t.Logf("all recorded %d sleeps; limited %d, rate-limited %d", counts["all"], counts["limited"], p.RateLimited)
	// A round sleeps a millisecond or more: at most 1,000 in the second.
	if counts["all"] < 100 || counts["limited"]+p.RateLimited != counts["all"] || p.RateLimited == 0 {
		t.Errorf("all recorded %d sleeps; limited %d + %d rate-limited: want all's, some rate-limited", counts["all"], counts["limited"], p.RateLimited)
	}
}

// commaInt formats n as the record summary does: 12,345.
func commaInt(n uint64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
