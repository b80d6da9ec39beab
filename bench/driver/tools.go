package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The tools, in the table's order. "untraced" is the workload alone.
const (
	untraced = "untraced"
	empty    = "empty"
	bcc      = "bcc"
	bpftrace = "bpftrace"
	perf     = "perf"
	bpftape  = "bpftape"
)

var tools = []string{empty, bcc, bpftrace, perf, bpftape}

var toolTitle = map[string]string{
	untraced: "untraced",
	empty:    "empty prog",
	bcc:      "BCC hist",
	bpftrace: "bpftrace hist",
	perf:     "perf record",
	bpftape:  "bpftape record",
}

// stackTitle: what each tool runs in the ustack and profile rows.
var stackTitle = map[string]map[string]string{
	"ustack": {
		empty:    "empty prog (no stack)",
		bcc:      "BCC stack ids",
		bpftrace: "bpftrace @[ustack]",
		perf:     "perf record -g",
		bpftape:  "bpftape ustack",
	},
	"profile": {
		empty:    "empty prog (no stack)",
		bcc:      "BCC profile -f",
		bpftrace: "bpftrace profile",
		perf:     "perf record -F -g",
		bpftape:  "bpftape profile",
	},
}

// title is tool's name in row workload.
func title(workload, tool string) string {
	if t, ok := stackTitle[workload][tool]; ok {
		return t
	}
	return toolTitle[tool]
}

// session is one running tool attached to some probes.
type session struct {
	tool   string
	keep   bool // keep dir (the output file) after stop; the caller removes it
	probes []probe
	pid    int // pid filter (tracepoints), 0 for none
	dir    string
	p      *proc
	ready  time.Duration
	cpu    []int64     // CPU samples of the tool: at ready, then before each traced run
	cpuAt  []time.Time // when each sample was taken
	runs   []time.Duration
	// idle is the tool's CPU ns per second while nothing fires (measured
	// once all sessions are ready), -1 if not measured.
	idle float64

	perfEvents []string
	ctl, ack   *os.File

	// Results, after stop.
	recorded int64 // events the tool counted or wrote; -1 unknown
	toolLost int64 // losses the tool itself reported; -1 unknown
	bytes    int64 // output file size; -1 none
	cpuTotal int64 // ns of CPU from ready to exit
	maxrssKB int64
	perRound []int64 // CPU ns per traced run (sample deltas, less idle CPU when measured)
}

const readyTimeout = 120 * time.Second

// startSession starts tool on probes and returns once it is attached.
func (d *driver) startSession(tool string, probes []probe, pid int) (*session, error) {
	return d.startSessionKeep(tool, probes, pid, false)
}

func (d *driver) startSessionKeep(tool string, probes []probe, pid int, keep bool) (*session, error) {
	return d.startSessionOf(tool, probes, pid, keep, recVariant{})
}

