//go:build linux && amd64

package main

import (
	"bufio"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/boottime"
	"github.com/bpftape/bpftape/internal/testutil"
)

// slowSource is the low-rate workload: it calls slow_tick(i) for i = 0, 1,
// 2... every PERIOD_MS milliseconds for SECONDS seconds, and prints before
// each call its ground truth, "tick I BOOT_NS", I and the CLOCK_BOOTTIME
// (the clock of a capture's times) just before the call, flushed at once.
const slowSource = `
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PROBED __attribute__((noipa, used))
#define FRAME volatile long frame_ = 0; (void)frame_

PROBED long slow_tick(long i)
{
	FRAME;
	return i + 1;
}

static long boot_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long period_ms = atol(argv[1]), secs = atol(argv[2]);
	long end = boot_ns() + secs * 1000000000L, sum = 0;
	struct timespec pause = {period_ms / 1000, (period_ms % 1000) * 1000000L};

	for (long i = 0; boot_ns() < end; i++) {
		printf("tick %ld %ld\n", i, boot_ns());
		fflush(stdout);
		sum += slow_tick(i);
		nanosleep(&pause, NULL);
	}
	return sum == 0;
}
`

var (
	slowOnce sync.Once
	slowBin  string
	slowErr  error
)

// slowWorkload builds the low-rate workload once per test binary.
func slowWorkload(t *testing.T) string {
	t.Helper()
	slowOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bpftape-slow")
		if err != nil {
			slowErr = err
			return
		}
		slowDir = dir
		src := filepath.Join(dir, "slowticks.c")
		if slowErr = os.WriteFile(src, []byte(slowSource), 0o644); slowErr != nil {
			return
		}
		slowBin = filepath.Join(dir, "slowticks")
		slowErr = testutil.CompileC(slowBin, src)
	})
	if slowErr != nil {
		t.Fatal(slowErr)
	}
	return slowBin
}

// slowTruth reads the workload's "tick I BOOT_NS" lines.
func slowTruth(t *testing.T, path string) []int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var at []int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 || fs[0] != "tick" {
			continue // a line cut by the kill
		}
		i, err1 := strconv.Atoi(fs[1])
		ns, err2 := strconv.ParseInt(fs[2], 10, 64)
		if err1 != nil || err2 != nil || i != len(at) {
			t.Fatalf("%s: ground truth line %q after %d ticks", path, sc.Text(), len(at))
		}
		at = append(at, ns)
	}
	return at
}

// TestCrashLowRate kills 'bpftape record' with SIGKILL at random moments
// of a slow capture (5 events a second, so that a batch is written by the
// 1 s age bound, never because it is full) and checks the recovered file
// against the workload's ground truth: every event that fired more than
// the flush bound before the kill (format.DefaultMaxAge, 1 s, plus a 250 ms
// margin for the 10 ms drain cycle, the batch's encoding and a loaded
// machine) is in the file, intact (its arg0, pid, comm and a time just
// after the workload's own clock reading), in order, with none missing and
// none invented.
func TestCrashLowRate(t *testing.T) {
	bin, _ := bpftapeBin(t)
	slow := slowWorkload(t)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	const (
		runs   = 8
		period = 200 * time.Millisecond
		margin = 250 * time.Millisecond
		bound  = format.DefaultMaxAge + margin
	)
	var total, old, young, youngGot int
	var worst time.Duration
	for run := 0; run < runs; run++ {
		what := "run " + strconv.Itoa(run)
		delay := 1500*time.Millisecond + time.Duration(rng.Int63n(int64(4500*time.Millisecond)))
		dir := t.TempDir()
		out, ready, truthPath := filepath.Join(dir, "c.arrow"), filepath.Join(dir, "ready"), filepath.Join(dir, "truth")
		truthFile, err := os.Create(truthPath)
		if err != nil {
			t.Fatal(err)
		}
		uprobes := uprobeLines()
		cmd := exec.Command(bin, "record", "-o", out, "--ready-file", ready,
			"-c", slow+" "+strconv.Itoa(int(period/time.Millisecond))+" 30", "tick=u:"+slow+":slow_tick(arg0)")
		cmd.Stdout = truthFile // the command's stdout: the recorder passes its own on
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stopWatch := watchBPF(cmd.Process.Pid)
		target := readyTarget(t, waitFile(t, ready, 10*time.Second))
		time.Sleep(delay)
		killed := boottime.Now()
		cmd.Process.Kill()
		cmd.Wait()
		progs, links := stopWatch()
		killWait(target)
		truthFile.Close()
		waitBPFGone(t, what, progs, links)
		checkUprobes(t, what, uprobes)

		truth := slowTruth(t, truthPath)
		r, err := format.Open(out)
		if err != nil {
			t.Fatalf("%s: open: %v", what, err)
		}
		if !r.Recovered {
			t.Errorf("%s: the killed recorder's file has a footer", what)
		}
		_, p := r.Meta.Probe("tick")
		col := r.Column(p.Fields[p.Field("arg0")].Column)
		var got []int64 // arg0 of each recovered event
		lastTime := int64(0)
		for r.Next() {
			b := r.Batch()
			c := b.Col(col)
			for i := 0; i < b.Len; i++ {
				if n, ok := b.Lost(i); ok {
					t.Errorf("%s: %d events lost at 5 a second", what, n)
					continue
				}
				v := c.Int(i)
				tm := b.Time[i]
				if v != int64(len(got)) || int(v) >= len(truth) || b.PID[i] != uint32(target) || b.Comm(i) != "slowticks" ||
					tm < truth[v] || tm > truth[v]+int64(100*time.Millisecond) || tm < lastTime || tm > killed {
					t.Fatalf("%s: event %d is not the workload's: arg0 %d, pid %d (target %d), comm %q, time %d (truth %v, killed %d)",
						what, len(got), v, b.PID[i], target, b.Comm(i), tm, truth[min(int(v), len(truth)-1)], killed)
				}
				got = append(got, v)
				lastTime = tm
			}
		}
		if err := r.Err(); err != nil {
			t.Fatalf("%s: read: %v", what, err)
		}
		r.Close()

		// Every tick older than the bound is recovered; count the rest.
		o, y := 0, 0
		for i, at := range truth {
			age := time.Duration(killed - at)
			if age > bound {
				o++
				if i >= len(got) {
					t.Errorf("%s: tick %d, %v before the kill, is not in the file (%d of %d ticks recovered)", what, i, age.Round(time.Millisecond), len(got), len(truth))
				}
			} else {
				y++
				if i < len(got) {
					youngGot++
				}
			}
		}
		missing := time.Duration(0) // age at the kill of the oldest tick not recovered
		if len(got) < len(truth) && truth[len(got)] < killed {
			missing = time.Duration(killed - truth[len(got)])
		}
		worst = max(worst, missing)
		total += len(got)
		old += o
		young += y
		t.Logf("%s: killed %v after ready: %d of %d ticks recovered; %d older than %v, all there; oldest missing tick fired %v before the kill",
			what, delay.Round(time.Millisecond), len(got), len(truth), o, bound, missing.Round(time.Millisecond))
	}
	t.Logf("%d kills at 5 events/s: %d events recovered; all %d events older than %v were there; %d of %d younger ones too; worst: the oldest missing event fired %v before the kill",
		runs, total, old, bound, youngGot, young, worst.Round(time.Millisecond))
}
