package main

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
)

// idList returns n ids from first, comma-separated.
func idList(first, n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(first + i)
	}
	return strings.Join(ids, ",")
}

// TestFilterListLimit checks the limit on --pid, --tid and --comm lists:
// one over it is refused at once with an error naming both counts, and a
// list at the limit filters as a short one does. record refuses lists its
// BPF filter cannot hold before it attaches anything.
func TestFilterListLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	if err := formattest.WriteFile(path, 1000, formattest.Meta(), format.WriterOptions{}, 0); err != nil {
		t.Fatal(err)
	}
	hist := func(args ...string) (string, string, int) {
		t.Helper()
		var out, errb bytes.Buffer
		start := time.Now()
		code := run(append([]string{"hist", path, "rx", "arg2"}, args...), &out, &errb)
		t.Logf("hist %.40s...: exit %d in %v", strings.Join(args, " "), code, time.Since(start))
		return out.String(), errb.String(), code
	}
	for _, tc := range []struct{ flag, list, want string }{
		{"--pid", idList(1, 20_000), "--pid: 20000 values, at most 4096"},
		{"--tid", idList(1, maxListValues+1), "--tid: 4097 values, at most 4096"},
		{"--comm", strings.Repeat("a,", maxListValues) + "b", "--comm: 4097 values, at most 4096"},
	} {
		_, stderr, code := hist(tc.flag, tc.list)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || len(stderr) > 300 {
			t.Errorf("%s of %d bytes: exit %d, %q; want a usage error saying %q", tc.flag, len(tc.list), code, stderr, tc.want)
		}
	}
	// formattest's events are all of pid 4242.
	want, _, code := hist("--pid", "4242")
	if code != exitOK || !strings.Contains(want, "|") {
		t.Fatalf("hist --pid 4242: exit %d\n%s", code, want)
	}
	for _, list := range []string{idList(4242-maxListValues+1, maxListValues), idList(4242, maxListValues), idList(1, maxListValues-1) + ",4242"} {
		if got, stderr, code := hist("--pid", list); code != exitOK || got != want {
			t.Errorf("hist --pid with 4242 among %d: exit %d, %s\n%s, want\n%s", maxListValues, code, stderr, got, want)
		}
	}
	if got, stderr, code := hist("--pid", idList(1, maxListValues)); code != exitOK || strings.Contains(got, "|*") || !strings.Contains(stderr, "NOTE:") {
		t.Errorf("hist --pid without 4242 among %d: exit %d, %s\n%s", maxListValues, code, stderr, got)
	}

	// record: refused before any probe is resolved or attached.
	if !recordingBuild {
		return // record is in linux/amd64 builds only (recordverbs.go)
	}
	out := filepath.Join(t.TempDir(), "r.arrow")
	args := []string{"record", "-o", out}
	for k := range 5 {
		args = append(args, "--pid", idList(1+k*20_000, 20_000))
	}
	args = append(args, "t:sched:sched_process_exec")
	start := time.Now()
	_, stderr, code := runCLI(t, args...)
	if code != exitUsage || !strings.Contains(stderr, "--pid: 100000 values, at most 8") || len(stderr) > 300 {
		t.Errorf("record --pid of 100000: exit %d, %q", code, stderr)
	}
	t.Logf("record --pid of 100000: refused in %v", time.Since(start))
}