// startSessionOf starts a session; for bpftape, v may name another binary
// and add to its environment (the reccpu part's variants).
func (d *driver) startSessionOf(tool string, probes []probe, pid int, keep bool, v recVariant) (*session, error) {
	s := &session{tool: tool, probes: probes, pid: pid, keep: keep, recorded: -1, toolLost: -1, bytes: -1, idle: -1}
	var err error
	if s.dir, err = os.MkdirTemp(d.work, tool+"-"); err != nil {
		return nil, err
	}
	switch tool {
	case empty, emptyClock:
		args := []string{d.self, "empty"}
		if tool == emptyClock {
			args = append(args, "-clock")
		}
		for _, p := range probes {
			args = append(args, p.String())
		}
		if s.p, err = d.startProc(tool, nil, nil, args...); err == nil {
			err = s.p.waitOutput(s.p.stdout, "READY\n", readyTimeout)
		}
	case bcc:
		env := []string{"BCC_KERNEL_SOURCE=" + d.headers}
		if s.profile() {
			// BCC's own profile tool, folded output (a count per stack,
			// printed at SIGINT); the wrapper prints READY once attached.
			p := probes[0]
			if pid == 0 {
				err = fmt.Errorf("the BCC profile session needs a pid")
				break
			}
			args := []string{"/usr/bin/python3", d.bccWrap, d.bccProf, "-F", strconv.Itoa(p.hz), "-p", strconv.Itoa(pid), "-f"}
			if s.p, err = d.startProc(tool, env, nil, args...); err == nil {
				err = s.p.waitOutput(s.p.stderr, "READY\n", readyTimeout)
			}
			break
		}
		args := []string{"/usr/bin/python3", d.bccScript}
		if pid != 0 {
			args = append(args, "--pid", strconv.Itoa(pid))
		}
		if s.ustack() {
			args = append(args, "--ustack")
		}
		if s.chain() {
			args = append(args, "--deref", "8,8")
		}
		for _, p := range probes {
			args = append(args, p.String())
		}
		if s.p, err = d.startProc(tool, env, nil, args...); err == nil {
			err = s.p.waitOutput(s.p.stdout, "READY\n", readyTimeout)
		}
	case bpftrace:
		var prog strings.Builder
		for i, p := range probes {
			prog.WriteString(p.bpftrace(i, pid))
		}
		env := []string{"__BPFTRACE_NOTIFY_PROBES_ATTACHED=1", "BPFTRACE_MAX_PROBES=1024"}
		if s.p, err = d.startProc(tool, env, nil, "bpftrace", "-e", prog.String()); err == nil {
			err = s.p.waitOutput(s.p.stderr, "__BPFTRACE_NOTIFY_PROBES_ATTACHED", readyTimeout)
		}
	case perf:
		err = d.startPerf(s)
	case bpftape:
		ready := filepath.Join(s.dir, "ready")
		bin := d.bpftape
		if v.bin != "" {
			bin = v.bin
		}
		args := []string{bin, "record", "-o", s.output(), "--ready-file", ready}
		if pid != 0 {
			args = append(args, "-p", strconv.Itoa(pid))
		}
		for _, p := range probes {
			if p.rateLimited {
				args = append(args, "--max-rate", p.bpftapeSpec()+"="+rateLimitedRate)
			}
		}
		for _, p := range probes {
			args = append(args, p.bpftapeSpec())
		}
		if s.p, err = d.startProc(tool, v.env, nil, args...); err == nil {
			err = waitFile(s.p, ready, readyTimeout)
		}
	default:
		err = fmt.Errorf("unknown tool %q", tool)
	}
	if err != nil {
		if s.p != nil {
			s.p.stop(10 * time.Second)
		}
		d.perfCleanup(s)
		os.RemoveAll(s.dir)
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	s.ready = time.Since(s.p.start)
	s.sample()
	return s, nil
}

// ustack: the session's probes record user stacks (the ustack row).
func (s *session) ustack() bool {
	for _, p := range s.probes {
		if p.ustack {
			return true
		}
	}
	return false
}

// chain: the session's uprobes read arg0->hdr->size (the chain row).
func (s *session) chain() bool {
	for _, p := range s.probes {
		if p.chain {
			return true
		}
	}
	return false
}

// profile: the session samples (the profile row: one profile:hz:N probe).
func (s *session) profile() bool { return len(s.probes) == 1 && s.probes[0].kind == "profile" }

// waitFile polls for path every millisecond (bpftape's --ready-file).
func waitFile(p *proc, path string, timeout time.Duration) error {
	end := time.Now().Add(timeout)
	for time.Now().Before(end) {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("exited before it was ready: %s", tail(p.stderr.String()))
		case <-time.After(time.Millisecond):
		}
	}
	return fmt.Errorf("not ready after %v: %s", timeout, tail(p.stderr.String()))
}

