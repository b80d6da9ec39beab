package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// The reccpu part: bpftape record alone on the uprobe workload, one
// session per run, its variants alternating run by run (A B A B ..., the
// order rotating each round), for what the recorder costs the user: the
// user+sys CPU of the bpftape record process from ready to exit over the
// events it recorded, on 1 and on all workload threads.

// recVariant is one bpftape build or setting the reccpu part measures:
// bin (empty: --bpftape) run with env added to the environment.
type recVariant struct {
	name string
	bin  string
	env  []string
}

// defaultRecVariants compare the time column's encoders: zstdtime (the
// default) and klauspost's fastest level (format's timeColumnZstd).
var defaultRecVariants = []recVariant{
	{name: "zstdtime", env: []string{"BPFTAPE_BENCH_TIME_ZSTD=zstdtime"}},
	{name: "klauspost-fastest", env: []string{"BPFTAPE_BENCH_TIME_ZSTD=fastest"}},
}

// parseRecVariant reads --reccpu-variant NAME[:BIN[:K=V,K=V...]].
func parseRecVariant(s string) (recVariant, error) {
	f := strings.SplitN(s, ":", 3)
	v := recVariant{name: f[0]}
	if v.name == "" {
		return v, fmt.Errorf("--reccpu-variant %q: no name", s)
	}
	if len(f) > 1 && f[1] != "" {
		v.bin = abs(f[1])
	}
	if len(f) > 2 && f[2] != "" {
		for _, kv := range strings.Split(f[2], ",") {
			if !strings.Contains(kv, "=") {
				return v, fmt.Errorf("--reccpu-variant %q: %q is not K=V", s, kv)
			}
			v.env = append(v.env, kv)
		}
	}
	return v, nil
}

// recRun is one run of one variant.
type recRun struct {
	cpuNs               int64 // bpftape record's user+sys from ready to exit
	generated, recorded int64
	lost                int64 // reported by bpftape
	bytes               int64 // the capture's size
	err                 string
}

// perEvent is the run's recorder CPU per recorded event, false if the run
// failed or recorded nothing. A run that lost events counts (with all
// workload threads on a 2-CPU machine the recorder falls behind now and
// then): the table shows what was lost.
func (r recRun) perEvent() (float64, bool) {
	if r.err != "" || r.recorded <= 0 {
		return 0, false
	}
	return float64(r.cpuNs) / float64(r.recorded), true
}

// recCPURow is the reccpu part on one threading.
type recCPURow struct {
	threads  string
	events   int64 // per thread per run
	variants []string
	runs     map[string][]recRun // by variant, in round order
}

// perEvent is variant v's CPU per event in each round that measured it.
func (r *recCPURow) perEvent(v string) []float64 {
	var xs []float64
	for _, run := range r.runs[v] {
		if x, ok := run.perEvent(); ok {
			xs = append(xs, x)
		}
	}
	return xs
}

// ratios is variant v against the first variant, round by round (the two
// ran next to each other), over the rounds where both measured.
func (r *recCPURow) ratios(v string) []float64 {
	base := r.runs[r.variants[0]]
	var qs []float64
	for i, run := range r.runs[v] {
		if i >= len(base) {
			break
		}
		x, ok1 := run.perEvent()
		b, ok2 := base[i].perEvent()
		if ok1 && ok2 && b > 0 {
			qs = append(qs, x/b)
		}
	}
	return qs
}

func (d *driver) recCPU(threads, cpus string, n int) *recCPURow {
	c := &d.cfg
	r := &recCPURow{threads: threads, events: c.recEvents, runs: map[string][]recRun{}}
	idx := map[string]recVariant{}
	for _, v := range c.recVariants {
		r.variants = append(r.variants, v.name)
		idx[v.name] = v
	}
	for round := 0; round < c.recRounds; round++ {
		msg := "  round:"
		for _, name := range rotate(r.variants, round) {
			run := d.recRun(idx[name], cpus, n, c.recEvents)
			r.runs[name] = append(r.runs[name], run)
			if x, ok := run.perEvent(); ok {
				msg += fmt.Sprintf(" %s %.1f ns/event", name, x)
				if run.recorded != run.generated {
					msg += fmt.Sprintf(" (%d of %d recorded, %d lost)", run.recorded, run.generated, run.lost)
				}
				msg += ";"
			} else {
				msg += fmt.Sprintf(" %s failed (%d of %d recorded) %s;", name, run.recorded, run.generated, run.err)
			}
		}
		d.logf("%s", msg)
	}
	return r
}

