//go:build linux && amd64

package main

import (
	"math/rand"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/boottime"
)

// TestCrashSurvival kills 'bpftape record' with SIGKILL at 20 random
// moments of a high-rate capture (a workload calling tick(i) for i = 0, 1,
// 2... a few hundred thousand times a second) and checks each file: every
// recovered event is intact and in order, arg0 counts up from 0 with no
// gap but lost-counted ones, at most the last flush interval (1 s) before
// the kill is missing, no probe or BPF object outlives the recorder, and
// 'bpftape repair' makes a file that nodejs-polars reads with the same
// counts (built with -tags interop: polars is not run otherwise).
func TestCrashSurvival(t *testing.T) {
	bin, probes := bpftapeBin(t)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	const runs = 20
	// The flush interval, plus the drain cycle and a batch's encoding.
	const maxMissing = format.DefaultMaxAge + 250*time.Millisecond
	var total uint64
	var worst time.Duration
	for i := 0; i < runs; i++ {
		delay := time.Duration(rng.Int63n(int64(3 * time.Second)))
		dir := t.TempDir()
		out, ready, fixed := filepath.Join(dir, "c.arrow"), filepath.Join(dir, "ready"), filepath.Join(dir, "fixed.arrow")
		uprobes := uprobeLines()
		cmd := exec.Command(bin, "record", "-o", out, "--ready-file", ready, "-c", probes+" spin 30", "tick=u:"+probes+":tick(arg0)")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stopWatch := watchBPF(cmd.Process.Pid)
		target := readyTarget(t, waitFile(t, ready, 10*time.Second))
		// The watcher samples every 20 ms and the kill may come sooner:
		// look once now that every probe is attached.
		readyProgs, readyLinks := bpfHeld(cmd.Process.Pid)
		time.Sleep(delay)
		killed := boottime.Now()
		cmd.Process.Kill()
		cmd.Wait()
		progs, links := stopWatch()
		progs, links = union(progs, readyProgs), union(links, readyLinks)
		killWait(target)
		what := "run " + strconv.Itoa(i)
		if len(progs) == 0 || len(links) == 0 {
			t.Errorf("%s: saw %d programs and %d links in the recorder's fdinfo", what, len(progs), len(links))
		}
		waitBPFGone(t, what, progs, links)
		checkUprobes(t, what, uprobes)

		run := readTicks(t, out, target, killed)
		if !run.recovered {
			t.Errorf("%s: the killed recorder's file has a footer", what)
		}
		if run.events > 0 && run.first != 0 {
			t.Errorf("%s: first event has arg0 %d, want 0 (probes attach before the command runs)", what, run.first)
		}
		if run.gaps > run.lost {
			t.Errorf("%s: %d events missing between recovered ones, %d counted lost", what, run.gaps, run.lost)
		}
		last := run.lastTime
		if run.events == 0 {
			last = run.meta.StartBoot
		}
		missing := time.Duration(killed - last)
		worst = max(worst, missing)
		if missing > maxMissing {
			t.Errorf("%s: killed %v after its last recovered event (%d events), more than %v", what, missing, run.events, maxMissing)
		}
		total += run.events

		r := runBin(t, exec.Command(bin, "repair", out, fixed))
		if r.code != exitOK {
			t.Fatalf("%s: repair: exit %d", what, r.code)
		}
		if interopTests {
			pl := readPolars(t, fixed)
			if pl.PerProbe["tick"] != run.events || pl.Lost != run.lost || pl.Rows != run.events+uint64(run.lossRows) {
				t.Errorf("%s: polars reads %d tick events, %d lost, %d rows; bpftape %d, %d, %d", what,
					pl.PerProbe["tick"], pl.Lost, pl.Rows, run.events, run.lost, run.events+uint64(run.lossRows))
			}
		}
		t.Logf("%s: killed %v after ready: %d events recovered (%d lost), last %v before the kill, cut: %v",
			what, delay.Round(time.Millisecond), run.events, run.lost, missing.Round(time.Millisecond), run.cut)
	}
	t.Logf("%d kills: %d events recovered in all; at most %v missing before a kill (bound %v)", runs, total, worst.Round(time.Millisecond), maxMissing)
}