// startPerf adds perf probes for the uprobe and USDT sites (not timed:
// perf probe is a separate step), then starts perf record with its events
// disabled (-D -1) and enables them through its control FIFO: the "ack"
// comes once they are on.
func (d *driver) startPerf(s *session) error {
	var events, opts []string
	if s.ustack() {
		// A user callchain per sample (frame pointers, as the others walk
		// them), no kernel one: what ustack records.
		opts = append(opts, "-g", "--user-callchains")
	}
	for _, p := range s.probes {
		switch p.kind {
		case "profile":
			// The CPU clock, as BCC's, bpftrace's and bpftape's profile
			// sample (perf's default, cycles, is another event), with
			// kernel and user callchains. With -p perf opens it per thread
			// of the process (no filter to run elsewhere).
			events = append(events, "cpu-clock")
			opts = append(opts, "-F", strconv.Itoa(p.hz), "-g")
		case "u", "ur":
			name := "bench_entry"
			def := fmt.Sprintf("bpftapebench:%s=%s size=%%di:u64", name, p.fn)
			if p.chain {
				def = fmt.Sprintf("bpftapebench:%s=%s size=+8(+8(%%di)):u64", name, p.fn)
			}
			if p.kind == "ur" {
				name = "bench_exit"
				def = fmt.Sprintf("bpftapebench:%s=%s%%return ret=$retval:u64", name, p.fn)
				name += "__return"
			}
			if err := d.perfProbe(s, "bpftapebench:"+name, "-x", p.bin, "--add", def); err != nil {
				return err
			}
			events = append(events, "bpftapebench:"+name)
		case "U":
			// perf probe finds SDT notes in the build-id cache; all the
			// workload's copies share one build id, hence a cache per session.
			if out, err := perfCmd(s, "buildid-cache", "--add", p.bin).CombinedOutput(); err != nil {
				return fmt.Errorf("perf buildid-cache --add %s: %v: %s", p.bin, err, out)
			}
			ev := "sdt_" + p.provider + ":" + p.name
			if err := d.perfProbe(s, ev, "-x", p.bin, ev); err != nil {
				return err
			}
			events = append(events, ev)
		case "t":
			events = append(events, p.category+":"+p.event)
		}
	}
	ctl, ack := filepath.Join(s.dir, "ctl"), filepath.Join(s.dir, "ack")
	for _, f := range []string{ctl, ack} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			return err
		}
	}
	var err error
	// O_RDWR opens of a FIFO do not block; perf opens them itself.
	if s.ctl, err = os.OpenFile(ctl, os.O_RDWR, 0); err != nil {
		return err
	}
	if s.ack, err = os.OpenFile(ack, os.O_RDWR, 0); err != nil {
		return err
	}
	args := []string{"perf", "--buildid-dir", s.buildidDir(), "record", "-o", s.output(), "-D", "-1", "--control", "fifo:" + ctl + "," + ack}
	for _, e := range events {
		args = append(args, "-e", e)
	}
	args = append(args, opts...)
	if s.pid != 0 {
		args = append(args, "-p", strconv.Itoa(s.pid))
	} else {
		args = append(args, "-a")
	}
	if s.p, err = d.startProc(perf, nil, nil, args...); err != nil {
		return err
	}
	if _, err := s.ctl.WriteString("enable\n"); err != nil {
		return err
	}
	acked := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(s.ack).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "ack" {
			err = fmt.Errorf("perf control answered %q", line)
		}
		acked <- err
	}()
	select {
	case err := <-acked:
		return err
	case <-s.p.exited:
		return fmt.Errorf("perf record exited before it was ready: %s", tail(s.p.stderr.String()))
	case <-time.After(readyTimeout):
		return fmt.Errorf("perf record not ready after %v", readyTimeout)
	}
}

// perfCmd is perf with the session's own build-id cache (perf does not
// read PERF_BUILDID_DIR for everything; --buildid-dir it does).
func perfCmd(s *session, args ...string) *exec.Cmd {
	return exec.Command("perf", append([]string{"--buildid-dir", s.buildidDir()}, args...)...)
}

func (s *session) buildidDir() string { return filepath.Join(s.dir, "buildid") }

