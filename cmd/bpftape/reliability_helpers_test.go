//go:build linux && amd64

package main

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/format"
)

// Helpers of the reliability tests (crash, disk full, overload, privacy,
// target lifecycle).

// bpfHeld lists the BPF programs and links process pid holds, from the
// fdinfo of its file descriptors.
func bpfHeld(pid int) (progs, links []uint32) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fdinfo"
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var prog, lnk uint32
		isLink := false
		for _, l := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(l, ":")
			if !ok {
				continue
			}
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
			switch k {
			case "prog_id":
				prog = uint32(n)
			case "link_id":
				lnk, isLink = uint32(n), true
			}
		}
		if isLink {
			links = append(links, lnk)
		} else if prog != 0 {
			progs = append(progs, prog)
		}
	}
	return progs, links
}

// waitBPFGone fails unless every listed program and link is gone from the
// kernel within 5 s (freeing waits for RCU grace periods).
func waitBPFGone(t *testing.T, what string, progs, links []uint32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		for _, id := range progs {
			if p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id)); err == nil {
				p.Close()
				left = append(left, "program "+strconv.Itoa(int(id)))
			} else if !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("program %d: %v", id, err)
			}
		}
		for _, id := range links {
			if l, err := link.NewFromID(link.ID(id)); err == nil {
				l.Close()
				left = append(left, "link "+strconv.Itoa(int(id)))
			} else if !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("link %d: %v", id, err)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: still in the kernel: %s", what, strings.Join(left, ", "))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// uprobeLines returns the lines of tracefs uprobe_events; other tracers
// (perf probe, BCC) may have some, so tests compare before and after.
func uprobeLines() map[string]bool {
	lines := map[string]bool{}
	for _, d := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		b, err := os.ReadFile(filepath.Join(d, "uprobe_events"))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l != "" {
				lines[l] = true
			}
		}
		break
	}
	return lines
}

// checkUprobes fails for uprobe_events lines that were not there before
// and could be bpftape's: in cilium/ebpf's "ebpf_" groups, or on a binary
// of the tests. (Other tracers, e.g. a benchmark running BCC, may come and
// go meanwhile.)
func checkUprobes(t *testing.T, what string, before map[string]bool) {
	t.Helper()
	for l := range uprobeLines() {
		ours := strings.Contains(l, ":ebpf_") || (binDir != "" && strings.Contains(l, binDir)) ||
			strings.Contains(l, filepath.Join(os.TempDir(), "Test"))
		if !before[l] && ours {
			t.Errorf("%s: uprobe_events gained %q", what, l)
		}
	}
}

// watchBPF samples the BPF objects process pid holds every 20 ms until
// stop is called, which returns every id seen.
func watchBPF(pid int) (stop func() (progs, links []uint32)) {
	return watchBPFEvery(pid, 20*time.Millisecond)
}

// watchBPFEvery is watchBPF sampling every interval.
func watchBPFEvery(pid int, interval time.Duration) (stop func() (progs, links []uint32)) {
	done := make(chan struct{})
	var mu sync.Mutex
	progSet, linkSet := map[uint32]bool{}, map[uint32]bool{}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			p, l := bpfHeld(pid)
			mu.Lock()
			for _, id := range p {
				progSet[id] = true
			}
			for _, id := range l {
				linkSet[id] = true
			}
			mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(interval):
			}
		}
	}()
	return func() (progs, links []uint32) {
		close(done)
		<-finished
		for id := range progSet {
			progs = append(progs, id)
		}
		for id := range linkSet {
			links = append(links, id)
		}
		return progs, links
	}
}

// tickRun is what a capture of u:probes:tick(arg0) holds.
type tickRun struct {
	meta      *format.Meta
	events    uint64
	lost      uint64
	lossRows  int
	first     int64 // arg0 of the first event
	gaps      uint64
	lastTime  int64
	recovered bool
	cut       error
}

// readTicks reads the events of probe 'tick=u:PROBES:tick(arg0)' of a
// capture (others are skipped) and checks that
// every event is intact: the target's pid and tid (unless pid is 0), comm, a CPU that
// exists, times in order within [start, end], and arg0 counting up by one
// except where events were lost (gaps, compared with lost by the caller).
func readTicks(t *testing.T, path string, pid int, end int64) *tickRun {
	t.Helper()
	r, err := format.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer r.Close()
	run := &tickRun{meta: r.Meta, recovered: r.Recovered, first: -1}
	col := -1
	tick, p := r.Meta.Probe("tick")
	if p != nil {
		col = r.Column(p.Fields[p.Field("arg0")].Column)
	}
	if col < 0 {
		t.Fatalf("no tick arg0 column: %+v", r.Meta.Probes)
	}
	ncpu := uint16(runtime.NumCPU())
	prev := int64(-1)
	for r.Next() {
		b := r.Batch()
		c := b.Col(col)
		for i := 0; i < b.Len; i++ {
			if int(b.Probe[i]) != tick {
				continue
			}
			if n, ok := b.Lost(i); ok {
				run.lost += n
				run.lossRows++
				continue
			}
			tm := b.Time[i]
			if (pid != 0 && (b.PID[i] != uint32(pid) || b.TID[i] != uint32(pid))) || b.Comm(i) != "probes" || b.CPU[i] >= ncpu ||
				tm < r.Meta.StartBoot || (end > 0 && tm > end) || tm < run.lastTime || !c.Valid(i) {
				t.Fatalf("event %d is damaged: pid %d tid %d comm %q cpu %d time %d (start %d, end %d, previous %d)",
					run.events, b.PID[i], b.TID[i], b.Comm(i), b.CPU[i], tm, r.Meta.StartBoot, end, run.lastTime)
			}
			v := c.Int(i)
			if prev < 0 {
				run.first = v
			} else if v <= prev {
				t.Fatalf("event %d: arg0 %d after %d", run.events, v, prev)
			} else {
				run.gaps += uint64(v - prev - 1)
			}
			prev, run.lastTime = v, tm
			run.events++
		}
	}
	if err := r.Err(); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	run.cut = r.RecoverErr
	return run
}

// rssKiB returns the resident set size of process pid (VmRSS) and its peak
// (VmHWM), in KiB.
func rssKiB(pid int) (rss, peak int64) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			rss = n
		case "VmHWM":
			peak = n
		}
	}
	return rss, peak
}

// killWait kills process pid (not a child of the test) and waits until it
// is gone.
func killWait(pid int) {
	if pid <= 0 {
		return
	}
	unix.Kill(pid, unix.SIGKILL)
	for i := 0; i < 500 && unix.Kill(pid, 0) == nil; i++ {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && strings.Contains(string(b), ") Z ") {
			return // a zombie: dead, waiting for its parent
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkWriteFailed checks how a recorder whose output failed ended: exit
// status 1, a stderr that names the error and says what to do (wants), and
// its -c command (target) stopped.
func checkWriteFailed(t *testing.T, r result, target int, wants ...string) {
	t.Helper()
	if r.code != exitFailure {
		t.Errorf("exit %d, want %d", r.code, exitFailure)
	}
	for _, want := range append([]string{"bpftape record: ", "stopped: error"}, wants...) {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if unix.Kill(target, 0) == nil {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(target) + "/stat"); !strings.Contains(string(b), ") Z ") {
			t.Error("the -c command still runs after the recording stopped")
		}
	}
}

// union returns the ids in a or b, each once.
func union(a, b []uint32) []uint32 {
	out := slices.Clone(a)
	for _, id := range b {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
