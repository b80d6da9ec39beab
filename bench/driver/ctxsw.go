package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The ctxsw part: the recorder's own context switches a second while it
// records the off-CPU recipe, t:sched:sched_switch(prev_pid,next_pid,ustack)
// system-wide. Every switch of the recorder is an event of that probe, and
// every wake-up of its reader a switch: a recorder woken by what it
// records feeds itself (before the programs left out its own switches and
// woke the reader only for a process's first comm record, 22,000 switches
// a second, 99% of the capture).

// ctxswResult is one such recording.
type ctxswResult struct {
	seconds  float64 // the recording's -d
	perSec   float64 // the recorder's context switches a second, voluntary and not, from ready to the end
	events   int64   // events recorded
	ownLeft  int64   // switches left out as the recorder's own (its summary)
	maxrssKB int64
	err      string
}

// ctxswLimit is the target: a recorder that switches more is woken by what
// it records.
const ctxswLimit = 1000

func (d *driver) ctxSwitches() ctxswResult {
	r := ctxswResult{seconds: 3}
	if d.cfg.quick {
		r.seconds = 1
	}
	dir := filepath.Join(d.work, "ctxsw")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.err = err.Error()
		return r
	}
	defer os.RemoveAll(dir)
	ready := filepath.Join(dir, "ready")
	p, err := d.startProc(bpftape, nil, nil, d.bpftape, "record", "-o", filepath.Join(dir, "sw.arrow"), "--ready-file", ready,
		"-d", fmt.Sprintf("%gs", r.seconds), "t:sched:sched_switch(prev_pid,next_pid,ustack)")
	if err != nil {
		r.err = err.Error()
		return r
	}
	defer d.untrack(p)
	if err := waitFile(p, ready, readyTimeout); err != nil {
		p.stop(10 * time.Second)
		r.err = err.Error()
		return r
	}
	// From ready to shortly before -d ends: the threads' counts go with
	// the process.
	n0, t0 := taskSwitches(p.pid), time.Now()
	time.Sleep(time.Duration((r.seconds - 0.2) * float64(time.Second)))
	n1, t1 := taskSwitches(p.pid), time.Now()
	p.wait()
	r.perSec = float64(n1-n0) / t1.Sub(t0).Seconds()
	r.maxrssKB = p.maxrssKB
	out := p.stderr.String()
	if m := regexp.MustCompile(`([\d,]+) events in`).FindStringSubmatch(out); m != nil {
		r.events = atoi64(strings.ReplaceAll(m[1], ",", ""))
	}
	if m := regexp.MustCompile(`left out ([\d,]+) switches`).FindStringSubmatch(out); m != nil {
		r.ownLeft = atoi64(strings.ReplaceAll(m[1], ",", ""))
	}
	if !p.status.Exited() || p.status.ExitStatus() != 0 {
		r.err = fmt.Sprintf("bpftape record: %v: %s", p.status, tail(out))
	}
	d.logf("  recorder: %.0f context switches/s, %d events, %d of its own switches left out", r.perSec, r.events, r.ownLeft)
	return r
}

// taskSwitches sums voluntary_ctxt_switches and nonvoluntary_ctxt_switches
// over the threads of pid.
func taskSwitches(pid int) int64 {
	paths, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	var n int64
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				x, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += x
			}
		}
	}
	return n
}

func printCtxsw(w io.Writer, r *ctxswResult, errs *[]string) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "\nRecorder context switches: bpftape record -d %gs 't:sched:sched_switch(prev_pid,next_pid,ustack)' system-wide\n", r.seconds)
	if r.err != "" {
		*errs = append(*errs, "ctxsw: "+r.err)
		return
	}
	fmt.Fprintf(w, "%.0f switches/s of the recorder's threads (voluntary and not, from ready to the end); %s events recorded (%s/s);\n",
		r.perSec, count(r.events), count(int64(float64(r.events)/r.seconds)))
	fmt.Fprintf(w, "%s switches between its threads and the idle task left out in the kernel; peak RSS %s MiB\n", count(r.ownLeft), mib(r.maxrssKB))
}