func (d *driver) perfProbe(s *session, event string, args ...string) error {
	out, err := perfCmd(s, append([]string{"probe", "-q"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("perf probe %s: %v: %s", strings.Join(args, " "), err, out)
	}
	s.perfEvents = append(s.perfEvents, event)
	return nil
}

func (d *driver) perfCleanup(s *session) {
	if s.ctl != nil {
		s.ctl.Close()
		s.ack.Close()
		s.ctl, s.ack = nil, nil
	}
	for _, e := range s.perfEvents {
		if out, err := perfCmd(s, "probe", "-q", "-d", e).CombinedOutput(); err != nil {
			d.logf("warning: perf probe -d %s: %v: %s", e, err, out)
		}
	}
	s.perfEvents = nil
}

// output is the file the tool writes (perf.data or the capture).
func (s *session) output() string {
	if s.tool == perf {
		return filepath.Join(s.dir, "perf.data")
	}
	return filepath.Join(s.dir, "capture.arrow")
}

// sample records the tool's CPU time before a traced run.
func (s *session) sample() {
	s.cpu = append(s.cpu, procCPU(s.p.pid))
	s.cpuAt = append(s.cpuAt, time.Now())
}

// ran records how long the traced run after the last sample took.
func (s *session) ran(d time.Duration) { s.runs = append(s.runs, d) }

var (
	bpftapeSummary = regexp.MustCompile(`\[ bpftape record: ([\d,]+) events in .*?\), ([\d,]+) lost`)
	perfSamples    = regexp.MustCompile(`\((\d+) samples\)`)
	bccCount       = regexp.MustCompile(`(?m)^count \S+ (\d+)$`)
	bpftraceBucket = regexp.MustCompile(`(?m)^[\[(][^\])]*[\])]\s+(\d+)\s+\|`)
	// bpftrace prints a map keyed by stacks as "@s0[\n    frame\n...\n]: N",
	// with an empty stack last as "...\n, ]: N" (@s0[ustack, kstack] of a
	// sample in user mode) and an empty one alone as "@s0[]: N".
	bpftraceStackCount = regexp.MustCompile(`(?m)^(?:@s\d+\[|, )?\]: (\d+)$`)
	// BCC profile -f: "comm;frame;...;frame N" per stack.
	foldedCount = regexp.MustCompile(`(?m)^\S.* (\d+)$`)
)

func commaInt(s string) int64 { return atoi64(strings.ReplaceAll(s, ",", "")) }

// stop ends the session and gathers its results; big output files are
// measured and deleted.
func (d *driver) stopSession(s *session) error {
	if !s.keep {
		defer os.RemoveAll(s.dir)
	}
	defer d.perfCleanup(s)
	err := s.p.stop(15 * time.Minute)
	d.untrack(s.p)
	if !s.p.haveUsage {
		return fmt.Errorf("%s: no resource usage from launch: %s", s.tool, tail(s.p.stderr.String()))
	}
	s.maxrssKB = s.p.maxrssKB
	s.cpuTotal = s.p.cpuNs - s.cpu[0]
	// Samples: [0] at ready, [1..R] before each traced run; the run after
	// sample i gets the CPU until sample i+1 (or exit), less the idle rate
	// over the part of that window in which its own run was not going.
	cpus := append(append([]int64(nil), s.cpu...), s.p.cpuNs)
	ats := append(append([]time.Time(nil), s.cpuAt...), s.p.exitAt)
	for i := 1; i < len(s.cpu); i++ {
		ns := cpus[i+1] - cpus[i]
		if i == 1 {
			ns += cpus[1] - cpus[0] // from ready to the first run
		}
		if s.idle >= 0 && i-1 < len(s.runs) {
			window := ats[i+1].Sub(ats[i])
			if i == 1 {
				window += ats[1].Sub(ats[0])
			}
			ns -= int64(s.idle * (window - s.runs[i-1]).Seconds())
		}
		s.perRound = append(s.perRound, max(ns, 0))
	}
	out, errOut := s.p.stdout.String(), s.p.stderr.String()
	switch s.tool {
	case bcc:
		re := bccCount
		if s.profile() {
			re = foldedCount
		}
		var n int64
		for _, m := range re.FindAllStringSubmatch(out, -1) {
			n += atoi64(m[1])
		}
		s.recorded = n
	case bpftrace:
		var n int64
		for _, m := range bpftraceBucket.FindAllStringSubmatch(out, -1) {
			n += atoi64(m[1])
		}
		for _, m := range bpftraceStackCount.FindAllStringSubmatch(out, -1) {
			n += atoi64(m[1])
		}
		s.recorded = n
	case perf:
		if m := perfSamples.FindStringSubmatch(errOut); m != nil {
			s.recorded = atoi64(m[1])
		} else if err == nil {
			err = fmt.Errorf("perf record printed no sample count: %s", tail(errOut))
		}
		if st, e := os.Stat(s.output()); e == nil {
			s.bytes = st.Size()
		}
	case bpftape:
		if m := bpftapeSummary.FindStringSubmatch(errOut); m != nil {
			s.recorded, s.toolLost = commaInt(m[1]), commaInt(m[2])
		} else if err == nil {
			err = fmt.Errorf("bpftape record printed no summary: %s", tail(errOut))
		}
		if st, e := os.Stat(s.output()); e == nil {
			s.bytes = st.Size()
		}
	}
	// perf record re-raises the SIGINT it was stopped with.
	if err == nil && s.p.status.Signaled() && s.p.status.Signal() != syscall.SIGINT {
		err = fmt.Errorf("%s was killed by %v: %s", s.tool, s.p.status.Signal(), tail(errOut))
	}
	if err == nil && s.p.status.Exited() && s.p.status.ExitStatus() != 0 {
		err = fmt.Errorf("%s exited with status %d: %s", s.tool, s.p.status.ExitStatus(), tail(errOut))
	}
	return err
}