func (d *driver) recRun(v recVariant, cpus string, n int, events int64) recRun {
	run := recRun{recorded: -1, lost: -1}
	bin := filepath.Join(d.work, "bin", "workload.reccpu-"+v.name)
	if _, err := os.Stat(bin); err != nil {
		src, err := os.ReadFile(d.workload)
		if err == nil {
			err = os.WriteFile(bin, src, 0o755)
		}
		if err != nil {
			run.err = err.Error()
			return run
		}
	}
	wl, err := d.startWorkload(bin, cpus, n, "call", events, 0)
	if err != nil {
		run.err = err.Error()
		return run
	}
	s, err := d.startSessionOf(bpftape, []probe{wdefs[0].probe(bin)}, 0, false, v)
	if err != nil {
		wl.kill()
		run.err = err.Error()
		return run
	}
	res, werr := wl.run()
	err = d.stopSession(s)
	run.generated, run.recorded, run.lost, run.cpuNs, run.bytes = res.events, s.recorded, s.toolLost, s.cpuTotal, s.bytes
	switch {
	case werr != nil:
		run.err = werr.Error()
	case err != nil:
		run.err = err.Error()
	}
	return run
}

func printRecCPU(w io.Writer, rows []*recCPURow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\nRecorder CPU per event: bpftape record alone on the uprobe workload, a session per run, the variants alternating\n")
	fmt.Fprintf(w, "run by run; user+sys of bpftape record from ready to exit / events recorded, median [min–max] over rounds; a run\n")
	fmt.Fprintf(w, "counts if it did not fail; lost: the events the runs lost in all. Ratio: against the first variant, round by round.\n")
	t := &table{head: []string{"threads", "variant", "recorder CPU ns/event", "rounds", "events/run", "lost", "bytes/event", "ratio per round"},
		left: map[int]bool{0: true, 1: true}}
	var errs []string
	for _, r := range rows {
		for i, v := range r.variants {
			xs := r.perEvent(v)
			var lost, bytes, recorded int64
			for _, run := range r.runs[v] {
				lost += max(run.lost, 0)
				if run.bytes > 0 && run.recorded > 0 {
					bytes += run.bytes
					recorded += run.recorded
				}
				if run.err != "" {
					errs = append(errs, fmt.Sprintf("reccpu %s %s: %s", r.threads, v, run.err))
				}
			}
			q := "-"
			if i > 0 {
				q = spread(r.ratios(v), func(x float64) string { return fmt.Sprintf("%.3f×", x) })
			}
			name := ""
			if i == 0 {
				name = r.threads
			}
			bpe := "-"
			if recorded > 0 {
				bpe = fmt.Sprintf("%.3f", float64(bytes)/float64(recorded))
			}
			t.add(name, v, spread(xs, num), fmt.Sprintf("%d/%d", len(xs), len(r.runs[v])),
				count(r.events*int64(threadsOf(r.threads))), count(lost), bpe, q)
		}
	}
	t.print(w)
	for _, e := range errs {
		fmt.Fprintf(w, "  %s\n", e)
	}
}

// threadsOf reads "2T" as 2.
func threadsOf(s string) int {
	n := 0
	fmt.Sscanf(s, "%dT", &n)
	return max(n, 1)
}

func recNames(vs []recVariant) string {
	var names []string
	for _, v := range vs {
		names = append(names, v.name)
	}
	return strings.Join(names, ", ")
}
