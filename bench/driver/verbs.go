package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The replay verbs: every verb of bpftape timed on the synthesized capture
// (cfg.replayEvents) and on a recorded one with user stacks
// (cfg.stackEvents), each against hist on the same capture in the same
// rounds, and the questions DuckDB can answer asked in SQL of the Parquet
// export of the same capture (bench/duckdb_replay.js).

// capNames are the probes and fields the verbs read in one capture: an
// entry probe with an integer field, its return probe with one.
// stack names the entry's stack field, if it has one.
type capNames struct{ entry, field, ret, retField, stack string }

// verbKind says which target a verb is held to.
type verbKind int

const (
	verbMeta     verbKind = iota // info, count: the footer; ≤ 50 ms on the big capture
	verbHist                     // the baseline
	verbAnalysis                 // ≥ 0.5× hist's events/s per core
	verbOutput                   // events, export: their own ratio to hist
)

// verbDef is one verb and how it is called.
type verbDef struct {
	name     string
	kind     verbKind
	minRatio float64 // to hist's events/s per core (0: none)
	question string  // the DuckDB question it answers ("" none)
	stacks   bool    // only on a capture with stacks
	// args are the verb's arguments after the binary; file is the capture,
	// out a scratch file for a verb that must write one.
	args func(n capNames, file, out string) []string
	// written, if set, is the file the verb writes given out, whose size
	// the table reports.
	written func(out string) string
	// reads, if set, is what the verb decodes of the capture, a pass
	// each: its decoding floor (floor.go).
	reads func(n capNames) []floorPass
}

// reads1 is a verbDef.reads of one pass of the given columns.
func reads1(cols func(n capNames) []string) func(n capNames) []floorPass {
	return func(n capNames) []floorPass { return []floorPass{{cols: cols(n)}} }
}

// readsEvery is the verbDef.reads of a verb that decodes every column.
func readsEvery(capNames) []floorPass { return []floorPass{{all: true}} }

// label is the verb as the tables print it: its arguments without the file.
func (v verbDef) label(n capNames) string {
	const file, out = "\x00f", "\x00o"
	var as []string
	for _, a := range v.args(n, file, out) {
		switch {
		case a == file:
		case strings.HasPrefix(a, out):
			as = append(as, "OUT"+strings.TrimPrefix(a, out))
		default:
			as = append(as, a)
		}
	}
	return strings.Join(as, " ")
}

