package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
)

// replayRun is one replay command timed over some repeats.
type replayRun struct {
	what     string
	events   int64     // events in the input
	wall     []float64 // seconds per repeat
	cpu      []float64 // user+sys seconds per repeat
	maxrssKB int64
	err      string
}

func (r *replayRun) rate() float64 {
	if len(r.wall) == 0 {
		return 0
	}
	return float64(r.events) / median(r.wall)
}

func (r *replayRun) ratePerCore() float64 {
	if len(r.cpu) == 0 || median(r.cpu) == 0 {
		return 0
	}
	return float64(r.events) / median(r.cpu)
}

type capInfo struct {
	what                string
	generated, recorded int64
	lost                int64
	bytes               int64
	err                 string
}

func (c *capInfo) perEvent() float64 {
	if c.recorded <= 0 {
		return 0
	}
	return float64(c.bytes) / float64(c.recorded)
}

type replayResult struct {
	bigCap, smallCap, perfData, synthCap capInfo
	histBig, histSmall, perfScript       replayRun
	histSynth                            replayRun
	// verbs: every verb on the synthesized capture and on a recorded one
	// with user stacks (verbs.go).
	verbs []*verbCap
}

// replayBench times bpftape hist on a synthesized capture of
// cfg.replayEvents events of formattest's seed-like stream (kept in
// $BENCH_DIR and reused while the writer that made it is unchanged), and,
// on the uprobe workload recorded with perf record and with bpftape
// (cfg.perfEvents each, one thread), perf script against bpftape hist.
func (d *driver) replayBench() *replayResult {
	rr := &replayResult{}
	cpu := fmt.Sprint(d.ncpu - 1)
	w := wdefs[0]

	// record records events events of the uprobe workload with tool: by
	// default the uprobe row's probe; probes, when given, are on every
	// call (events / len(probes) calls).
	record := func(tool string, events int64, threads int, ci *capInfo, probes ...probe) (s *session, cleanup func()) {
		cleanup = func() {}
		cpus := cpu
		if threads > 1 {
			cpus = fmt.Sprintf("0-%d", d.ncpu-1)
		}
		ci.what = fmt.Sprintf("%s, uprobe workload, %d thread(s)", toolTitle[tool], threads)
		perCall := int64(1)
		if len(probes) == 0 {
			probes = []probe{w.probe(d.copyOf(tool))}
		} else {
			perCall = int64(len(probes))
			var specs []string
			for _, p := range probes {
				specs = append(specs, p.bpftapeFields())
			}
			ci.what = fmt.Sprintf("%s %s, call workload, %d thread(s)", toolTitle[tool], strings.Join(specs, " "), threads)
		}
		wl, err := d.startWorkload(d.copyOf(tool), cpus, threads, w.mode, events/perCall/int64(threads), 0)
		if err != nil {
			ci.err = err.Error()
			return nil, cleanup
		}
		s, err = d.startSessionKeep(tool, probes, 0, true)
		if err != nil {
			wl.kill()
			ci.err = err.Error()
			return nil, cleanup
		}
		cleanup = func() { os.RemoveAll(s.dir) }
		s.sample()
		res, err := wl.run()
		if err != nil {
			ci.err = err.Error()
		}
		if err := d.stopSession(s); err != nil && ci.err == "" {
			ci.err = err.Error()
		}
		ci.generated, ci.recorded, ci.bytes = res.events*perCall, s.recorded, s.bytes
		ci.lost = max(s.toolLost, ci.generated-s.recorded)
		d.logf("  %s: %d events recorded of %d, %d bytes", tool, s.recorded, ci.generated, s.bytes)
		return s, cleanup
	}

	n := d.cfg.replayEvents
	d.logf("  a %d-event synthesized seed-like capture", n)
	// The synthesized capture is the input of the big hist run; its
	// bytes/event target is the synthesized stream's (synthCap), and the
	// recorded workload's target reads smallCap.
	rr.bigCap.what = "synthesized seed-like stream (format.Writer, zstd)"
	rr.synthCap.what = rr.bigCap.what
	synth, reused, err := d.synthCapture(n)
	if err != nil {
		rr.bigCap.err = err.Error()
	} else {
		st, err := os.Stat(synth)
		if err != nil {
			rr.bigCap.err = err.Error()
		} else {
			if reused {
				rr.bigCap.what += ", reused"
			}
			rr.bigCap.generated, rr.bigCap.recorded, rr.bigCap.bytes = n, n, st.Size()
			rr.synthCap.generated, rr.synthCap.recorded, rr.synthCap.bytes = n, n, st.Size()
			// Every verb, hist among them: the big hist row is that run.
			vc := &verbCap{what: rr.bigCap.what, short: count(n) + " synthesized", info: rr.bigCap, big: true,
				names: capNames{entry: "rx", field: "arg2", ret: "rx_ret", retField: "retval"}}
			d.logf("  every verb on the synthesized capture, %d rounds", d.cfg.replayRepeats)
			d.verbsBench(vc, synth, false)
			rr.verbs = append(rr.verbs, vc)
			if h := vc.find("hist"); h != nil {
				rr.histBig = h.run
				rr.histBig.what = "bpftape hist"
			}
		}
	}

	if len(rr.verbs) == 0 { // the synthesized capture failed: its verbs' targets say so
		rr.verbs = append(rr.verbs, &verbCap{what: rr.bigCap.what, short: count(n) + " synthesized", info: rr.bigCap, big: true})
	}

	d.logf("  recording %d events with perf record and with bpftape", d.cfg.perfEvents)
	pd, cleanPerf := record(perf, d.cfg.perfEvents, 1, &rr.perfData)
	if pd != nil {
		rr.perfScript = d.timeReplay("perf script", rr.perfData.recorded, "perf", "--buildid-dir", pd.buildidDir(), "script", "-i", pd.output())
	}
	cleanPerf()
	small, cleanSmall := record(bpftape, d.cfg.perfEvents, 1, &rr.smallCap)
	if small != nil {
		rr.histSmall = d.timeReplay("bpftape hist", rr.smallCap.recorded, d.bpftape, "hist", small.output(), "bench_func", "arg0")
	}
	cleanSmall()

	// A recorded capture with user stacks: bench_func's argument and user
	// stack at every call, its return value at every return.
	vc := &verbCap{short: count(d.cfg.stackEvents) + " recorded, ustack",
		names: capNames{entry: "bench_func", field: "arg0", ret: "bench_func:return", retField: "retval", stack: "ustack"}}
	d.logf("  recording %d events with user stacks with bpftape", d.cfg.stackEvents)
	bin := d.copyOf(bpftape)
	st, cleanStacks := record(bpftape, d.cfg.stackEvents, 1, &vc.info,
		probe{kind: "u", bin: bin, fn: "bench_func", ustack: true}, probe{kind: "ur", bin: bin, fn: "bench_func"})
	vc.what = vc.info.what
	if st != nil && vc.info.err == "" {
		vc.short = count(vc.info.recorded) + " recorded, ustack"
		d.logf("  every verb on the recorded capture with stacks, %d rounds", d.cfg.replayRepeats)
		d.verbsBench(vc, st.output(), true)
	}
	rr.verbs = append(rr.verbs, vc)
	cleanStacks()
	return rr
}

