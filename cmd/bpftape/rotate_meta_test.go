//go:build linux && amd64

package main

import (
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/record"
)

// TestRotatedMeta: every part of a rotated capture describes itself. Its
// start times are its own — it starts at the last event of the part
// before, so the parts tile the recording's time line and an analysis's
// relative times, --from and --to count from the part's start — and its
// Extra says which part it is, which file came before it and when the
// whole capture started; its wall and boot start times are read together,
// as the first part's are.
func TestRotatedMeta(t *testing.T) {
	bin, probes := bpftapeBin(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "c.arrow")
	// 64K parts: at the ~125,000 events/s of a busy test run, 256K parts
	// gave only the 4 the rotation keeps, and part 1 was never dropped.
	r := runBin(t, exec.Command(bin, "record", "-o", out, "--max-size", "64K", "--rotate", "4", "-d", "3", "-c", probes+" spin 20", "tick=u:"+probes+":tick(arg0)"))
	if r.code != 0 || !strings.Contains(r.stderr, "stopped: duration") {
		t.Fatalf("exit %d", r.code)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "c.*.arrow"))
	sort.Strings(names)
	if len(names) != 4 || names[0] == filepath.Join(dir, "c.000001.arrow") {
		t.Fatalf("parts %q: want 4, part 1 rotated out", names)
	}
	var prev *tickRun
	var prevSeq int
	var epoch0 int64
	captureStart := ""
	for i, n := range names {
		base := filepath.Base(n)
		seq, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(base, "c."), ".arrow"))
		if err != nil {
			t.Fatal(err)
		}
		run := readTicks(t, n, 0, 0) // also checks every event is at or after StartBoot
		m := run.meta
		first, ok := firstEventTime(t, n)
		if !ok && i < len(names)-1 {
			t.Fatalf("%s has no event", n)
		}
		// The last part may be empty: the rotation that began it can come
		// just before the duration ends (64K parts rotate every ~250 ms).
		lead := time.Duration(first - m.StartBoot)
		if !ok {
			lead = 0
		}
		t.Logf("%s: part %s after %s, started %s (boot %d), first event +%v, %d events, capture started %s",
			base, m.Extra[record.ExtraPart], m.Extra[record.ExtraPrevious], m.StartWall.Format(time.RFC3339Nano), m.StartBoot, lead, run.events, m.Extra[record.ExtraCaptureStart])
		if m.Extra[record.ExtraPart] != strconv.Itoa(seq) || m.Extra[record.ExtraPrevious] != record.PartName("c.arrow", seq-1) ||
			m.Extra[record.ExtraMaxSize] != strconv.Itoa(64<<10) || m.Extra[record.ExtraKeep] != "4" {
			t.Errorf("%s: extra %v", base, m.Extra)
		}
		cs, err := time.Parse(time.RFC3339Nano, m.Extra[record.ExtraCaptureStart])
		if err != nil || !cs.Before(m.StartWall) || (captureStart != "" && m.Extra[record.ExtraCaptureStart] != captureStart) {
			t.Errorf("%s: capture start %q (%v), part start %v, previous part's %q", base, m.Extra[record.ExtraCaptureStart], err, m.StartWall, captureStart)
		}
		captureStart = m.Extra[record.ExtraCaptureStart]
		// The part starts within its first batch's reach: before the fix
		// every part started when part 1 did, seconds before its events.
		if lead < 0 || lead > 100*time.Millisecond {
			t.Errorf("%s: first event %v after the part's start", base, lead)
		}
		// Wall and boot start times read together: the same boot epoch
		// in every part, to within the clocks' reading.
		epoch := m.StartWall.UnixNano() - m.StartBoot
		if i == 0 {
			epoch0 = epoch
		} else if d := time.Duration(epoch - epoch0); d < -5*time.Millisecond || d > 5*time.Millisecond {
			t.Errorf("%s: boot epoch differs by %v from the first part's", base, d)
		}
		if prev != nil && seq == prevSeq+1 && m.StartBoot != prev.lastTime {
			t.Errorf("%s starts at %d, not at the last event of the part before (%d)", base, m.StartBoot, prev.lastTime)
		}
		// bpftape's relative times count from the part's own start.
		info := infoJSON(t, n)
		if info.Events != run.events {
			t.Errorf("%s: info says %d events, want %d", base, info.Events, run.events)
		}
		ev, _, code := runCLI(t, "events", n, "--to", "50ms")
		if lines := strings.Count(ev, "\n"); code != 0 || (ok && lines < 2) {
			t.Errorf("%s: events --to 50ms: exit %d, %d lines: the window is not the part's first 50 ms", base, code, lines)
		}
		prev, prevSeq = run, seq
	}
}

// firstEventTime is the time of the first event of a capture.
func firstEventTime(t *testing.T, path string) (int64, bool) {
	t.Helper()
	r, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len; i++ {
			if _, lost := b.Lost(i); !lost {
				return b.Time[i], true
			}
		}
	}
	return 0, false
}