var replayVerbs = []verbDef{
	{name: "info", kind: verbMeta, args: func(n capNames, f, _ string) []string { return []string{"info", f} }},
	{name: "count", kind: verbMeta, question: "count", args: func(n capNames, f, _ string) []string { return []string{"count", f} }},
	{name: "count --by comm", kind: verbAnalysis, minRatio: 0.5, question: "count_comm",
		reads: reads1(func(capNames) []string { return []string{"comm"} }),
		args:  func(n capNames, f, _ string) []string { return []string{"count", "--by", "comm", f} }},
	{name: "hist", kind: verbHist, question: "hist",
		reads: reads1(func(n capNames) []string { return []string{field(n.entry, n.field)} }),
		args:  func(n capNames, f, _ string) []string { return []string{"hist", f, n.entry, n.field} }},
	{name: "latency", kind: verbAnalysis, minRatio: 0.5, question: "latency",
		reads: reads1(func(capNames) []string { return []string{"time", "tid"} }),
		args:  func(n capNames, f, _ string) []string { return []string{"latency", f, n.entry, n.ret} }},
	{name: "requests", kind: verbAnalysis, minRatio: 0.5,
		reads: reads1(func(n capNames) []string {
			return []string{field(n.entry, n.field), field(n.ret, n.retField), "tid"}
		}),
		args: func(n capNames, f, _ string) []string {
			return []string{"requests", f, n.entry, n.field, n.ret, n.retField}
		}},
	{name: "compare", kind: verbAnalysis, minRatio: 0.5,
		reads: reads1(func(n capNames) []string { return []string{field(n.entry, n.field), field(n.ret, n.retField)} }),
		args: func(n capNames, f, _ string) []string {
			return []string{"compare", f, n.entry, n.field, n.ret, n.retField}
		}},
	{name: "stacks", kind: verbAnalysis, minRatio: 0.5, stacks: true,
		reads: reads1(func(n capNames) []string { return []string{field(n.entry, n.stack), "pid"} }),
		args:  func(n capNames, f, _ string) []string { return []string{"stacks", f, n.entry} }},
	{name: "heatmap", kind: verbAnalysis, minRatio: 0.5, question: "heatmap",
		reads: reads1(func(n capNames) []string { return []string{"time", field(n.entry, n.field)} }),
		args:  func(n capNames, f, _ string) []string { return []string{"heatmap", f, n.entry, n.field} }},
	{name: "report", kind: verbAnalysis, minRatio: 0.5, reads: reportReads, args: func(n capNames, f, _ string) []string { return []string{"report", f} }},
	{name: "events", kind: verbOutput, minRatio: 0.1,
		reads: reads1(func(capNames) []string { return []string{"time", "pid", "tid", "comm", everyField, everyStack} }),
		args:  func(n capNames, f, _ string) []string { return []string{"events", f} }},
	{name: "export -f csv", kind: verbOutput, minRatio: 0.1, reads: readsEvery,
		args: func(n capNames, f, _ string) []string { return []string{"export", "-f", "csv", f} }},
	{name: "export -f parquet", kind: verbOutput, minRatio: 0.2, reads: readsEvery,
		args: func(n capNames, f, out string) []string {
			return []string{"export", "-f", "parquet", f, "-o", out, "--force"}
		}},
	{name: "export -f pprof", kind: verbOutput, stacks: true,
		reads: reads1(func(n capNames) []string { return []string{field(n.entry, n.stack), "pid", "tid", "comm", "time"} }),
		args: func(n capNames, f, out string) []string {
			return []string{"export", "-f", "pprof", f, "--probe", n.entry, "-o", out + ".pb.gz", "--force"}
		},
		written: func(out string) string { return out + ".pb.gz" }},
	{name: "export -f perfetto", kind: verbOutput, stacks: true,
		reads: func(capNames) []floorPass { return []floorPass{{cols: []string{"tid"}}, {all: true}} },
		args: func(n capNames, f, out string) []string {
			return []string{"export", "-f", "perfetto", f, "-o", out + ".pftrace", "--force"}
		},
		written: func(out string) string { return out + ".pftrace" }},
}

// reportReads is what the report decodes: the time and every field but
// stacks (and the thread, where it pairs an entry probe with its return),
// then the stacks and pids.
func reportReads(n capNames) []floorPass {
	first := floorPass{cols: []string{"time", everyField}}
	if n.ret == n.entry+":return" {
		first.cols = append(first.cols, "tid")
	}
	if n.stack == "" {
		return []floorPass{first}
	}
	return []floorPass{first, {cols: []string{everyStack, "pid"}}}
}

// duckQuestions are the questions of duckdb_replay.js, in its order, with
// what each asks.
var duckQuestions = []struct{ name, what string }{
	{"count", "count(*) GROUP BY probe"},
	{"count_comm", "count(*) GROUP BY probe, comm"},
	{"hist", "log2 slot of the field, count(*) GROUP BY slot"},
	{"latency", "LEAD(probe), LEAD(time) OVER (PARTITION BY tid ORDER BY time): entry then return, log2 slot of the difference"},
	{"heatmap", "min/max(time) for a 100-column step, then count(*) GROUP BY column, log2 slot"},
}

// verbRun is one verb's runs on one capture.
type verbRun struct {
	def   verbDef
	label string
	run   replayRun
	bytes int64 // the size of what it wrote (verbDef.written)
	// floor is the CPU seconds decoding what it reads takes alone
	// (floorBench), 0 when not measured; floorErr why it failed.
	floor    float64
	floorErr string
}

// verbCap is one capture with its verbs' runs and DuckDB's answers.
type verbCap struct {
	what  string // the capture, as the tables name it
	short string // as the targets name it
	info  capInfo
	names capNames
	big   bool // the cfg.replayEvents capture: the ms and RSS targets
	runs  []verbRun
	duck  *duckResult
}

func (vc *verbCap) find(name string) *verbRun {
	for i := range vc.runs {
		if vc.runs[i].def.name == name {
			return &vc.runs[i]
		}
	}
	return nil
}

// histRatio is v's events/s per core over hist's on the same capture.
func (vc *verbCap) histRatio(v *verbRun) (float64, bool) {
	h := vc.find("hist")
	if h == nil || v == nil {
		return 0, false
	}
	return ratio(v.run.ratePerCore(), h.run.ratePerCore())
}

