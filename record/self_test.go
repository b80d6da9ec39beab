package record

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/testutil"
)

// TestRecorderNotRecorded: a system-wide tracepoint fires in every process,
// the recorder's own included (its writes of the capture, here also a
// goroutine of this process writing every 5 ms), and the programs never
// record the recorder's process (bpf's self_tgid), while another process's
// writes are recorded.
func TestRecorderNotRecorded(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	noise := exec.Command("sh", "-c", "while :; do echo noise; sleep 0.01; done >/dev/null")
	if err := noise.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { noise.Process.Kill(); noise.Wait() }()

	f, err := os.Create(filepath.Join(t.TempDir(), "own"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ownWrites := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if _, err := f.Write([]byte("own\n")); err == nil {
				ownWrites++
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	s, _ := mustRecord(t, Options{Duration: 1500 * time.Millisecond, Probes: []string{"t:syscalls:sys_exit_write"}})
	stop()
	<-done
	c := readCapture(t, s.Output)
	self, others := 0, 0
	for _, r := range c.rows["sys_exit_write"] {
		if r.pid == uint32(os.Getpid()) {
			self++
		} else {
			others++
		}
	}
	if self != 0 || others == 0 || ownWrites == 0 {
		t.Errorf("%d events of the recorder's own process (it wrote %d times), %d of others; want 0 and some", self, ownWrites, others)
	}
}

// TestRecorderOwnSwitches records sched_switch system-wide for 3 s, as
// the off-CPU recipe does: the program leaves out every switch between the
// recorder's threads and the idle task (SpecSelfSwitch) and counts them
// in the footer, and no wake-up of the reader makes the recorder switch
// at a storm's rate. Before, recording so, 99% of the events were the
// recorder's switches and the idle task's with it (44,000 a second
// here), each waking the reader, whose threads switched 22,000 times a
// second. The switches between the recorder and other threads stay (the
// other thread's switch-in or switch-out): how many depends on the host's
// load, as the recorder preempts or follows its threads.
func TestRecorderOwnSwitches(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	const d = 3 * time.Second
	before := ownContextSwitches(t)
	start := time.Now()
	s, _ := mustRecord(t, Options{Duration: d, Probes: []string{"t:sched:sched_switch(prev_pid,next_pid,ustack)"}})
	switches := float64(ownContextSwitches(t)-before) / time.Since(start).Seconds()
	c := readCapture(t, s.Output)
	self := map[int64]bool{}
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		tid, _ := strconv.ParseInt(e.Name(), 10, 32)
		self[tid] = true
	}
	rows := c.rows["sched_switch"]
	for _, r := range rows {
		if r.pid == uint32(os.Getpid()) {
			self[int64(r.tid)] = true
		}
	}
	own, involved := 0, 0
	for _, r := range rows {
		prev, next := r.ints["prev_pid"], r.ints["next_pid"]
		if self[prev] || self[next] {
			involved++
		}
		if (self[prev] || prev == 0) && (self[next] || next == 0) {
			own++
		}
	}
	p := c.probe(t, "sched_switch")
	secs := d.Seconds()
	t.Logf("%d events, %d (%.2f%%) between the recorder and the idle task, %d (%.2f%%, %.0f/s) with the recorder on one side; %d left out in the kernel; the recorder switched %.0f times a second",
		len(rows), own, 100*float64(own)/float64(max(len(rows), 1)), involved, 100*float64(involved)/float64(max(len(rows), 1)),
		float64(involved)/secs, p.RecorderSwitches, switches)
	if len(rows) == 0 || own*100 >= len(rows) {
		t.Errorf("%d of %d events are switches between the recorder and the idle task: want under 1%%", own, len(rows))
	}
	if p.RecorderSwitches == 0 || s.Probes[0].RecorderSwitches != p.RecorderSwitches {
		t.Errorf("footer: %d switches left out, summary %d: want the same, more than 0", p.RecorderSwitches, s.Probes[0].RecorderSwitches)
	}
	var sum strings.Builder
	s.Print(&sum)
	if want := fmt.Sprintf("sched_switch left out %s switches of the recorder's own", count(p.RecorderSwitches)); !strings.Contains(sum.String(), want) {
		t.Errorf("the summary lacks %q:\n%s", want, sum.String())
	}
	// A storm is tens of thousands a second; the recorder's Go runtime
	// (sysmon polling while a drain pass runs) switches some hundreds.
	if float64(involved)/secs > 5000 || switches > 5000 {
		t.Errorf("%.0f events a second with the recorder on one side, the recorder switched %.0f times a second: want under 5,000", float64(involved)/secs, switches)
	}
}

// ownContextSwitches sums the context switches of this process's threads.
func ownContextSwitches(t *testing.T) uint64 {
	t.Helper()
	paths, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue // a thread that exited
		}
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				x, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				n += x
			}
		}
	}
	return n
}
