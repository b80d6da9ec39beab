package main

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// wdef is a workload: a mode of bench/workload.c and the probe on it.
type wdef struct {
	name  string
	mode  string
	probe func(bin string) probe
	// perRound: a session per traced run, filtered by the workload's pid,
	// with no tool attached during untraced runs. For the tracepoint: its
	// programs run (and filter) on every write of every process, so an
	// untraced copy cannot run beside a live session.
	perRound bool
	// stacks: a stack row (ustack, profile), which the recording targets
	// do not cover; the tools' titles say what each records there.
	stacks bool
	// sampled: the profile row. The workload runs for profileSecs instead
	// of a count, the tools sample it (profileHz, pid filter), and the
	// overhead is per sample the tool recorded (sampledRoundDone).
	sampled bool
	// oneThread: the row runs on one thread only (the chain row, whose
	// question is what two pointer loads add to the uprobe row).
	oneThread bool
}

// wdefs are the workloads; soak takes wdefs[0] and wdefs[3].
var wdefs = []wdef{
	{name: "uprobe", mode: "call", probe: func(b string) probe { return probe{kind: "u", bin: b, fn: "bench_func"} }},
	{name: "uretprobe", mode: "call", probe: func(b string) probe { return probe{kind: "ur", bin: b, fn: "bench_func"} }},
	{name: "usdt", mode: "usdt", probe: func(b string) probe { return probe{kind: "U", bin: b, provider: "bpftape_bench", name: "tick"} }},
	{name: "tracepoint", mode: "write", perRound: true,
		probe: func(string) probe { return probe{kind: "t", category: "syscalls", event: "sys_exit_write"} }},
	// The uprobe on bench_func, every tool recording the user stack of
	// every call (the empty program stays empty: the floor).
	{name: "ustack", mode: "call", stacks: true,
		probe: func(b string) probe { return probe{kind: "u", bin: b, fn: "bench_func", ustack: true} }},
	// The call loop with no probe in it, sampled profileHz times a second
	// with kernel and user stacks: a session per traced run, filtered by
	// the workload's pid (a profiler on every CPU would also tick beside an
	// untraced run).
	{name: "profile", mode: "call", perRound: true, stacks: true, sampled: true,
		probe: func(string) probe { return probe{kind: "profile"} }},
	// The uprobe row's value read through two pointers (bench_req's
	// req->hdr->size): every tool reads the same chain.
	{name: "chain", mode: "chain", oneThread: true,
		probe: func(b string) probe { return probe{kind: "u", bin: b, fn: "bench_req", chain: true} }},
}

func readyProbes(b string) []probe {
	return []probe{
		{kind: "u", bin: b, fn: "bench_func"},
		{kind: "ur", bin: b, fn: "bench_ret"},
		{kind: "U", bin: b, provider: "bpftape_bench", name: "tick"},
		{kind: "t", category: "syscalls", event: "sys_exit_write"},
	}
}

// cell is what one tool measured on one workload.
type cell struct {
	overhead  []float64 // per round, ns/event: traced - untraced (untraced: the loop's own ns/event)
	cpu       []float64 // per round, recorder CPU ns/event
	cpuNs     int64     // recorder CPU over all rounds (idle taken out as for cpu)
	cpuEvents int64     // the events cpuNs is for
	idle      []float64 // recorder CPU ns per second while idle
	ready     []float64 // seconds
	generated int64     // events the workload fired in traced runs (profile: samples recorded)
	expected  float64   // profile: samples expected, rate × loop CPU time
	recorded  int64     // events the tool counted or wrote (-1 unknown)
	toolLost  int64     // losses the tool reported (-1 unknown)
	bytes     int64     // output bytes (-1 none)
	maxrssKB  int64
	errs      []string
}

func newCell() *cell { return &cell{recorded: -1, toolLost: -1, bytes: -1} }

func (c *cell) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

// absorb adds a stopped session's totals.
func (c *cell) absorb(s *session) {
	if s.recorded >= 0 {
		c.recorded = max(c.recorded, 0) + s.recorded
	}
	if s.toolLost >= 0 {
		c.toolLost = max(c.toolLost, 0) + s.toolLost
	}
	if s.bytes >= 0 {
		c.bytes = max(c.bytes, 0) + s.bytes
	}
	c.maxrssKB = max(c.maxrssKB, s.maxrssKB)
}