// synthCapture returns a capture of n events written by `driver synth`,
// kept in $BENCH_DIR (the parent of the scratch directory, which bench.sh
// deletes) as synth-N.arrow. It is reused when its key file says it was
// written whole by this very driver (the SHA-256 of this executable, which
// holds format.Writer) and it still opens with its footer; otherwise it is
// written again (about 30 s for 100M events).
func (d *driver) synthCapture(n int64) (path string, reused bool, err error) {
	dir := filepath.Dir(d.work)
	path = filepath.Join(dir, fmt.Sprintf("synth-%d.arrow", n))
	keyPath := path + ".key"
	exe, err := os.ReadFile(d.self)
	if err != nil {
		return "", false, err
	}
	sum := sha256.Sum256(exe)
	key := func(size int64) string { return fmt.Sprintf("%x %d %d\n", sum, n, size) }
	if st, err := os.Stat(path); err == nil {
		if k, err := os.ReadFile(keyPath); err == nil && string(k) == key(st.Size()) && synthValid(path) {
			d.logf("  reusing %s", path)
			return path, true, nil
		}
	}
	os.Remove(keyPath)
	tmp := path + ".tmp"
	t0 := time.Now()
	out, err := exec.Command(d.self, "synth", "-o", tmp, "-n", fmt.Sprint(n)).CombinedOutput()
	if err != nil {
		os.Remove(tmp)
		return "", false, fmt.Errorf("driver synth: %v: %s", err, out)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", false, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", false, err
	}
	if err := os.WriteFile(keyPath, []byte(key(st.Size())), 0o644); err != nil {
		return "", false, err
	}
	d.logf("  wrote %s (%d bytes) in %.1fs", path, st.Size(), time.Since(t0).Seconds())
	return path, false, nil
}

// synthValid checks that a kept capture opens as a complete synthesized one.
func synthValid(path string) bool {
	r, err := format.Open(path)
	if err != nil {
		return false
	}
	defer r.Close()
	return !r.Recovered && r.Meta.Tool == synthTool
}

const synthTool = "bpftape bench synth"

// timeReplay runs a replay command cfg.replayRepeats times with its
// output to /dev/null and records wall time, CPU and peak RSS.
func (d *driver) timeReplay(what string, events int64, args ...string) replayRun {
	r := replayRun{what: what, events: events}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		r.err = err.Error()
		return r
	}
	defer null.Close()
	for i := 0; i < d.cfg.replayRepeats; i++ {
		p, err := d.startProc(what, nil, null, args...)
		if err != nil {
			r.err = err.Error()
			return r
		}
		p.wait()
		d.untrack(p)
		wall := time.Since(p.start).Seconds()
		if !p.haveUsage || p.status.ExitStatus() != 0 {
			r.err = fmt.Sprintf("%s failed (%v): %s", what, p.status, tail(p.stderr.String()))
			return r
		}
		r.wall = append(r.wall, wall)
		r.cpu = append(r.cpu, float64(p.cpuNs)/1e9)
		r.maxrssKB = max(r.maxrssKB, p.maxrssKB)
		d.logf("  %s, %d events: %.3fs wall, %.3fs CPU, %d MiB: %.2fM events/s", what, events, wall, float64(p.cpuNs)/1e9,
			p.maxrssKB>>10, float64(events)/wall/1e6)
	}
	return r
}

// runSynth writes a seed-like capture: three probes of a virtio-net RX/TX
// path (one integer each) on four threads, in bursts of packets whose sizes
// repeat, as format's BenchmarkWriter generates them.
func runSynth(args []string) error {
	fs := flag.NewFlagSet("synth", flag.ExitOnError)
	out := fs.String("o", "synth.arrow", "capture to write")
	n := fs.Int64("n", 1_000_000, "events")
	fs.Parse(args)
	meta := formattest.Meta()
	meta.Tool = synthTool
	return formattest.WriteFile(*out, *n, meta, format.WriterOptions{}, 0)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func minMax(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}
