package main

import (
	"fmt"
	"io"
	"strings"
)

// target is one line of the targets table. A target passes only on a
// measurement: one whose runs failed is FAIL with the error, and one whose
// measurement is missing is N/A, never PASS.
type target struct {
	name, measured string
	pass           bool
	na             bool
}

func (t target) result() string {
	switch {
	case t.na:
		return "N/A"
	case t.pass:
		return "PASS"
	}
	return "FAIL"
}

// dep is one tool's cell that a target reads.
type dep struct {
	tool string
	c    *cell
	// judged: the tool the target judges (bpftape). Where the workload
	// says how many events it fired, the tool must have recorded all of
	// them: a recorder that drops events does less work, and one that
	// recorded nothing would score best of all.
	judged bool
	// has says whether the value the target reads is there.
	has func(*cell) bool
}

func hasOverhead(c *cell) bool { return len(c.overhead) > 0 }
func hasCPU(c *cell) bool      { return len(c.cpu) > 0 && c.cpuEvents > 0 }
func hasBytes(c *cell) bool    { return c.bytes > 0 && c.recorded > 0 }
func hasReady(c *cell) bool    { return len(c.ready) > 0 }

// maxMeasured bounds the error quoted in the targets table; the whole of
// it is under Errors.
const maxMeasured = 100

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxMeasured {
		return string(r[:maxMeasured]) + "… (see Errors)"
	}
	return s
}

// judge is target name on deps: FAIL if a run it depends on failed or the
// judged tool did not record every event fired, N/A if a value it reads is
// missing, else what measure says.
func judge(name string, deps []dep, measure func() target) target {
	var fails, missing []string
	for _, d := range deps {
		title := toolTitle[d.tool]
		switch c := d.c; {
		case c == nil:
			missing = append(missing, title+": not run")
		case len(c.errs) > 0:
			fails = append(fails, title+" failed: "+strings.Join(c.errs, "; "))
		case d.judged && c.generated > 0 && c.recorded >= 0 && c.recorded != c.generated:
			fails = append(fails, fmt.Sprintf("%s recorded %s of the %s events fired", title, count(c.recorded), count(c.generated)))
		case d.judged && (c.generated <= 0 || c.recorded < 0):
			missing = append(missing, title+": no count of events fired and recorded")
		case d.has != nil && !d.has(c):
			missing = append(missing, title+": not measured")
		}
	}
	switch {
	case len(fails) > 0:
		return target{name: name, measured: clip(strings.Join(fails, "; "))}
	case len(missing) > 0:
		return target{name: name, measured: strings.Join(missing, "; "), na: true}
	}
	t := measure()
	t.name = name
	return t
}

// runFault is the same for a measurement outside the workload rows: FAIL
// on an error, N/A when missing.
func runFault(name string, errs []string, missing string, measure func() target) target {
	var es []string
	for _, e := range errs {
		if e != "" {
			es = append(es, e)
		}
	}
	switch {
	case len(es) > 0:
		return target{name: name, measured: clip(strings.Join(es, "; "))}
	case missing != "":
		return target{name: name, measured: missing, na: true}
	}
	t := measure()
	t.name = name
	return t
}

func pass(measured string, ok bool) target { return target{measured: measured, pass: ok} }
func notApplicable(why string) target      { return target{measured: why, na: true} }