// perRecorded scales a run's fired events to the events the tool recorded
// (recorded of generated over its session): recorder CPU is per event the
// recorder handled, which differs from per event fired when it drops some.
func perRecorded(fired, recorded, generated int64) int64 {
	if recorded <= 0 || generated <= 0 {
		return fired
	}
	return max(int64(float64(fired)*float64(recorded)/float64(generated)+0.5), 1)
}

func (c *cell) addCPU(ns, events int64) {
	c.cpu = append(c.cpu, float64(ns)/float64(events))
	c.cpuNs += ns
	c.cpuEvents += events
}

// cpuPerEvent is the recorder's CPU per event over all rounds: work the
// tool defers (batches written up to a second later, perf record's
// build-id pass at exit) lands in a later round than its events, so the
// total is the fair figure and the per-round values show the spread.
func (c *cell) cpuPerEvent() float64 {
	if c.cpuEvents == 0 {
		return 0
	}
	return float64(c.cpuNs) / float64(c.cpuEvents)
}

// lost is what the tool reported lost, or else what it did not count of
// what the workload fired.
func (c *cell) lost() int64 {
	l := c.toolLost
	if c.recorded >= 0 {
		l = max(l, c.generated-c.recorded, 0)
	}
	return l
}

type row struct {
	workload, threads string
	events            int64 // per thread per run (0: the profile row's timed runs)
	cells             map[string]*cell
	stacks, sampled   bool    // as its wdef
	chain             bool    // its probe reads a pointer chain: set against the uprobe row, not the targets
	hz                int     // profile: samples per second
	seconds           float64 // profile: each run's length
	loopCPU           bool    // profile: loop CPU time, not wall time
}

type soakResult struct {
	name                      string
	seconds                   float64
	generated, recorded, lost int64
	cpu                       float64 // recorder ns/event
	maxrssKB                  int64
	perEvent                  float64 // the workload's ns/event under tracing
	err                       string
}

type results struct {
	rows              []*row
	soak              []soakResult
	recCPU            []*recCPURow
	ctxsw             *ctxswResult
	ready             map[string]*cell
	replay            *replayResult
	progTimes         map[string]map[string]progTime
	cpuStart, cpuEnd  cpuAccount
	loadStart         string
	loadEnd           string
	started, finished time.Time
	versions          []string
	notes             []string
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// copyOf is the byte-identical copy of the workload that tool traces (its
// own inode, since uprobes attach per inode).
func (d *driver) copyOf(tool string) string {
	return filepath.Join(d.work, "bin", "workload."+tool)
}

func (d *driver) makeCopies() error {
	if err := os.MkdirAll(filepath.Join(d.work, "bin"), 0o755); err != nil {
		return err
	}
	src, err := os.ReadFile(d.workload)
	if err != nil {
		return err
	}
	for _, t := range append([]string{untraced, "ready"}, tools...) {
		dst := d.copyOf(t)
		os.Remove(dst)
		if err := os.WriteFile(dst, src, 0o755); err != nil {
			return err
		}
	}
	return nil
}

func rotate(xs []string, r int) []string {
	n := len(xs)
	out := make([]string, n)
	for i := range xs {
		out[i] = xs[(i+r)%n]
	}
	return out
}

// cpuAccount is the machine's busy CPU time (/proc/stat, all CPUs) and
// this process's and its waited-for descendants' (rusage), in ns.
type cpuAccount struct{ busy, ours, steal int64 }

func readCPUAccount() cpuAccount {
	var a cpuAccount
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
		// cpu user nice system idle iowait irq softirq steal ...
		for i := 1; i < len(f) && i <= 7; i++ {
			if i == 4 || i == 5 {
				continue
			}
			a.busy += atoi64(f[i]) * 1e7 // USER_HZ = 100
		}
		if len(f) > 8 {
			a.steal = atoi64(f[8]) * 1e7
		}
	}
	for _, who := range []int{unix.RUSAGE_SELF, unix.RUSAGE_CHILDREN} {
		var ru unix.Rusage
		if unix.Getrusage(who, &ru) == nil {
			a.ours += ru.Utime.Nano() + ru.Stime.Nano()
		}
	}
	return a
}

