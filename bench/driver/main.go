// Command driver is the harness behind `make bench` (see bench/README.md):
// it runs the workloads of bench/workload.c untraced and under the empty
// BPF program, BCC, bpftrace, perf record and bpftape record in
// alternation, times replay (bpftape hist against perf script; every verb
// against hist and DuckDB), measures
// bpftape's own CPU per event with its variants side by side (reccpu), and
// prints one table and the targets with PASS, FAIL or
// N/A (targets.go: a target passes only on a measurement).
//
//	driver run [flags]         the benchmark (bench/bench.sh passes the paths)
//	driver empty [-clock] PROBE...  the empty-program floor tool (used by run)
//	driver synth -o FILE -n N  a seed-like capture written with format.Writer
//	driver vmtable             make vmbench's table, from the guest's VMBENCH lines on stdin
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: driver run|empty|synth|vmtable ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runBench(os.Args[2:])
	case "empty":
		err = runEmpty(os.Args[2:])
	case "synth":
		err = runSynth(os.Args[2:])
	case "vmtable":
		err = runVMTable(os.Stdin, os.Stdout)
	default:
		err = fmt.Errorf("unknown verb %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "driver %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// config is the size of a run.
type config struct {
	quick         bool
	rounds        int     // alternation rounds per workload
	events        int64   // iterations per thread and traced run (uprobe, uretprobe, USDT)
	tpEvents      int64   // the same for the tracepoint workload
	profileHz     int     // the profile row's sampling rate, per CPU
	profileSecs   float64 // the profile row's traced and untraced runs, seconds
	soakSeconds   float64 // every core as fast as possible, for the loss target
	readyRounds   int
	readyIters    int64
	replayEvents  int64 // synthesized seed-like capture for the big bpftape hist run
	perfEvents    int64 // perf.data (and an equal bpftape capture) for perf script
	stackEvents   int64 // the recorded capture with user stacks of the replay verbs
	idleWindow    time.Duration
	replayRepeats int
	skipReplay    bool
	only          map[string]bool
	// reccpu: bpftape alone, its variants alternating (reccpu.go)
	recEvents   int64 // per thread per run
	recRounds   int
	recVariants []recVariant
}

type driver struct {
	cfg       config
	work      string // scratch directory
	self      string // this executable
	launch    string
	bpftape   string
	workload  string // the built workload binary
	bccScript string
	bccWrap   string // bench/bcc_profile.py
	bccProf   string // BCC's profile tool
	headers   string // BCC_KERNEL_SOURCE
	// the replay verbs' DuckDB side (verbs.go)
	node, duckJS, nodeModules string
	ncpu                      int
	// loopCPU: the profile row takes the loop's CPU time, not its wall
	// time (see loopClock); loopClockWhy says why either.
	loopCPU      bool
	loopClockWhy string

	mu    sync.Mutex
	procs map[*proc]bool
	log   *os.File
	t0    time.Time
}

func (d *driver) logf(format string, args ...any) {
	fmt.Fprintf(d.log, "[%6.1fs] %s\n", time.Since(d.t0).Seconds(), fmt.Sprintf(format, args...))
}

func (d *driver) track(p *proc) {
	d.mu.Lock()
	d.procs[p] = true
	d.mu.Unlock()
}

func (d *driver) untrack(p *proc) {
	d.mu.Lock()
	delete(d.procs, p)
	d.mu.Unlock()
}

// stopAll stops every tool still running (on an interrupt).
func (d *driver) stopAll() {
	d.mu.Lock()
	ps := make([]*proc, 0, len(d.procs))
	for p := range d.procs {
		ps = append(ps, p)
	}
	d.mu.Unlock()
	for _, p := range ps {
		p.stop(30 * time.Second)
	}
}

func runBench(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	quick := fs.Bool("quick", false, "CI mode: few rounds, small event counts (under 2 minutes)")
	work := fs.String("work", "/var/tmp/bpftape-bench/run", "scratch directory (captures, perf.data, copies)")
	bpftapeBin := fs.String("bpftape", "bin/bpftape", "bpftape binary")
	wl := fs.String("workload", "", "built bench/workload.c")
	launch := fs.String("launch", "", "built bench/launch.c")
	bccScript := fs.String("bcc", "bench/bcc_hist.py", "the BCC histogram script")
	bccWrap := fs.String("bcc-profile-wrapper", "bench/bcc_profile.py", "runs BCC's profile tool, printing READY once it is attached")
	bccProf := fs.String("bcc-profile", "", "BCC's profile tool (default /usr/share/bcc/tools/profile, or else Debian's /usr/sbin/profile-bpfcc)")
	profileHz := fs.Int("profile-hz", 999, "the profile row's sampling rate (per CPU)")
	profileSecs := fs.Float64("profile-seconds", 0, "length of each profile run (default 2, 0.5 with --quick)")
	headers := fs.String("headers", "/var/tmp/bpftape-bench/headers", "kernel headers for BCC (BCC_KERNEL_SOURCE)")
	rounds := fs.Int("rounds", 0, "rounds (default 5, 2 with --quick)")
	events := fs.Int64("events", 0, "iterations per thread per run (default 1000000, 100000 with --quick)")
	only := fs.String("only", "", "comma-separated parts to run: uprobe,uretprobe,usdt,tracepoint,ustack,profile,chain,1t,mt,reccpu,ctxsw,soak,ready,replay,progtime (default all)")
	skipReplay := fs.Bool("skip-replay", false, "skip the replay benchmark")
	replayRepeats := fs.Int("replay-repeats", 0, "replay: runs of each replay command, the median reported (default 3, 1 with --quick)")
	stackEvents := fs.Int64("stack-events", 0, "replay: events of the recorded capture with user stacks (default 10000000, 200000 with --quick)")
	node := fs.String("node", "node", "replay: node, to run DuckDB")
	duckJS := fs.String("duckdb-js", "bench/duckdb_replay.js", "replay: the DuckDB side of the verbs")
	nodeModules := fs.String("node-modules", "testdata/interop/node_modules", "replay: where @duckdb/node-api is installed (NODE_PATH)")
	recEvents := fs.Int64("reccpu-events", 0, "reccpu: iterations per thread per run (default 2000000, 100000 with --quick)")
	recRounds := fs.Int("reccpu-rounds", 0, "reccpu: rounds (default 8, 2 with --quick)")
	var recVariants []recVariant
	fs.Func("reccpu-variant", "reccpu: NAME[:BIN[:K=V,...]], a bpftape binary (default --bpftape) and environment to measure; repeat it for each (default: the time column's encoders)", func(s string) error {
		v, err := parseRecVariant(s)
		recVariants = append(recVariants, v)
		return err
	})
	fs.Parse(args)

	c := config{quick: *quick, rounds: 5, events: 1_000_000, tpEvents: 1_000_000, soakSeconds: 10,
		profileHz: *profileHz, profileSecs: 2,
		readyRounds: 5, readyIters: 10_000, replayEvents: 100_000_000, perfEvents: 10_000_000, stackEvents: 10_000_000,
		replayRepeats: 3, skipReplay: *skipReplay, idleWindow: time.Second,
		recEvents: 2_000_000, recRounds: 8, recVariants: defaultRecVariants}
	if c.quick {
		c.recEvents, c.recRounds = 100_000, 2
		c.rounds, c.events, c.tpEvents, c.soakSeconds = 2, 100_000, 100_000, 2
		c.profileSecs = 0.5
		c.readyRounds, c.readyIters = 2, 1000
		c.replayEvents, c.perfEvents, c.replayRepeats = 2_000_000, 300_000, 1
		c.stackEvents = 200_000
		c.idleWindow = 300 * time.Millisecond
	}
	if *rounds > 0 {
		c.rounds = *rounds
	}
	if *events > 0 {
		c.events, c.tpEvents = *events, *events
	}
	if *replayRepeats > 0 {
		c.replayRepeats = *replayRepeats
	}
	if *stackEvents > 0 {
		c.stackEvents = *stackEvents
	}
	if *recEvents > 0 {
		c.recEvents = *recEvents
	}
	if *recRounds > 0 {
		c.recRounds = *recRounds
	}
	if len(recVariants) > 0 {
		c.recVariants = recVariants
	}
	if *profileSecs > 0 {
		c.profileSecs = *profileSecs
	}
	if *only != "" {
		c.only = map[string]bool{}
		for _, s := range strings.Split(*only, ",") {
			c.only[strings.TrimSpace(s)] = true
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	d := &driver{cfg: c, work: *work, self: self, launch: *launch, bpftape: abs(*bpftapeBin), workload: abs(*wl),
		bccScript: abs(*bccScript), bccWrap: abs(*bccWrap), bccProf: *bccProf, headers: *headers, procs: map[*proc]bool{},
		node: *node, duckJS: abs(*duckJS), nodeModules: abs(*nodeModules),
		log: os.Stderr, t0: time.Now()}
	if d.bccProf == "" {
		d.bccProf = "/usr/share/bcc/tools/profile"
		if _, err := os.Stat(d.bccProf); err != nil {
			d.bccProf = "/usr/sbin/profile-bpfcc"
		}
	}
	if d.workload == "" || d.launch == "" {
		return fmt.Errorf("--workload and --launch are required")
	}
	d.launch = abs(d.launch)
	if err := os.MkdirAll(d.work, 0o755); err != nil {
		return err
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		d.logf("%v: stopping the tools", sig)
		d.stopAll()
		os.Exit(130)
	}()

	res, err := d.bench()
	if err != nil {
		d.stopAll()
		return err
	}
	res.print(os.Stdout, d)
	return nil
}

func (c *config) want(part string) bool { return c.only == nil || c.only[part] }

// wantRecCPU: the reccpu part on threading 1t or mt runs when reccpu is
// wanted and, if 1t or mt is named, that threading is.
func (c *config) wantRecCPU(threads string) bool {
	if !c.want("reccpu") {
		return false
	}
	return c.only == nil || (!c.only["1t"] && !c.only["mt"]) || c.only[threads]
}

// wantRow: with --only, a workload row runs when its workload (if any is
// named) and its threading (1t, mt; if either is named) are named.
func (c *config) wantRow(w, threads string) bool {
	if c.only == nil {
		return true
	}
	anyW := false
	for _, w := range wdefs {
		anyW = anyW || c.only[w.name]
	}
	anyT := c.only["1t"] || c.only["mt"]
	if !anyW && !anyT {
		return false
	}
	return (!anyW || c.only[w]) && (!anyT || c.only[threads])
}

func abs(p string) string {
	if p == "" {
		return ""
	}
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}