// targets are the targets for the parts that ran.
func (res *results) targets() []target {
	var ts []target
	add := func(t target) { ts = append(ts, t) }

	var bpftapeRSS int64
	stackRows, rssParts := false, false
	for _, r := range res.rows {
		name := r.workload + " " + r.threads
		bt, bc, bf, pf := r.cells[bpftape], r.cells[bcc], r.cells[bpftrace], r.cells[perf]
		if r.stacks {
			// The recording targets are for the rows without stacks; the stack
			// rows' RSS is in the table.
			stackRows = true
			continue
		}
		if r.chain {
			continue // set against the uprobe row (chainNote)
		}
		rssParts = true
		if bt != nil && len(bt.errs) == 0 {
			bpftapeRSS = max(bpftapeRSS, bt.maxrssKB)
		}
		me := dep{tool: bpftape, c: bt, judged: true, has: hasOverhead}

		limit := 1.10
		if r.workload == "tracepoint" {
			limit = 1.5
		}
		overheadVs := func(tn, tool string, c *cell, ok func(q float64) bool) {
			add(judge(tn, []dep{me, {tool: tool, c: c, has: hasOverhead}}, func() target {
				ob, oo := median(bt.overhead), median(c.overhead)
				q, pos := ratio(ob, oo)
				if !pos {
					return notApplicable(fmt.Sprintf("%s overhead %s ns/event is not positive", toolTitle[tool], num(oo)))
				}
				return pass(fmt.Sprintf("%.2f× (%s vs %s ns/event)%s", q, num(ob), num(oo), perRound(bt.overhead, c.overhead)), ok(q))
			}))
		}
		overheadVs(fmt.Sprintf("%s: overhead ≤ %.2f× BCC hist", name, limit), bcc, bc, func(q float64) bool { return q <= limit })
		overheadVs(name+": overhead ≤ 1.0× bpftrace hist", bpftrace, bf, func(q float64) bool { return q <= 1.0 })
		overheadVs(name+": overhead < 0.6× perf record", perf, pf, func(q float64) bool { return q < 0.6 })

		meCPU := me
		meCPU.has = hasCPU
		add(judge(name+": recorder CPU ≤ 100 ns/event", []dep{meCPU}, func() target {
			cb := bt.cpuPerEvent()
			return pass(num(cb)+" ns/event", cb <= 100)
		}))
		add(judge(name+": recorder CPU ≤ 0.5× perf record's", []dep{meCPU, {tool: perf, c: pf, has: hasCPU}}, func() target {
			cb, cp := bt.cpuPerEvent(), pf.cpuPerEvent()
			q, pos := ratio(cb, cp)
			if !pos {
				return notApplicable(fmt.Sprintf("perf record's CPU %s ns/event is not positive", num(cp)))
			}
			return pass(fmt.Sprintf("%.2f× (%s vs %s ns/event)", q, num(cb), num(cp)), q <= 0.5)
		}))
		meBytes := me
		meBytes.has = hasBytes
		add(judge(name+": bytes/event ≤ 0.1× perf.data", []dep{meBytes, {tool: perf, c: pf, has: hasBytes}}, func() target {
			xb, xp := float64(bt.bytes)/float64(bt.recorded), float64(pf.bytes)/float64(pf.recorded)
			q := xb / xp
			return pass(fmt.Sprintf("%.3f× (%.2f vs %.1f bytes/event)", q, xb, xp), q <= 0.1)
		}))
	}
	if res.progTimes != nil {
		for _, wd := range wdefs {
			if wd.sampled || wd.stacks {
				continue // no filtered-out or rate-limited run there
			}
			m := res.progTimes[wd.name]
			for _, v := range []struct {
				what, col string
				limit     float64
			}{
				{"a filtered-out event", bpftapeRejecting, 1.1},
				// --max-rate: past the filter, a map lookup and a read of
				// the shared token count, no clock.
				{"a rate-limited event", bpftapeRateLimited, 1.3},
			} {
				tn := fmt.Sprintf("%s: %s ≤ %.1f× the empty program (BPF run time)", wd.name, v.what, v.limit)
				e, okE := m[empty]
				f, okF := m[v.col]
				missing := ""
				switch {
				case !okE || !okF:
					missing = "not measured (see Errors and the log)"
				case e.runNs <= 0 || f.runNs <= 0:
					missing = "no BPF run time read"
				}
				add(runFault(tn, nil, missing, func() target {
					q, _ := ratio(f.runNs, e.runNs)
					return pass(fmt.Sprintf("%.2f× (%s vs %s ns/run)", q, num(f.runNs), num(e.runNs)), q <= v.limit)
				}))
			}
		}
	}
	if r := res.ctxsw; r != nil {
		missing := ""
		if r.err == "" && r.perSec <= 0 {
			missing = "no context switches read"
		}
		add(runFault(fmt.Sprintf("recorder ≤ %d context switches/s recording sched_switch with stacks system-wide", ctxswLimit),
			[]string{r.err}, missing, func() target {
				return pass(fmt.Sprintf("%.0f/s", r.perSec), r.perSec <= ctxswLimit)
			}))
	}
	for _, s := range res.soak {
		rssParts = true
		if s.err == "" {
			bpftapeRSS = max(bpftapeRSS, s.maxrssKB)
		}
		tn := fmt.Sprintf("0 lost, %s, every core as fast as possible, default settings, 10 s", s.name)
		missing := ""
		if s.recorded < 0 || s.generated <= 0 {
			missing = "no count of events fired and recorded"
		}
		add(runFault(tn, []string{s.err}, missing, func() target {
			m := fmt.Sprintf("%s lost of %s in %gs", count(s.lost), count(s.generated), s.seconds)
			if s.recorded != s.generated {
				m += fmt.Sprintf(" (%s recorded)", count(s.recorded))
			}
			if s.seconds < 10 {
				m += " (quick: shorter)"
			}
			return pass(m, s.lost == 0 && s.recorded == s.generated)
		}))
	}
	if rp := res.replay; rp != nil {
		capFault := func(ci capInfo, all bool) (errs []string, missing string) {
			errs = []string{ci.err}
			switch {
			case ci.recorded <= 0:
				missing = ci.what + ": not measured"
			case all && ci.recorded != ci.generated:
				errs = append(errs, fmt.Sprintf("%s: recorded %s of the %s events fired", ci.what, count(ci.recorded), count(ci.generated)))
			}
			return errs, missing
		}
		runMissing := func(r replayRun, what string) string {
			if len(r.wall) == 0 || len(r.cpu) == 0 || r.events <= 0 {
				return what + ": not measured"
			}
			return ""
		}
		first := func(ss ...string) string {
			for _, s := range ss {
				if s != "" {
					return s
				}
			}
			return ""
		}

		errs, missing := capFault(rp.synthCap, true)
		add(runFault("≤ 4 bytes/event for a seed-like stream (synthesized)", errs, missing, func() target {
			x := rp.synthCap.perEvent()
			return pass(fmt.Sprintf("%.2f bytes/event over %s events", x, count(rp.synthCap.recorded)), x <= 4)
		}))
		errs, missing = capFault(rp.smallCap, true)
		add(runFault("≤ 4 bytes/event, recorded uprobe workload (seed-like sizes)", errs, missing, func() target {
			x := rp.smallCap.perEvent()
			return pass(fmt.Sprintf("%.2f bytes/event over %s events", x, count(rp.smallCap.recorded)), x <= 4)
		}))

		errs, missing = capFault(rp.bigCap, true)
		add(runFault(fmt.Sprintf("replay ≥ 50M events/s per core (bpftape hist, %s-event capture)", count(rp.histBig.events)),
			append(errs, rp.histBig.err), first(missing, runMissing(rp.histBig, "bpftape hist")), func() target {
				x := rp.histBig.ratePerCore()
				return pass(fmt.Sprintf("%.1fM events/s per core (%.1fM/s wall)", x/1e6, rp.histBig.rate()/1e6), x >= 50e6)
			}))

		errsS, missingS := capFault(rp.smallCap, true)
		errsP, missingP := capFault(rp.perfData, false) // perf drops events at full speed: its script reads what it kept
		add(runFault("replay ≥ 40× perf script (same workload, same event count)",
			append(append(errsS, errsP...), rp.histSmall.err, rp.perfScript.err),
			first(missingS, missingP, runMissing(rp.histSmall, "bpftape hist"), runMissing(rp.perfScript, "perf script")), func() target {
				q := rp.histSmall.rate() / rp.perfScript.rate()
				return pass(fmt.Sprintf("%.0f× (%.2fM vs %.3fM events/s)", q, rp.histSmall.rate()/1e6, rp.perfScript.rate()/1e6), q >= 40)
			}))
		add(runFault(fmt.Sprintf("replay ≥ 40× perf script (bpftape hist on %s events vs perf script on %s)", count(rp.histBig.events), count(rp.perfScript.events)),
			append(append(errs, errsP...), rp.histBig.err, rp.perfScript.err),
			first(missing, missingP, runMissing(rp.histBig, "bpftape hist"), runMissing(rp.perfScript, "perf script")), func() target {
				return pass(fmt.Sprintf("%.0f×", rp.histBig.rate()/rp.perfScript.rate()), rp.histBig.rate()/rp.perfScript.rate() >= 40)
			}))
		for _, vc := range rp.verbs {
			// The verbs read what was recorded (events/s over the events in
			// the capture): a recorder's losses are noted, not failed, here.
			errs, missing := capFault(vc.info, false)
			for _, t := range vc.targets(errs, missing) {
				add(t)
			}
		}
	}
	if rssParts {
		which := "every bpftape record session"
		if stackRows {
			which += " but the ustack and profile rows'"
		}
		missing := ""
		if bpftapeRSS <= 0 {
			missing = "no bpftape record session reported its peak RSS"
		}
		add(runFault("recorder peak RSS ≤ 64 MiB ("+which+")", nil, missing, func() target {
			return pass(mib(bpftapeRSS)+" MiB", bpftapeRSS <= 64<<10)
		}))
	}
	if cl := res.ready[bpftape]; cl != nil {
		add(judge("time to ready ≤ 0.2 s for 4 probes", []dep{{tool: bpftape, c: cl, judged: true, has: hasReady}}, func() target {
			lo, hi := minMax(cl.ready)
			x := median(cl.ready)
			return pass(fmt.Sprintf("%.3f s median [%.3f–%.3f]", x, lo, hi), x <= 0.2)
		}))
	}
	return ts
}

func (res *results) printTargets(w io.Writer) {
	ts := res.targets()
	fmt.Fprintf(w, "\nTargets (ratios from this run; N/A: not measured, FAIL: a run failed or did not record every event)\n")
	tt := &table{head: []string{"target", "measured", "result"}, left: map[int]bool{0: true, 1: true}}
	n := map[string]int{}
	for _, t := range ts {
		r := t.result()
		n[r]++
		tt.add(t.name, t.measured, r)
	}
	tt.print(w)
	fmt.Fprintf(w, "targets: %d PASS, %d FAIL, %d N/A\n", n["PASS"], n["FAIL"], n["N/A"])
}