func (d *driver) bench() (*results, error) {
	res := &results{loadStart: loadavg(), started: time.Now(), ready: map[string]*cell{}}
	res.cpuStart = readCPUAccount()
	d.ncpu = runtime.NumCPU()
	if err := d.makeCopies(); err != nil {
		return nil, err
	}
	res.versions = versions(d)
	d.loopCPU, d.loopClockWhy = loopClock()
	c := &d.cfg
	threadings := []struct {
		name, cpus string
		n          int
	}{
		{"1T", fmt.Sprint(d.ncpu - 1), 1},
		{fmt.Sprintf("%dT", d.ncpu), fmt.Sprintf("0-%d", d.ncpu-1), d.ncpu},
	}
	for _, w := range wdefs {
		for ti, th := range threadings {
			key := "1t"
			if ti == 1 {
				key = "mt"
			}
			if !c.wantRow(w.name, key) || (w.oneThread && ti == 1) {
				continue
			}
			events := c.events
			if w.perRound {
				events = c.tpEvents
			}
			if w.sampled {
				d.logf("%s %s: %d rounds of %gs per run, sampled at %d Hz (load %s)", w.name, th.name, c.rounds, c.profileSecs, c.profileHz, loadavg())
			} else {
				d.logf("%s %s: %d rounds of %d events per thread (load %s)", w.name, th.name, c.rounds, events, loadavg())
			}
			r, err := d.runRow(w, th.name, th.cpus, th.n, events)
			if err != nil {
				return nil, err
			}
			res.rows = append(res.rows, r)
		}
	}
	for ti, th := range threadings {
		key := "1t"
		if ti == 1 {
			key = "mt"
		}
		if c.wantRecCPU(key) {
			d.logf("reccpu %s: bpftape alone, %d rounds of %d events per thread, variants %s (load %s)", th.name, c.recRounds, c.recEvents, recNames(c.recVariants), loadavg())
			res.recCPU = append(res.recCPU, d.recCPU(th.name, th.cpus, th.n))
		}
	}
	if c.want("ctxsw") {
		d.logf("ctxsw: the recorder's context switches recording sched_switch with user stacks system-wide (load %s)", loadavg())
		r := d.ctxSwitches()
		res.ctxsw = &r
	}
	if c.want("soak") {
		for _, w := range []wdef{wdefs[0], wdefs[3]} {
			d.logf("soak %s: every core as fast as possible for %gs under bpftape (load %s)", w.name, c.soakSeconds, loadavg())
			res.soak = append(res.soak, d.soak(w))
		}
	}
	if c.want("ready") {
		d.logf("time to ready, 4 probes: %d rounds (load %s)", c.readyRounds, loadavg())
		res.ready = d.readyBench()
	}
	if c.want("replay") && !c.skipReplay {
		d.logf("replay (load %s)", loadavg())
		res.replay = d.replayBench()
	}
	if c.want("progtime") {
		d.logf("BPF program run time per event, 1 thread (load %s)", loadavg())
		pt, err := d.progTimes()
		if err != nil {
			res.notes = append(res.notes, "program run times: "+err.Error())
		}
		res.progTimes = pt
	}
	res.loadEnd = loadavg()
	res.finished = time.Now()
	res.cpuEnd = readCPUAccount()
	return res, nil
}

