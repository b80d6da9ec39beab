package record

import (
	"context"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/testutil"
)

// The capture window: every probe records over the same interval, whatever
// stops the recording. Before it, links were closed one by one (~90 ms
// each), so the probes closed last recorded for longer: 2 s of a u:/ur:
// pair on a hot function left 151,488 returns without entry, and the
// counts of one loop's functions were 1347, 1392, 1420 and 1453.
func TestWindowLockstep(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe := testutil.BuildC(t, "testdata/lockstep.c", "lockstep")
	const threads = 2
	probes := []string{"u:" + exe + ":step_a", "ur:" + exe + ":step_a", "u:" + exe + ":step_b", "u:" + exe + ":step_c"}

	for _, stop := range []string{"duration", "process exited", "interrupted"} {
		t.Run(stop, func(t *testing.T) {
			cmd := exec.Command(exe, strconv.Itoa(threads))
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			dir := t.TempDir()
			o := Options{Output: filepath.Join(dir, "w.arrow"), Probes: probes, PID: cmd.Process.Pid, ReadyFile: filepath.Join(dir, "ready")}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			switch stop {
			case "duration":
				o.Duration = time.Second
			case "process exited":
				whenReady(o.ReadyFile, time.Second, func() { cmd.Process.Kill() })
			case "interrupted":
				whenReady(o.ReadyFile, time.Second, cancel) // what SIGINT does
			}
			s, err := Record(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if s.Stopped != stop {
				t.Errorf("stopped: %q, want %q", s.Stopped, stop)
			}
			if s.Lost > 0 {
				t.Fatalf("%d events lost: the checks below need every event", s.Lost)
			}
			c := readCapture(t, o.Output)
			counts := map[string]int{}
			for _, name := range []string{"step_a", "step_a:return", "step_b", "step_c"} {
				counts[name] = len(c.rows[name])
				if counts[name] < 1000 {
					t.Fatalf("%s: %d events: the workload did not run", name, counts[name])
				}
			}
			// On each thread the calls go a, a's return, b, c, a...: over any
			// interval two of them differ by at most one.
			lo, hi := counts["step_a"], counts["step_a"]
			for _, n := range counts {
				lo, hi = min(lo, n), max(hi, n)
			}
			if hi-lo > threads {
				t.Errorf("counts of one loop's probes differ by %d (> %d threads): %v", hi-lo, threads, counts)
			}
			entries, returns := unmatched(c.rows["step_a"], c.rows["step_a:return"])
			for tid, n := range entries {
				if n > 1 {
					t.Errorf("thread %d: %d entries without return", tid, n)
				}
			}
			for tid, n := range returns {
				if n > 1 {
					t.Errorf("thread %d: %d returns without entry", tid, n)
				}
			}

			// The metadata holds the window, and every event is inside it.
			w := c.meta.Window
			if w == nil || w.Start == 0 || w.End <= w.Start {
				t.Fatalf("window %+v", w)
			}
			if s.Window != *w {
				t.Errorf("summary window %+v, metadata %+v", s.Window, *w)
			}
			for name, rows := range c.rows {
				for _, r := range rows {
					if r.time < w.Start || r.time > w.End {
						t.Fatalf("%s event at %d outside the window [%d, %d]", name, r.time, w.Start, w.End)
					}
				}
			}
		})
	}
}

// unmatched pairs entries with returns per thread in time order, as
// `bpftape latency` does, and counts what is left on each side by thread.
func unmatched(entries, returns []row) (map[uint32]int, map[uint32]int) {
	type ev struct {
		t   int64
		ret bool
	}
	byTID := map[uint32][]ev{}
	for _, r := range entries {
		byTID[r.tid] = append(byTID[r.tid], ev{r.time, false})
	}
	for _, r := range returns {
		byTID[r.tid] = append(byTID[r.tid], ev{r.time, true})
	}
	noRet, noEntry := map[uint32]int{}, map[uint32]int{}
	for tid, evs := range byTID {
		sort.Slice(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
		open := 0
		for _, e := range evs {
			switch {
			case !e.ret:
				open++
			case open > 0:
				open--
			default:
				noEntry[tid]++
			}
		}
		if open > 0 {
			noRet[tid] = open
		}
	}
	return noRet, noEntry
}
