//go:build linux && amd64

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestRecordMaxSize: --max-size stops a high-rate recording before the
// file passes the size (complete, a little under it, or over it by the
// size's estimate's error at most); with --rotate 3 the
// recording goes on through numbered files of which the newest 3 are
// kept, each complete, their events following on from one file to the
// next.
func TestRecordMaxSize(t *testing.T) {
	bin, probes := bpftapeBin(t)
	// within reports whether a file of size bytes kept to a limit of max:
	// at least half of it, at most a 32nd over (Projected's estimate; the
	// batches in flight took 51% over 64K before it).
	within := func(size, max int64) bool { return size >= max/2 && size <= max+max/32 }
	dir := t.TempDir()

	out := filepath.Join(dir, "one.arrow")
	r := runBin(t, exec.Command(bin, "record", "-o", out, "--max-size", "1M", "-c", probes+" spin 20", "tick=u:"+probes+":tick(arg0)"))
	if r.code != 0 || !strings.Contains(r.stderr, "stopped: max size") {
		t.Errorf("--max-size 1M: exit %d, want 0 (stopped as asked) and 'stopped: max size'", r.code)
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if !within(st.Size(), 1<<20) {
		t.Errorf("--max-size 1M: %d bytes", st.Size())
	}
	run := readTicks(t, out, 0, 0)
	if run.recovered || run.events == 0 {
		t.Errorf("--max-size 1M: recovered %v, %d events", run.recovered, run.events)
	}

	rdir := filepath.Join(dir, "ring")
	os.Mkdir(rdir, 0o755)
	out = filepath.Join(rdir, "c.arrow")
	// 64K parts: a loaded test machine records ~90,000 events/s, which
	// filled only the 3 kept parts of 256K in 3 s.
	r = runBin(t, exec.Command(bin, "record", "-o", out, "--max-size", "64K", "--rotate", "3", "-d", "3", "-c", probes+" spin 20", "tick=u:"+probes+":tick(arg0)"))
	if r.code != 0 || !strings.Contains(r.stderr, "stopped: duration") || !strings.Contains(r.stderr, "rotated, the newest 3 files kept") {
		t.Errorf("--rotate 3: exit %d", r.code)
	}
	names, _ := filepath.Glob(filepath.Join(rdir, "*"))
	sort.Strings(names)
	if len(names) != 3 {
		t.Fatalf("--rotate 3 left %q", names)
	}
	if names[0] == filepath.Join(rdir, "c.000001.arrow") {
		t.Errorf("no part was rotated out in 3 s: %q", names)
	}
	prevLast, prevLost := int64(-1), uint64(0)
	for i, n := range names {
		if !strings.HasPrefix(filepath.Base(n), "c.") || !strings.HasSuffix(n, ".arrow") {
			t.Errorf("part name %s", n)
		}
		st, err := os.Stat(n)
		if err != nil {
			t.Fatal(err)
		}
		run := readTicks(t, n, 0, 0)
		t.Logf("%s: %d bytes, %d events from arg0 %d, %d lost", filepath.Base(n), st.Size(), run.events, run.first, run.lost)
		if run.recovered || (i < len(names)-1 && !within(st.Size(), 64<<10)) || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: recovered %v, %d bytes, mode %v", n, run.recovered, st.Size(), st.Mode().Perm())
		}
		if prevLast >= 0 && run.events > 0 {
			// gaps within a part are checked by readTicks; across parts:
			if gap := run.first - prevLast - 1; gap < 0 || uint64(gap) > prevLost+run.lost {
				t.Errorf("%s starts at arg0 %d after %d in the previous part", n, run.first, prevLast)
			}
		}
		if run.events > 0 {
			prevLast = run.first + int64(run.events+run.gaps) - 1
		}
		prevLost = run.lost
	}

	r = runBin(t, exec.Command(bin, "record", "-o", out, "--max-size", "256K", "--rotate", "3", "-c", probes+" exit 0", "u:"+probes+":tick"))
	if r.code != exitUsage || !strings.Contains(r.stderr, "exists (a rotated capture): give --force") {
		t.Errorf("--rotate over a rotated capture: exit %d, stderr %q", r.code, r.stderr)
	}
	// With --force, the earlier recording's parts that this one does not
	// replace go: left, they would read as its later parts.
	earlier := 0
	for _, n := range names {
		if filepath.Base(n) != "c.000001.arrow" {
			earlier++
		}
	}
	r = runBin(t, exec.Command(bin, "record", "-o", out, "--force", "--max-size", "256K", "--rotate", "3", "-c", probes+" exit 0", "u:"+probes+":tick"))
	after, _ := filepath.Glob(filepath.Join(rdir, "*"))
	if r.code != exitOK || len(after) != 1 || filepath.Base(after[0]) != "c.000001.arrow" ||
		!strings.Contains(r.stderr, fmt.Sprintf("--force: removed %d parts of an earlier recording", earlier)) {
		t.Errorf("--force over a rotated capture of %q: exit %d, left %q, stderr %q", names, r.code, after, r.stderr)
	}
	if r := runBin(t, exec.Command(bin, "record", "-o", filepath.Join(dir, "x.arrow"), "--rotate", "2", "u:"+probes+":tick")); r.code != exitUsage || !strings.Contains(r.stderr, "--rotate needs --max-size") {
		t.Errorf("--rotate alone: exit %d, stderr %q", r.code, r.stderr)
	}
}