func (d *driver) runRow(w wdef, threads, cpus string, n int, events int64) (*row, error) {
	r := &row{workload: w.name, threads: threads, events: events, cells: map[string]*cell{}, stacks: w.stacks, sampled: w.sampled, chain: w.probe("").chain}
	for _, t := range append([]string{untraced}, tools...) {
		r.cells[t] = newCell()
	}
	probeOf := func(t string) probe {
		p := w.probe(d.copyOf(t))
		if p.kind == "profile" {
			p.hz = d.cfg.profileHz
		}
		return p
	}
	var seconds float64
	if w.sampled {
		events, seconds = 0, d.cfg.profileSecs
		r.hz, r.seconds, r.loopCPU = d.cfg.profileHz, seconds, d.loopCPU
	}
	order := append([]string{untraced}, tools...)
	if w.perRound {
		for round := 0; round < d.cfg.rounds; round++ {
			got := map[string]wlResult{}
			samples := map[string]float64{}
			for _, t := range rotate(order, round) {
				c := r.cells[t]
				wl, err := d.startWorkload(d.copyOf(t), cpus, n, w.mode, events, seconds)
				if err != nil {
					return nil, err
				}
				var s *session
				if t != untraced {
					if s, err = d.startSession(t, []probe{probeOf(t)}, wl.pid); err != nil {
						wl.kill()
						c.fail("%v", err)
						d.logf("  %s: %v", t, err)
						continue
					}
					s.sample()
				}
				res, err := wl.run()
				if err != nil {
					return nil, err
				}
				got[t] = res
				if s != nil {
					if err := d.stopSession(s); err != nil {
						c.fail("%v", err)
						d.logf("  %s: %v", t, err)
					}
					c.absorb(s)
					c.ready = append(c.ready, s.ready.Seconds())
					if !w.sampled {
						c.generated += res.events
						c.addCPU(s.perRound[0], perRecorded(res.events, s.recorded, res.events))
						continue
					}
					// Samples: what the tool recorded; nothing says how many
					// it should have, so lost is only what it reports lost.
					// The empty program counts nothing: its samples are the
					// expected count, the rate times the loop's CPU time.
					exp := expectedSamples(res, r.hz)
					c.expected += exp
					if s.recorded >= 0 {
						c.generated += s.recorded
						samples[t] = float64(s.recorded)
						if s.recorded > 0 {
							c.addCPU(s.perRound[0], s.recorded)
						}
					} else if t == empty {
						samples[t] = exp
					}
				}
			}
			if w.sampled {
				d.sampledRoundDone(r, got, samples)
			} else {
				d.roundDone(r, got)
			}
		}
		return r, nil
	}

	sessions := map[string]*session{}
	for _, t := range tools {
		s, err := d.startSession(t, []probe{probeOf(t)}, 0)
		if err != nil {
			r.cells[t].fail("%v", err)
			d.logf("  %v", err)
			continue
		}
		sessions[t] = s
		r.cells[t].ready = append(r.cells[t].ready, s.ready.Seconds())
	}
	d.measureIdle(sessions, r)
	runEvents := map[string][]int64{}
	for round := 0; round < d.cfg.rounds; round++ {
		got := map[string]wlResult{}
		for _, t := range rotate(order, round) {
			s := sessions[t]
			if t != untraced && s == nil {
				continue
			}
			wl, err := d.startWorkload(d.copyOf(t), cpus, n, w.mode, events, 0)
			if err != nil {
				return nil, err
			}
			if s != nil {
				s.sample()
			}
			t0 := time.Now()
			res, err := wl.run()
			if err != nil {
				return nil, err
			}
			got[t] = res
			if s != nil {
				s.ran(time.Since(t0))
				r.cells[t].generated += res.events
				runEvents[t] = append(runEvents[t], res.events)
			}
		}
		d.roundDone(r, got)
	}
	errs := d.stopSessions(sessions)
	for _, t := range tools {
		s := sessions[t]
		if s == nil {
			continue
		}
		c := r.cells[t]
		if err := errs[t]; err != nil {
			c.fail("%v", err)
			d.logf("  %s: %v", t, err)
		}
		c.absorb(s)
		for i, ns := range s.perRound {
			if i < len(runEvents[t]) {
				c.addCPU(ns, perRecorded(runEvents[t][i], s.recorded, c.generated))
			}
		}
	}
	return r, nil
}

// measureIdle measures each session's CPU rate while nothing fires: it is
// taken out of the windows that carry CPU to the runs (see stopSession) and
// shown in the table.
func (d *driver) measureIdle(sessions map[string]*session, r *row) {
	c0, t0 := map[string]int64{}, time.Now()
	for t, s := range sessions {
		c0[t] = procCPU(s.p.pid)
	}
	time.Sleep(d.cfg.idleWindow)
	dt := time.Since(t0).Seconds()
	for t, s := range sessions {
		s.idle = float64(procCPU(s.p.pid)-c0[t]) / dt
		r.cells[t].idle = append(r.cells[t].idle, s.idle)
	}
}