// duckResult is what duckdb_replay.js printed.
type duckResult struct {
	version  string
	threads  int
	maxrssKB int64
	q        map[string]*duckQuery
	parquet  int64 // bytes of the Parquet file it read
	err      string
}

type duckQuery struct {
	wall, cpu []float64 // seconds per repeat
	rows      int64
}

// parseDuck reads duckdb_replay.js's JSON lines.
func parseDuck(out string) (*duckResult, error) {
	r := &duckResult{q: map[string]*duckQuery{}}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var m struct {
			DuckDB   *string   `json:"duckdb"`
			Threads  any       `json:"threads"`
			Q        string    `json:"q"`
			Wall     []float64 `json:"wall"`
			CPU      []float64 `json:"cpu"`
			Rows     int64     `json:"rows"`
			MaxRSSKB int64     `json:"maxrss_kb"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			return nil, fmt.Errorf("duckdb_replay.js printed %q: %v", line, err)
		}
		switch {
		case m.DuckDB != nil:
			r.version = *m.DuckDB
			switch t := m.Threads.(type) {
			case float64:
				r.threads = int(t)
			case string:
				r.threads = int(atoi64(t))
			}
		case m.Q != "":
			if len(m.Wall) == 0 || len(m.Wall) != len(m.CPU) {
				return nil, fmt.Errorf("duckdb_replay.js: question %s: %d wall and %d CPU times", m.Q, len(m.Wall), len(m.CPU))
			}
			r.q[m.Q] = &duckQuery{wall: m.Wall, cpu: m.CPU, rows: m.Rows}
		case m.MaxRSSKB > 0:
			r.maxrssKB = m.MaxRSSKB
		}
	}
	if r.version == "" {
		return nil, fmt.Errorf("duckdb_replay.js printed no version line: %s", tail(out))
	}
	return r, nil
}

// duckRatio is bpftape's speed over DuckDB's on v's question, by wall time
// and by CPU time (DuckDB's time / bpftape's).
func duckRatio(v *verbRun, dq *duckQuery) (wall, cpu float64, ok bool) {
	if v == nil || dq == nil || len(v.run.wall) == 0 || len(dq.wall) == 0 {
		return 0, 0, false
	}
	bw, bc := median(v.run.wall), median(v.run.cpu)
	if bw <= 0 || bc <= 0 {
		return 0, 0, false
	}
	return median(dq.wall) / bw, median(dq.cpu) / bc, true
}

// verbsBench times every verb on path (events events) cfg.replayRepeats
// times, the verbs and their decoding floors interleaved round by round so
// that drift on a shared machine falls alike on each and on hist, then
// asks DuckDB the same questions of the Parquet export.
func (d *driver) verbsBench(vc *verbCap, path string, stacks bool) {
	events := vc.info.recorded
	dir, err := os.MkdirTemp(d.work, "verbs-")
	if err != nil {
		vc.info.err = err.Error()
		return
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "export.parquet")
	for _, v := range replayVerbs {
		if v.stacks && !stacks {
			continue
		}
		vc.runs = append(vc.runs, verbRun{def: v, label: v.label(vc.names), run: replayRun{what: "bpftape " + v.label(vc.names), events: events}})
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		vc.info.err = err.Error()
		return
	}
	defer null.Close()
	floors := newFloorRun(vc)
	for i := 0; i < d.cfg.replayRepeats; i++ {
		for j := range vc.runs {
			vr := &vc.runs[j]
			if vr.run.err != "" {
				continue
			}
			d.timeOnce(&vr.run, null, append([]string{d.bpftape}, vr.def.args(vc.names, path, out)...))
		}
		d.floorRound(floors, path)
	}
	floors.finish(vc)
	for j := range vc.runs {
		if vr := &vc.runs[j]; vr.def.written != nil && vr.run.err == "" {
			if st, err := os.Stat(vr.def.written(out)); err == nil {
				vr.bytes = st.Size()
			}
		}
	}
	if p := vc.find("export -f parquet"); p == nil || p.run.err != "" || len(p.run.wall) == 0 {
		vc.duck = &duckResult{err: "no Parquet export to read"}
		return
	}
	vc.duck = d.duckBench(out, vc.names, dir)
}

// timeOnce runs a replay command once, its output to out, and adds its wall
// time, CPU and peak RSS to r (or its error).
func (d *driver) timeOnce(r *replayRun, out *os.File, args []string) {
	p, err := d.startProc(r.what, nil, out, args...)
	if err != nil {
		r.err = err.Error()
		return
	}
	p.wait()
	d.untrack(p)
	wall := p.exitAt.Sub(p.start).Seconds()
	if !p.haveUsage || p.status.ExitStatus() != 0 {
		r.err = fmt.Sprintf("%s failed (%v): %s", r.what, p.status, tail(p.stderr.String()))
		return
	}
	r.wall = append(r.wall, wall)
	r.cpu = append(r.cpu, float64(p.cpuNs)/1e9)
	r.maxrssKB = max(r.maxrssKB, p.maxrssKB)
	d.logf("  %s, %d events: %.3fs wall, %.3fs CPU, %d MiB: %.2fM events/s", r.what, r.events, wall, float64(p.cpuNs)/1e9,
		p.maxrssKB>>10, float64(r.events)/wall/1e6)
}

// duckBench runs duckdb_replay.js on the Parquet file with d.ncpu threads.
func (d *driver) duckBench(parquet string, n capNames, tmp string) *duckResult {
	fail := func(err string) *duckResult { return &duckResult{err: err} }
	if _, err := os.Stat(d.duckJS); err != nil {
		return fail(err.Error())
	}
	if _, err := os.Stat(filepath.Join(d.nodeModules, "@duckdb", "node-api")); err != nil {
		return fail("@duckdb/node-api is not installed: " + err.Error())
	}
	st, err := os.Stat(parquet)
	if err != nil {
		return fail(err.Error())
	}
	d.logf("  DuckDB on %s (%d bytes), %d threads", parquet, st.Size(), d.ncpu)
	t0 := time.Now()
	p, err := d.startProc("duckdb", []string{"NODE_PATH=" + d.nodeModules}, nil,
		d.node, d.duckJS, parquet, n.entry, n.field, n.ret, fmt.Sprint(d.cfg.replayRepeats), fmt.Sprint(d.ncpu), filepath.Join(tmp, "duckdb.tmp"))
	if err != nil {
		return fail(err.Error())
	}
	p.wait()
	d.untrack(p)
	if !p.haveUsage || p.status.ExitStatus() != 0 {
		return fail(fmt.Sprintf("node %s failed (%v): %s", filepath.Base(d.duckJS), p.status, tail(p.stderr.String())))
	}
	r, err := parseDuck(p.stdout.String())
	if err != nil {
		return fail(err.Error())
	}
	r.parquet = st.Size()
	r.maxrssKB = max(r.maxrssKB, p.maxrssKB)
	for _, q := range duckQuestions {
		if dq := r.q[q.name]; dq != nil {
			d.logf("  DuckDB %s: %.3fs wall, %.3fs CPU (median of %d)", q.name, median(dq.wall), median(dq.cpu), len(dq.wall))
		}
	}
	d.logf("  DuckDB took %.1fs in all, peak RSS %d MiB", time.Since(t0).Seconds(), r.maxrssKB>>10)
	return r
}

// maxVerbRSSKiB bounds every verb's peak RSS on the big capture.
const maxVerbRSSKiB = 256 << 10

// maxMetaSeconds bounds info and count on the big capture.
const maxMetaSeconds = 0.050

// targets are vc's rows of the targets table: each verb against hist's
// events/s per core, info and count in ms and every verb's peak RSS on the
// big capture, each verb against DuckDB on its question. errs and missing
// are the capture's own (capFault): they fail or void every row.
func (vc *verbCap) targets(errs []string, missing string) []target {
	var ts []target
	add := func(t target) { ts = append(ts, t) }
	on := " (" + vc.short + ")"
	h := vc.find("hist")
	runMissing := func(r *verbRun) string {
		switch {
		case missing != "":
			return missing
		case r == nil:
			return "not run"
		case r.run.err == "" && (len(r.run.wall) == 0 || r.run.events <= 0):
			return r.label + ": not measured"
		}
		return ""
	}
	runErrs := func(rs ...*verbRun) []string {
		es := append([]string(nil), errs...)
		for _, r := range rs {
			if r != nil {
				es = append(es, r.run.err)
			}
		}
		return es
	}
	for i := range vc.runs {
		v := &vc.runs[i]
		if v.def.minRatio > 0 {
			m := runMissing(v)
			if m == "" {
				m = runMissing(h)
			}
			add(runFault(fmt.Sprintf("%s ≥ %.1f× hist's events/s per core%s", v.label, v.def.minRatio, on), runErrs(v, h), m, func() target {
				q, ok := vc.histRatio(v)
				if !ok {
					return notApplicable("hist's rate is not positive")
				}
				got := fmt.Sprintf("%.2f× (%.2fM vs %.2fM events/s per core)", q, v.run.ratePerCore()/1e6, h.run.ratePerCore()/1e6)
				if f, ok := vc.floorRatio(v); ok && q < v.def.minRatio {
					// Out of reach, or not: what decoding alone allows.
					got += fmt.Sprintf("; decoding alone %.2f×", f)
				}
				return pass(got, q >= v.def.minRatio)
			}))
		}
		if v.def.kind == verbMeta && vc.big {
			add(runFault(fmt.Sprintf("%s ≤ %.0f ms%s", v.label, maxMetaSeconds*1e3, on), runErrs(v), runMissing(v), func() target {
				x := median(v.run.wall)
				lo, hi := minMax(v.run.wall)
				return pass(fmt.Sprintf("%.1f ms median [%.1f–%.1f] wall", x*1e3, lo*1e3, hi*1e3), x <= maxMetaSeconds)
			}))
		}
	}
	for i := range vc.runs {
		v := &vc.runs[i]
		if v.def.question == "" {
			continue
		}
		var des []string
		m := runMissing(v)
		var dq *duckQuery
		switch {
		case vc.duck == nil:
			if m == "" {
				m = "DuckDB: not run"
			}
		case vc.duck.err != "":
			des = append(des, "DuckDB: "+vc.duck.err)
		default:
			if dq = vc.duck.q[v.def.question]; dq == nil && m == "" {
				m = "DuckDB: no answer to " + v.def.question
			}
		}
		add(runFault(fmt.Sprintf("%s ≥ DuckDB's speed on the same question%s", v.label, on), append(runErrs(v), des...), m, func() target {
			qw, qc, ok := duckRatio(v, dq)
			if !ok {
				return notApplicable("no positive time")
			}
			return pass(fmt.Sprintf("%.2f× wall (%.3f vs %.3f s), %.2f× CPU", qw, median(v.run.wall), median(dq.wall), qc), qw >= 1)
		}))
	}
	if vc.big {
		var es []string
		worst, m := -1, missing
		var over []string
		for i := range vc.runs {
			v := &vc.runs[i]
			es = append(es, v.run.err)
			if v.run.maxrssKB <= 0 {
				if m == "" && v.run.err == "" {
					m = v.label + ": no peak RSS"
				}
				continue
			}
			if worst < 0 || v.run.maxrssKB > vc.runs[worst].run.maxrssKB {
				worst = i
			}
			if v.run.maxrssKB > maxVerbRSSKiB {
				over = append(over, fmt.Sprintf("%s %s", v.label, mib(v.run.maxrssKB)))
			}
		}
		if worst < 0 && m == "" {
			m = "no verb ran"
		}
		add(runFault(fmt.Sprintf("peak RSS of every verb ≤ %d MiB%s", maxVerbRSSKiB>>10, on), append(append([]string(nil), errs...), es...), m, func() target {
			w := vc.runs[worst]
			s := fmt.Sprintf("largest %s MiB (%s)", mib(w.run.maxrssKB), w.label)
			if len(over) > 0 {
				s += "; over: " + strings.Join(over, ", ")
			}
			return pass(s, len(over) == 0)
		}))
	}
	return ts
}

// printVerbs prints the verbs table and DuckDB's, and adds the errors.
func printVerbs(w io.Writer, vcs []*verbCap, errs *[]string) {
	if len(vcs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nReplay verbs (output to /dev/null, parquet to a scratch file; the verbs interleaved round by round; median [min–max] over\n")
	fmt.Fprintf(w, "rounds; M events/s = events in the capture / wall time, per core = / user+sys time; × hist = per core, hist on the same\n")
	fmt.Fprintf(w, "capture in the same rounds; GOMAXPROCS unset: bpftape may use every core; decoding × = hist's CPU over the CPU that\n")
	fmt.Fprintf(w, "decoding the columns the verb reads takes alone, read ahead as the verbs read, with no analysis: the most × hist\n")
	fmt.Fprintf(w, "it could reach)\n")
	t := &table{head: []string{"capture", "verb", "events", "wall s", "M events/s", "M events/s/core", "× hist", "decoding ×", "peak RSS MiB",
		"DuckDB wall s", "DuckDB CPU s", "bpftape/DuckDB wall", "CPU"},
		left: map[int]bool{0: true, 1: true}}
	for _, vc := range vcs {
		if vc.info.err != "" {
			*errs = append(*errs, "replay verbs input "+vc.what+": "+vc.info.err)
		}
		first := true
		for i := range vc.runs {
			v := &vc.runs[i]
			if v.run.err != "" {
				*errs = append(*errs, "replay verbs, "+vc.short+": "+v.run.err)
			}
			name := ""
			if first {
				name = vc.short
				first = false
			}
			if len(v.run.wall) == 0 {
				t.add(name, v.label, count(v.run.events), "failed", "-", "-", "-", "-", "-", "-", "-", "-", "-")
				continue
			}
			hr, fr := "-", "-"
			if q, ok := vc.histRatio(v); ok {
				hr = fmt.Sprintf("%.2f×", q)
			}
			if q, ok := vc.floorRatio(v); ok {
				fr = fmt.Sprintf("%.2f×", q)
			}
			if v.floorErr != "" {
				*errs = append(*errs, "replay verbs, "+vc.short+", decoding "+v.label+" alone: "+v.floorErr)
			}
			dw, dc, rw, rc := "-", "-", "-", "-"
			if vc.duck != nil && vc.duck.err == "" && v.def.question != "" {
				if dq := vc.duck.q[v.def.question]; dq != nil {
					dw, dc = spread(dq.wall, secs), spread(dq.cpu, secs)
					if qw, qc, ok := duckRatio(v, dq); ok {
						rw, rc = fmt.Sprintf("%.2f×", qw), fmt.Sprintf("%.2f×", qc)
					}
				}
			}
			t.add(name, v.label, count(v.run.events), spread(v.run.wall, secs), fmt.Sprintf("%.2f", v.run.rate()/1e6),
				fmt.Sprintf("%.2f", v.run.ratePerCore()/1e6), hr, fr, mib(v.run.maxrssKB), dw, dc, rw, rc)
		}
	}
	t.print(w)
	for _, vc := range vcs {
		fmt.Fprintf(w, "%s: %s, %s events, %.2f bytes/event", vc.short, vc.what, count(vc.info.recorded), vc.info.perEvent())
		if vc.info.lost > 0 {
			fmt.Fprintf(w, ", %s lost while recording", count(vc.info.lost))
		}
		for i := range vc.runs {
			if v := &vc.runs[i]; v.bytes > 0 && vc.info.bytes > 0 {
				fmt.Fprintf(w, "; %s wrote %s bytes (%.3g× the capture)", v.def.name, count(v.bytes), float64(v.bytes)/float64(vc.info.bytes))
			}
		}
		fmt.Fprintln(w)
	}
	var duck *duckResult
	for _, vc := range vcs {
		if vc.duck != nil && vc.duck.err != "" {
			*errs = append(*errs, "replay verbs, DuckDB on "+vc.short+": "+vc.duck.err)
		}
		if vc.duck != nil && vc.duck.err == "" && duck == nil {
			duck = vc.duck
		}
	}
	if duck != nil {
		fmt.Fprintf(w, "DuckDB %s (node, @duckdb/node-api, in-memory database, SET threads = %d: multi-threaded, every core; bpftape also\n", duck.version, duck.threads)
		fmt.Fprintf(w, "unrestricted) on the Parquet export of the same capture, each query timed in the node process (its wall time, and the\n")
		fmt.Fprintf(w, "process's user+sys over it: every DuckDB thread), the Parquet file just written (page cache warm for both); bpftape's\n")
		fmt.Fprintf(w, "times are whole processes (start, open, footer). bpftape/DuckDB = DuckDB's time / bpftape's: above 1 bpftape is faster.\n")
		for _, q := range duckQuestions {
			fmt.Fprintf(w, "  %-10s %s\n", q.name, q.what)
		}
		var parts []string
		for _, vc := range vcs {
			if vc.duck != nil && vc.duck.err == "" {
				parts = append(parts, fmt.Sprintf("%s %s MB Parquet, node peak RSS %s MiB", vc.short, num(float64(vc.duck.parquet)/1e6), mib(vc.duck.maxrssKB)))
			}
		}
		fmt.Fprintf(w, "  (%s)\n", strings.Join(parts, "; "))
	}
}
