package main

import (
	"fmt"
	"io"
	"strings"
)

func num(x float64) string {
	switch a := abs64(x); {
	case a < 10:
		return fmt.Sprintf("%.2f", x)
	case a < 100:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.0f", x)
}

func abs64(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// spread is "median [min–max]", or the value alone for one sample.
func spread(xs []float64, f func(float64) string) string {
	switch len(xs) {
	case 0:
		return "-"
	case 1:
		return f(xs[0])
	}
	lo, hi := minMax(xs)
	return fmt.Sprintf("%s [%s–%s]", f(median(xs)), f(lo), f(hi))
}

func secs(x float64) string { return fmt.Sprintf("%.3f", x) }

func mib(kb int64) string {
	if kb <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(kb)/1024)
}

func count(n int64) string {
	if n < 0 {
		return "-"
	}
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

type table struct {
	head []string
	rows [][]string
	left map[int]bool
}

func (t *table) add(cols ...string) { t.rows = append(t.rows, cols) }

func (t *table) print(w io.Writer) {
	width := make([]int, len(t.head))
	for i, h := range t.head {
		width[i] = len([]rune(h))
	}
	for _, r := range t.rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	line := func(cols []string) {
		var b strings.Builder
		for i, c := range cols {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i > 0 {
				b.WriteString("  ")
			}
			if t.left[i] {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(t.head)
	sep := make([]string, len(t.head))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
}

func (res *results) print(w io.Writer, d *driver) {
	c := &d.cfg
	mode := "full"
	if c.quick {
		mode = "quick (--quick: few rounds, small counts; not for comparison)"
	}
	fmt.Fprintf(w, "\nbpftape bench: %s; %d rounds alternating untraced and traced runs; %d CPUs\n", mode, c.rounds, d.ncpu)
	fmt.Fprintf(w, "%s\n", strings.Join(res.versions, "; "))
	took := res.finished.Sub(res.started).Seconds()
	fmt.Fprintf(w, "load average at start %s, at end %s (the benchmark's own threads count in it); took %.0fs\n", res.loadStart, res.loadEnd, took)
	busy := float64(res.cpuEnd.busy-res.cpuStart.busy) / 1e9
	ours := float64(res.cpuEnd.ours-res.cpuStart.ours) / 1e9
	steal := float64(res.cpuEnd.steal-res.cpuStart.steal) / 1e9
	fmt.Fprintf(w, "CPU busy %.0fs of %.0fs; the benchmark's processes %.0fs; everything else (other users, kernel threads) %.0fs = %.0f%% of the machine; hypervisor steal %.1fs\n",
		busy, took*float64(d.ncpu), ours, max(busy-ours, 0), 100*max(busy-ours, 0)/(took*float64(d.ncpu)), steal)
	fmt.Fprintf(w, "overhead = (traced - untraced loop time) / events, per thread, against the same round's untraced run;\n")
	fmt.Fprintf(w, "values are median [min–max] over rounds. Recorder CPU: the tool's user+sys after it was ready, per event it\n")
	fmt.Fprintf(w, "recorded, over all rounds [per-round min–max] (deferred work: batches flushed up to 1 s later, perf's build-id\n")
	fmt.Fprintf(w, "pass at exit); where one session serves every round (uprobe, uretprobe, USDT), its idle CPU rate (measured\n")
	fmt.Fprintf(w, "before the first round: column idle) is taken out of the time between its runs; tracepoint: a session per run.\n")
	var sampled *row
	stacks := false
	for _, r := range res.rows {
		stacks = stacks || r.stacks
		if r.sampled && sampled == nil {
			sampled = r
		}
	}
	if stacks {
		fmt.Fprintf(w, "ustack: the uprobe on bench_func, every tool (but the empty program) taking the user stack of every call.\n")
	}
	if chainRow(res.rows) != nil {
		fmt.Fprintf(w, "chain: bench_req(req), every tool recording or counting req->hdr->size, two user-memory loads away, where the\n")
		fmt.Fprintf(w, "uprobe row reads arg0 from a register; set against the uprobe row below, not in the targets.\n")
	}
	if sampled != nil {
		fmt.Fprintf(w, "profile: the call loop with no probe, %gs runs, sampled at %d Hz with kernel and user stacks by a session per run\n", sampled.seconds, sampled.hz)
		fmt.Fprintf(w, "filtered by the workload's pid. Its columns are per SAMPLE the tool recorded (events = samples): overhead =\n")
		fmt.Fprintf(w, "(traced loop time - the traced run's iterations at the untraced loop's ns/event) / samples; its untraced line is\n")
		fmt.Fprintf(w, "that loop's ns/event. The empty program counts nothing: its samples (~) are the expected %d per second of the\n", sampled.hz)
		fmt.Fprintf(w, "loop's CPU time. Loop time: %s.\n", d.loopClockWhy)
	}
	fmt.Fprintln(w)

	t := &table{head: []string{"workload", "tool", "overhead ns/event", "recorder CPU ns/event", "idle CPU ms/s", "events", "lost", "bytes/event", "ready s", "peak RSS MiB"},
		left: map[int]bool{0: true, 1: true}}
	var errs, rowNotes []string
	for _, r := range res.rows {
		name := fmt.Sprintf("%s %s", r.workload, r.threads)
		var ratios []string // profile: samples recorded / expected, per tool
		for _, tool := range append([]string{untraced}, tools...) {
			cl := r.cells[tool]
			for _, e := range cl.errs {
				errs = append(errs, fmt.Sprintf("%s, %s: %s", name, tool, e))
			}
			if tool == untraced {
				loop := "loop " + spread(cl.overhead, num)
				if r.sampled && r.loopCPU {
					loop = "loop CPU " + spread(cl.overhead, func(x float64) string { return fmt.Sprintf("%.3f", x) })
				} else if r.sampled {
					loop = "loop " + spread(cl.overhead, func(x float64) string { return fmt.Sprintf("%.3f", x) })
				}
				t.add(name, "untraced", loop, "-", "-", "-", "-", "-", "-", "-")
				continue
			}
			bpe := "-"
			if cl.bytes >= 0 && cl.recorded > 0 {
				bpe = fmt.Sprintf("%.2f", float64(cl.bytes)/float64(cl.recorded))
			}
			cpu := "-"
			if tool != empty && len(cl.cpu) > 0 {
				cpu = num(cl.cpuPerEvent())
				if len(cl.cpu) > 1 {
					lo, hi := minMax(cl.cpu)
					cpu += fmt.Sprintf(" [%s–%s]", num(lo), num(hi))
				}
			}
			lost := "-"
			switch {
			case r.sampled:
				// No count of samples fired to hold them against: only
				// what the tool itself reports lost (bpftape).
				if cl.toolLost >= 0 {
					lost = count(cl.toolLost)
				}
			case cl.recorded >= 0 || cl.toolLost >= 0:
				lost = count(cl.lost())
			}
			idle := spread(cl.idle, func(x float64) string { return fmt.Sprintf("%.2f", x/1e6) })
			events := count(cl.recorded)
			if r.sampled && cl.recorded < 0 && cl.expected > 0 {
				events = "~" + count(int64(cl.expected+0.5))
			}
			t.add("", title(r.workload, tool), spread(cl.overhead, num), cpu, idle, events, lost, bpe, spread(cl.ready, secs), mib(cl.maxrssKB))
			if r.sampled && cl.recorded >= 0 && cl.expected > 0 {
				ratios = append(ratios, fmt.Sprintf("%s %.3f", title(r.workload, tool), float64(cl.recorded)/cl.expected))
			}
		}
		if len(ratios) > 0 {
			rowNotes = append(rowNotes, fmt.Sprintf("%s: samples recorded / expected (%d per second of the loop's CPU time in that tool's runs): %s",
				name, r.hz, strings.Join(ratios, ", ")))
		}
	}
	if n := chainNote(res.rows); n != "" {
		rowNotes = append(rowNotes, n)
	}
	if len(res.rows) > 0 {
		t.print(w)
		for _, n := range rowNotes {
			fmt.Fprintln(w, n)
		}
	}

	printRecCPU(w, res.recCPU)
	printCtxsw(w, res.ctxsw, &errs)

	if len(res.soak) > 0 {
		fmt.Fprintf(w, "\nLoss at full speed: bpftape record, default settings, one workload thread per CPU\n")
		st := &table{head: []string{"workload", "seconds", "events fired", "recorded", "lost", "loop ns/event traced", "recorder CPU ns/event", "peak RSS MiB"},
			left: map[int]bool{0: true}}
		for _, s := range res.soak {
			st.add(s.name, fmt.Sprint(s.seconds), count(s.generated), count(s.recorded), count(s.lost), num(s.perEvent), num(s.cpu), mib(s.maxrssKB))
			if s.err != "" {
				errs = append(errs, "soak "+s.name+": "+s.err)
			}
		}
		st.print(w)
	}

	if len(res.ready) > 0 {
		fmt.Fprintf(w, "\nTime to ready, 4 probes (uprobe, uretprobe, USDT, tracepoint with a pid filter), %d rounds\n", c.readyRounds)
		rt := &table{head: []string{"tool", "ready s", "events", "lost", "peak RSS MiB"}, left: map[int]bool{0: true}}
		for _, tool := range tools {
			cl := res.ready[tool]
			if cl == nil {
				continue
			}
			for _, e := range cl.errs {
				errs = append(errs, "ready, "+tool+": "+e)
			}
			lost := "-"
			if cl.recorded >= 0 {
				lost = count(cl.lost())
			}
			rt.add(toolTitle[tool], spread(cl.ready, secs), count(cl.recorded), lost, mib(cl.maxrssKB))
		}
		rt.print(w)
	}

	if rp := res.replay; rp != nil {
		fmt.Fprintf(w, "\nReplay (output to /dev/null; events/s = events in the input / wall time; per core = / user+sys time)\n")
		pt := &table{head: []string{"command", "input", "events", "bytes/event", "wall s", "M events/s", "M events/s/core", "peak RSS MiB"},
			left: map[int]bool{0: true, 1: true}}
		add := func(r replayRun, ci capInfo) {
			if ci.err != "" {
				errs = append(errs, "replay input "+ci.what+": "+ci.err)
			}
			if r.err != "" {
				errs = append(errs, "replay "+r.what+": "+r.err)
			}
			if len(r.wall) == 0 {
				return
			}
			pt.add(r.what, ci.what, count(r.events), fmt.Sprintf("%.2f", ci.perEvent()), spread(r.wall, secs),
				fmt.Sprintf("%.2f", r.rate()/1e6), fmt.Sprintf("%.2f", r.ratePerCore()/1e6), mib(r.maxrssKB))
		}
		add(rp.histBig, rp.bigCap)
		add(rp.histSmall, rp.smallCap)
		add(rp.perfScript, rp.perfData)
		add(rp.histSynth, rp.synthCap)
		pt.print(w)
		if rp.perfData.recorded > 0 && rp.perfData.recorded < c.replayEvents {
			fmt.Fprintf(w, "(perf.data scaled down to %s events: %s at 100M events would take ~%.1f GB and its recording, decoding and deletion ~minutes on this machine)\n",
				count(rp.perfData.recorded), fmt.Sprintf("%.1f bytes/event", rp.perfData.perEvent()), rp.perfData.perEvent()*1e8/1e9)
		}
		for _, ci := range []*capInfo{&rp.smallCap, &rp.perfData} {
			if ci.lost > 0 {
				fmt.Fprintf(w, "(%s lost %s of %s events while recording its replay input: the event counts above differ)\n",
					ci.what, count(ci.lost), count(ci.generated))
			}
		}
		printVerbs(w, rp.verbs, &errs)
	}

	if len(res.progTimes) > 0 {
		fmt.Fprintf(w, "\nDiagnostic: BPF program run time per event (kernel BPF stats on, separate runs, 1 thread; overhead of the same run)\n")
		pt := &table{head: []string{"workload"}, left: map[int]bool{0: true}}
		ts := []string{empty, emptyClock, bcc, bpftrace, bpftape, bpftapeRejecting, bpftapeRateLimited}
		for _, t := range ts {
			title := toolTitle[t]
			switch t {
			case bpftapeRejecting:
				title = toolTitle[bpftape] + ", all filtered out"
			case bpftapeRateLimited:
				title = toolTitle[bpftape] + ", all rate-limited"
			case emptyClock:
				title = toolTitle[empty] + " + clock read"
			}
			pt.head = append(pt.head, title+" prog/overhead ns")
		}
		for _, wd := range wdefs {
			m := res.progTimes[wd.name]
			if m == nil {
				continue
			}
			cols := []string{wd.name}
			for _, t := range ts {
				if x, ok := m[t]; ok {
					cols = append(cols, fmt.Sprintf("%s / %s", num(x.runNs), num(x.overhead)))
				} else {
					cols = append(cols, "-")
				}
			}
			pt.add(cols...)
		}
		pt.print(w)
		c, u := res.progTimes["chain"][bpftape], res.progTimes["uprobe"][bpftape]
		if c.runNs > 0 && u.runNs > 0 {
			fmt.Fprintf(w, "bpftape's program: pointer chain %s ns/run against a flat argument %s (%.2f×)\n", num(c.runNs), num(u.runNs), c.runNs/u.runNs)
		}
		printClockFloor(w, res.progTimes)
	}
	for _, n := range res.notes {
		errs = append(errs, n)
	}

	res.printTargets(w)

	if len(errs) > 0 {
		fmt.Fprintf(w, "\nErrors\n")
		for _, e := range errs {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// perRound is the ratio a/b taken round by round (the two tools ran next to
// each other in each round), as "; per round 1.19× [1.15–1.30]": it says how
// much of a ratio of medians is noise between rounds. The target itself is
// judged on the ratio of medians.
func perRound(a, b []float64) string {
	if len(a) != len(b) || len(a) < 2 {
		return ""
	}
	var qs []float64
	for i := range a {
		if b[i] > 0 {
			qs = append(qs, a[i]/b[i])
		}
	}
	if len(qs) < 2 {
		return ""
	}
	lo, hi := qs[0], qs[0]
	for _, q := range qs {
		lo, hi = min(lo, q), max(hi, q)
	}
	return fmt.Sprintf("; per round %.2f× [%.2f–%.2f]", median(qs), lo, hi)
}

// chainRow is the pointer-chain row of rows, nil if it did not run.
func chainRow(rows []*row) *row {
	for _, r := range rows {
		if r.chain {
			return r
		}
	}
	return nil
}

// chainNote sets each tool's overhead above its row's empty program on the
// chain row against the same on the uprobe row of the same threading: what
// reading the value through two pointers adds. The rows run minutes apart
// and a uprobe's own cost drifts between them, hence the empty program
// taken out; the program run times (progtime) compare the two without it.
func chainNote(rows []*row) string {
	c := chainRow(rows)
	if c == nil {
		return ""
	}
	var flat *row
	for _, r := range rows {
		if r.workload == "uprobe" && r.threads == c.threads {
			flat = r
		}
	}
	if flat == nil || len(c.cells[empty].overhead) == 0 || len(flat.cells[empty].overhead) == 0 {
		return ""
	}
	ec, ef := median(c.cells[empty].overhead), median(flat.cells[empty].overhead)
	var parts []string
	for _, tool := range tools {
		oc, of := c.cells[tool].overhead, flat.cells[tool].overhead
		if tool == empty || len(oc) == 0 || len(of) == 0 {
			continue
		}
		mc, mf := median(oc)-ec, median(of)-ef
		parts = append(parts, fmt.Sprintf("%s %s vs %s", toolTitle[tool], num(mc), num(mf)))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("chain %s against uprobe %s, overhead above the row's empty program, ns/event, medians (rows minutes apart: see\nthe program run times for a like-for-like comparison): %s",
		c.threads, flat.threads, strings.Join(parts, ", "))
}

// ratio is a / b, false if b is not positive.
func ratio(a, b float64) (float64, bool) {
	if b <= 0 {
		return 0, false
	}
	return a / b, true
}

// printClockFloor prints, for each workload of the program-time table,
// what reading the clock alone costs (the empty program with and without
// it) and how the overhead of the empty program that reads it compares
// with BCC's and bpftrace's hist in the same runs: the least any recorder
// that stamps its events could score on the overhead targets.
func printClockFloor(w io.Writer, pts map[string]map[string]progTime) {
	var parts []string
	for _, wd := range wdefs {
		m := pts[wd.name]
		e, ec, b, bt := m[empty], m[emptyClock], m[bcc], m[bpftrace]
		if e.runNs <= 0 || ec.runNs <= 0 {
			continue
		}
		p := fmt.Sprintf("%s +%s ns/run", wd.name, num(ec.runNs-e.runNs))
		if q, ok := ratio(ec.overhead, b.overhead); ok {
			p += fmt.Sprintf(", %.2f× BCC", q)
		}
		if q, ok := ratio(ec.overhead, bt.overhead); ok {
			p += fmt.Sprintf(", %.2f× bpftrace", q)
		}
		parts = append(parts, p)
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "The clock read alone (empty prog + clock read against empty prog; its overhead against the hists'): %s\n", strings.Join(parts, "; "))
	}
}