// stopSessions stops sessions concurrently.
func (d *driver) stopSessions(sessions map[string]*session) map[string]error {
	errs := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for t, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := d.stopSession(s)
			mu.Lock()
			errs[t] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	return errs
}

// roundDone turns one round's runs into per-event overheads against that
// round's untraced run.
func (d *driver) roundDone(r *row, got map[string]wlResult) {
	u, ok := got[untraced]
	if !ok {
		return
	}
	r.cells[untraced].overhead = append(r.cells[untraced].overhead, u.perEventNs)
	msg := fmt.Sprintf("  round: untraced %.2f ns/event", u.perEventNs)
	for _, t := range tools {
		if g, ok := got[t]; ok {
			r.cells[t].overhead = append(r.cells[t].overhead, g.perEventNs-u.perEventNs)
			msg += fmt.Sprintf(", %s +%.0f", t, g.perEventNs-u.perEventNs)
		}
	}
	d.logf("%s", msg)
}

// loopNs is thread i's loop time in ns: CPU time with loopCPU, else wall
// time.
func loopNs(t thrResult, loopCPU bool) int64 {
	if loopCPU && t.cpuNs >= 0 {
		return t.cpuNs
	}
	return t.ns
}

// expectedSamples is how many samples a CPU-clock event at hz takes of the
// run's loop threads: hz per second of their CPU time.
func expectedSamples(res wlResult, hz int) float64 {
	var ns int64
	for _, t := range res.thr {
		ns += max(t.cpuNs, 0)
	}
	return float64(hz) * float64(ns) / 1e9
}

// sampledRoundDone is roundDone for the profile row: the loop ran for a
// fixed time, so the time the tool took from it is, per thread, its loop
// time less what its iterations take at the untraced run's rate (thread i
// against untraced thread i, on the same CPU); the row's overhead is the
// sum over threads / the samples the tool recorded in that run.
func (d *driver) sampledRoundDone(r *row, got map[string]wlResult, samples map[string]float64) {
	u, ok := got[untraced]
	if !ok {
		return
	}
	var rate float64 // mean over threads of the untraced loop ns/event
	for _, t := range u.thr {
		rate += float64(loopNs(t, r.loopCPU)) / float64(t.events)
	}
	rate /= float64(len(u.thr))
	r.cells[untraced].overhead = append(r.cells[untraced].overhead, rate)
	msg := fmt.Sprintf("  round: untraced loop %.3f ns/event", rate)
	for _, t := range tools {
		g, ok := got[t]
		n := samples[t]
		if !ok || n <= 0 || len(g.thr) != len(u.thr) {
			continue
		}
		var extra float64
		for i, th := range g.thr {
			ut := u.thr[i]
			extra += float64(loopNs(th, r.loopCPU)) - float64(th.events)*float64(loopNs(ut, r.loopCPU))/float64(ut.events)
		}
		r.cells[t].overhead = append(r.cells[t].overhead, extra/n)
		msg += fmt.Sprintf(", %s %+.0f ns/sample (%.0f samples)", t, extra/n, n)
	}
	d.logf("%s", msg)
}

// loopClock decides which loop time the profile row takes. Its signal is
// small (some µs per sample at ~1 kHz: well under 1% of the loop) and wall
// time also counts whatever else ran on the loop's CPU, so it takes the
// threads' CPU time, which holds the sampling interrupts the thread took
// only where the kernel charges interrupt time to the interrupted task:
// without CONFIG_IRQ_TIME_ACCOUNTING (or with it turned off by
// tsc=noirqtime). Otherwise, or when the config cannot be read, wall time.
func loopClock() (cpu bool, why string) {
	rel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	var cfg []byte
	if f, err := os.Open("/proc/config.gz"); err == nil {
		if z, err := gzip.NewReader(f); err == nil {
			cfg, _ = io.ReadAll(z)
		}
		f.Close()
	}
	if len(cfg) == 0 {
		cfg, _ = os.ReadFile("/boot/config-" + strings.TrimSpace(string(rel)))
	}
	cmdline, _ := os.ReadFile("/proc/cmdline")
	switch {
	case len(cfg) == 0:
		return false, "wall time: the kernel config (/proc/config.gz, /boot/config-*) is not readable, so whether a thread's CPU time holds the interrupts it took is unknown"
	case strings.Contains(string(cfg), "\nCONFIG_IRQ_TIME_ACCOUNTING=y") && !strings.Contains(" "+string(cmdline)+" ", " tsc=noirqtime "):
		return false, "wall time: this kernel accounts interrupt time apart (CONFIG_IRQ_TIME_ACCOUNTING), so a thread's CPU time leaves out the sampling interrupts"
	}
	return true, "the loop threads' CPU time (CLOCK_THREAD_CPUTIME_ID): this kernel charges interrupt time to the interrupted thread (no CONFIG_IRQ_TIME_ACCOUNTING), and other tasks on its CPU do not count"
}

func (d *driver) soak(w wdef) soakResult {
	sr := soakResult{name: w.name, seconds: d.cfg.soakSeconds}
	wl, err := d.startWorkload(d.copyOf(bpftape), fmt.Sprintf("0-%d", d.ncpu-1), d.ncpu, w.mode, 0, d.cfg.soakSeconds)
	if err != nil {
		sr.err = err.Error()
		return sr
	}
	pid := 0
	if w.perRound {
		pid = wl.pid
	}
	s, err := d.startSession(bpftape, []probe{w.probe(d.copyOf(bpftape))}, pid)
	if err != nil {
		wl.kill()
		sr.err = err.Error()
		return sr
	}
	s.sample()
	res, err := wl.run()
	if err != nil {
		sr.err = err.Error()
	}
	if err := d.stopSession(s); err != nil && sr.err == "" {
		sr.err = err.Error()
	}
	sr.generated, sr.recorded, sr.lost = res.events, s.recorded, s.toolLost
	if res.events > 0 {
		sr.cpu = float64(s.cpuTotal) / float64(res.events)
	}
	sr.maxrssKB = s.maxrssKB
	sr.perEvent = res.perEventNs
	d.logf("  %d events, %d recorded, %d lost, recorder %.0f ns/event", sr.generated, sr.recorded, sr.lost, sr.cpu)
	return sr
}

// readyBench times each tool from start to attached on 4 probes: a
// uprobe, a uretprobe, a USDT probe and a tracepoint filtered by pid.
func (d *driver) readyBench() map[string]*cell {
	out := map[string]*cell{}
	for _, t := range tools {
		out[t] = newCell()
	}
	bin := d.copyOf("ready")
	for round := 0; round < d.cfg.readyRounds; round++ {
		for _, t := range rotate(tools, round) {
			c := out[t]
			wl, err := d.startWorkload(bin, fmt.Sprint(d.ncpu-1), 1, "all", d.cfg.readyIters, 0)
			if err != nil {
				c.fail("%v", err)
				continue
			}
			s, err := d.startSession(t, readyProbes(bin), wl.pid)
			if err != nil {
				wl.kill()
				c.fail("%v", err)
				d.logf("  %s: %v", t, err)
				continue
			}
			s.sample()
			res, err := wl.run()
			if err != nil {
				c.fail("%v", err)
			}
			if err := d.stopSession(s); err != nil {
				c.fail("%v", err)
			}
			c.absorb(s)
			c.generated += res.events
			c.ready = append(c.ready, s.ready.Seconds())
			d.logf("  %s ready in %.3fs", t, s.ready.Seconds())
		}
	}
	return out
}

func versions(d *driver) []string {
	var v []string
	run := func(name string, args ...string) string {
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			return name + " ?"
		}
		line := strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
		return line
	}
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	v = append(v, "kernel "+strings.TrimSpace(string(b)))
	v = append(v, run("perf", "perf", "--version"))
	v = append(v, run("bpftrace", "bpftrace", "--version"))
	v = append(v, "BCC "+run("bcc", "/usr/bin/python3", "-c", "import bcc; print(bcc.__version__)"))
	v = append(v, run("bpftape", d.bpftape, "--version"))
	return v
}

// bpftapeRejecting is the progtime column of bpftape with a filter that
// rejects every event (probe.rejectAll).
const bpftapeRejecting = "bpftape-rejecting"

// bpftapeRateLimited is the progtime column of bpftape with a rate limit
// that rejects nearly every event (probe.rateLimited).
const bpftapeRateLimited = "bpftape-ratelimited"

// emptyClock is the progtime column of the empty program that reads the
// boot clock (driver empty -clock): what stamping each event with its time
// costs before a recorder does anything else.
const emptyClock = "empty-clock"

// progTimes is a diagnostic: BPF program run time per event of each tool
// on each workload (one thread), from the kernel's BPF statistics
// (BPF_ENABLE_STATS, on only while this runs: it adds two clock reads to
// every program run), next to the overhead measured in the same run.
type progTime struct {
	runNs    float64 // program run time per run
	overhead float64 // traced - untraced loop ns/event in this run
}

func (d *driver) progTimes() (map[string]map[string]progTime, error) {
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		return nil, fmt.Errorf("enable BPF stats: %w", err)
	}
	defer stats.Close()
	out := map[string]map[string]progTime{}
	cpu := fmt.Sprint(d.ncpu - 1)
	for _, w := range wdefs {
		if w.sampled {
			continue // per sample, not per event: not comparable here
		}
		out[w.name] = map[string]progTime{}
		events := d.cfg.events
		if w.perRound {
			events = d.cfg.tpEvents
		}
		ts := []string{empty, emptyClock, bcc, bpftrace, bpftape}
		if !w.stacks {
			ts = append(ts, bpftapeRejecting, bpftapeRateLimited)
		}
		for _, t := range ts {
			u, err := d.startWorkload(d.copyOf(untraced), cpu, 1, w.mode, events, 0)
			if err != nil {
				return nil, err
			}
			ures, err := u.run()
			if err != nil {
				return nil, err
			}
			tool, bin := t, t
			switch t {
			case bpftapeRejecting, bpftapeRateLimited:
				tool, bin = bpftape, bpftape
			case emptyClock:
				bin = empty
			}
			wl, err := d.startWorkload(d.copyOf(bin), cpu, 1, w.mode, events, 0)
			if err != nil {
				return nil, err
			}
			pid := 0
			if w.perRound {
				pid = wl.pid
			}
			pr := w.probe(d.copyOf(bin))
			pr.rejectAll = t == bpftapeRejecting
			pr.rateLimited = t == bpftapeRateLimited
			s, err := d.startSession(tool, []probe{pr}, pid)
			if err != nil {
				wl.kill()
				d.logf("  %s: %v", t, err)
				continue
			}
			res, err := wl.run()
			if err != nil {
				return nil, err
			}
			runNs := progRunNs(s.p.pid, res.events)
			if err := d.stopSession(s); err != nil {
				d.logf("  %s: %v", t, err)
			}
			out[w.name][t] = progTime{runNs: runNs, overhead: res.perEventNs - ures.perEventNs}
			d.logf("  %s %s: program %.0f ns/run, overhead %.0f ns/event", w.name, t, runNs, res.perEventNs-ures.perEventNs)
		}
	}
	return out, nil
}

// progRunNs reads run_time_ns / run_cnt of the busiest BPF program that
// process pid holds (from /proc/PID/fdinfo), -1 if none ran.
func progRunNs(pid int, events int64) float64 {
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	best, bestCnt := -1.0, int64(0)
	for _, fd := range fds {
		if l, _ := os.Readlink(fd); l != "anon_inode:bpf-prog" {
			continue
		}
		b, err := os.ReadFile(strings.Replace(fd, "/fd/", "/fdinfo/", 1))
		if err != nil {
			continue
		}
		var rt, rc int64
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) == 2 && f[0] == "run_time_ns:" {
				rt = atoi64(f[1])
			}
			if len(f) == 2 && f[0] == "run_cnt:" {
				rc = atoi64(f[1])
			}
		}
		if rc > bestCnt {
			best, bestCnt = float64(rt)/float64(rc), rc
		}
	}
	return best
}
