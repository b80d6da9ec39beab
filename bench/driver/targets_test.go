package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// measuredCell is a cell with every value the targets read: overhead per
// round, CPU over fired events, output bytes.
func measuredCell(overhead []float64, cpuNsPerEvent float64, generated, recorded, bytes int64) *cell {
	c := newCell()
	c.overhead = overhead
	c.generated, c.recorded, c.toolLost, c.bytes = generated, recorded, 0, bytes
	c.addCPU(int64(cpuNsPerEvent*float64(recorded)), recorded)
	c.maxrssKB = 30 << 10
	return c
}

func targetRow(workload string, cells map[string]*cell) *row {
	r := &row{workload: workload, threads: "1T", events: 1000, cells: map[string]*cell{untraced: newCell()}}
	for _, t := range tools {
		if c, ok := cells[t]; ok {
			r.cells[t] = c
		} else {
			r.cells[t] = newCell() // ran, measured nothing
		}
	}
	return r
}

// TestTargets checks that a target passes only on a measurement: a run
// that failed is FAIL with its error, a judged tool that recorded fewer
// events than the workload fired is FAIL, and a missing measurement is
// N/A; and that the targets that have their measurements are judged on
// them.
func TestTargets(t *testing.T) {
	good := func() map[string]*cell {
		return map[string]*cell{
			bpftape:  measuredCell([]float64{100, 110, 105}, 60, 3000, 3000, 12000),
			bcc:      measuredCell([]float64{100, 100, 100}, 0, 3000, 3000, -1),
			bpftrace: measuredCell([]float64{120, 125, 118}, 0, 3000, 3000, -1),
			perf:     measuredCell([]float64{300, 310, 290}, 500, 3000, 2900, 290000), // perf may drop
		}
	}
	// uprobe: everything measured, everything met.
	up := targetRow("uprobe", good())
	// usdt: bpftape recorded nothing; its overhead and CPU would pass.
	us := good()
	us[bpftape] = measuredCell([]float64{1, 1, 1}, 1, 3000, 0, 0)
	// uretprobe: BCC measured nothing (N/A), bpftrace failed (FAIL with
	// its error), and bpftape is too slow against perf (FAIL on the
	// measurement).
	ur := good()
	ur[bcc] = newCell()
	ur[bpftrace].fail("bpftrace: exited with status 1: ERROR: no probes")
	ur[bpftape] = measuredCell([]float64{200, 210, 205}, 60, 3000, 3000, 12000)
	// tracepoint: bpftape failed.
	tp := good()
	tp[bpftape].fail("bpftape: bpftape record printed no summary: boom")
	// usdt 2T: bpftape lost 10 events.
	us2 := good()
	us2[bpftape] = measuredCell([]float64{100, 100, 100}, 60, 3000, 2990, 12000)
	us2Row := targetRow("usdt", us2)
	us2Row.threads = "2T"

	ready := newCell()
	ready.ready, ready.generated, ready.recorded = []float64{0.1, 0.12, 0.11}, 400, 400

	res := &results{
		rows: []*row{up, targetRow("usdt", us), targetRow("uretprobe", ur), targetRow("tracepoint", tp), us2Row},
		soak: []soakResult{
			{name: "uprobe", seconds: 10, generated: 1000, recorded: 1000, lost: 0, maxrssKB: 20 << 10},
			{name: "tracepoint", seconds: 10, generated: 1000, recorded: -1, lost: -1},
			{name: "chain", seconds: 10, generated: 1000, recorded: 1000, lost: 0, err: "workload: exit status 1"},
		},
		ready: map[string]*cell{bpftape: ready},
		progTimes: map[string]map[string]progTime{
			"uprobe": {empty: {runNs: 30}, bpftapeRejecting: {runNs: 32}, bpftapeRateLimited: {runNs: 40}},
			// uretprobe, usdt, tracepoint, chain: not measured
		},
		replay: &replayResult{
			synthCap: capInfo{what: "synth", generated: 100, recorded: 100, bytes: 390},
			smallCap: capInfo{what: "small", generated: 100, recorded: 99, bytes: 300},
			bigCap:   capInfo{what: "synth", generated: 100, recorded: 100, bytes: 390},
			histBig:  replayRun{what: "bpftape hist", events: 100, err: "bpftape hist failed: exit status 1"},
			// perf script never ran
		},
	}
	got := map[string]target{}
	for _, tg := range res.targets() {
		if _, dup := got[tg.name]; dup {
			t.Errorf("target %q twice", tg.name)
		}
		got[tg.name] = tg
	}
	for _, c := range []struct {
		name, result, measured string
	}{
		{"uprobe 1T: overhead ≤ 1.10× BCC hist", "PASS", "1.05× (105 vs 100 ns/event); per round 1.05× [1.00–1.10]"},
		{"uprobe 1T: overhead ≤ 1.0× bpftrace hist", "PASS", "0.88× (105 vs 120 ns/event)"},
		{"uprobe 1T: overhead < 0.6× perf record", "PASS", "0.35× (105 vs 300 ns/event)"},
		{"uprobe 1T: recorder CPU ≤ 100 ns/event", "PASS", "60.0 ns/event"},
		{"uprobe 1T: recorder CPU ≤ 0.5× perf record's", "PASS", "0.12× (60.0 vs 500 ns/event)"},
		{"uprobe 1T: bytes/event ≤ 0.1× perf.data", "PASS", "0.040× (4.00 vs 100.0 bytes/event)"},

		{"usdt 1T: overhead ≤ 1.10× BCC hist", "FAIL", "bpftape record recorded 0 of the 3,000 events fired"},
		{"usdt 1T: overhead ≤ 1.0× bpftrace hist", "FAIL", "recorded 0 of the 3,000"},
		{"usdt 1T: overhead < 0.6× perf record", "FAIL", "recorded 0 of the 3,000"},
		{"usdt 1T: recorder CPU ≤ 100 ns/event", "FAIL", "recorded 0 of the 3,000"},
		{"usdt 1T: recorder CPU ≤ 0.5× perf record's", "FAIL", "recorded 0 of the 3,000"},
		{"usdt 1T: bytes/event ≤ 0.1× perf.data", "FAIL", "recorded 0 of the 3,000"},
		{"usdt 2T: recorder CPU ≤ 100 ns/event", "FAIL", "recorded 2,990 of the 3,000 events fired"},

		{"uretprobe 1T: overhead ≤ 1.10× BCC hist", "N/A", "BCC hist: not measured"},
		{"uretprobe 1T: overhead ≤ 1.0× bpftrace hist", "FAIL", "bpftrace hist failed: bpftrace: exited with status 1: ERROR: no probes"},
		{"uretprobe 1T: overhead < 0.6× perf record", "FAIL", "0.68× (205 vs 300 ns/event)"},
		{"uretprobe 1T: recorder CPU ≤ 100 ns/event", "PASS", "60.0 ns/event"},

		{"tracepoint 1T: overhead ≤ 1.50× BCC hist", "FAIL", "bpftape record failed: bpftape: bpftape record printed no summary: boom"},
		{"tracepoint 1T: recorder CPU ≤ 100 ns/event", "FAIL", "printed no summary"},
		{"tracepoint 1T: bytes/event ≤ 0.1× perf.data", "FAIL", "printed no summary"},

		{"uprobe: a filtered-out event ≤ 1.1× the empty program (BPF run time)", "PASS", "1.07× (32.0 vs 30.0 ns/run)"},
		{"uprobe: a rate-limited event ≤ 1.3× the empty program (BPF run time)", "FAIL", "1.33× (40.0 vs 30.0 ns/run)"},
		{"usdt: a rate-limited event ≤ 1.3× the empty program (BPF run time)", "N/A", "not measured"},
		{"usdt: a filtered-out event ≤ 1.1× the empty program (BPF run time)", "N/A", "not measured"},

		{"0 lost, uprobe, every core as fast as possible, default settings, 10 s", "PASS", "0 lost of 1,000 in 10s"},
		{"0 lost, tracepoint, every core as fast as possible, default settings, 10 s", "N/A", "no count"},
		{"0 lost, chain, every core as fast as possible, default settings, 10 s", "FAIL", "workload: exit status 1"},

		{"≤ 4 bytes/event for a seed-like stream (synthesized)", "PASS", "3.90 bytes/event over 100 events"},
		{"≤ 4 bytes/event, recorded uprobe workload (seed-like sizes)", "FAIL", "small: recorded 99 of the 100 events fired"},
		{"replay ≥ 50M events/s per core (bpftape hist, 100-event capture)", "FAIL", "bpftape hist failed: exit status 1"},
		{"replay ≥ 40× perf script (same workload, same event count)", "FAIL", "recorded 99 of the 100"},
		{"replay ≥ 40× perf script (bpftape hist on 100 events vs perf script on 0)", "FAIL", "bpftape hist failed"},

		{"recorder peak RSS ≤ 64 MiB (every bpftape record session)", "PASS", "30.0 MiB"},
		{"time to ready ≤ 0.2 s for 4 probes", "PASS", "0.110 s median [0.100–0.120]"},
	} {
		tg, ok := got[c.name]
		if !ok {
			t.Errorf("no target %q", c.name)
			continue
		}
		if tg.result() != c.result || !strings.Contains(tg.measured, c.measured) {
			t.Errorf("%s: %s %q, want %s with %q", c.name, tg.result(), tg.measured, c.result, c.measured)
		}
	}
	// The filtered-out targets of workloads without a measurement are
	// listed, as N/A, not left out.
	for _, w := range []string{"uretprobe", "tracepoint", "chain"} {
		if tg := got[w+": a filtered-out event ≤ 1.1× the empty program (BPF run time)"]; tg.result() != "N/A" {
			t.Errorf("%s filtered-out target: %s %q, want N/A", w, tg.result(), tg.measured)
		}
	}

	var b bytes.Buffer
	res.printTargets(&b)
	n := map[string]int{}
	for _, tg := range got {
		n[tg.result()]++
	}
	if want := fmt.Sprintf("targets: %d PASS, %d FAIL, %d N/A\n", n["PASS"], n["FAIL"], n["N/A"]); !strings.HasSuffix(b.String(), want) {
		t.Errorf("printTargets ends %q, want %q", b.String()[max(0, b.Len()-80):], want)
	}
	if !strings.Contains(b.String(), "bpftape record recorded 0 of the 3,000 events fired") {
		t.Errorf("printTargets does not say why usdt 1T failed:\n%s", b.String())
	}
}

// TestTargetsNothingMeasured: parts that ran and measured nothing give N/A
// targets, never PASS, and a long error is cut in the table.
func TestTargetsNothingMeasured(t *testing.T) {
	long := strings.Repeat("perf: cannot open event ", 20)
	bt := newCell()
	pf := newCell()
	pf.fail("%s", long)
	res := &results{
		rows:      []*row{targetRow("uprobe", map[string]*cell{bpftape: bt, perf: pf})},
		soak:      []soakResult{{name: "uprobe", seconds: 10, recorded: -1, lost: -1}},
		ready:     map[string]*cell{bpftape: newCell()},
		progTimes: map[string]map[string]progTime{},
		replay:    &replayResult{},
	}
	ts := res.targets()
	if len(ts) == 0 {
		t.Fatal("no targets")
	}
	for _, tg := range ts {
		if tg.result() == "PASS" {
			t.Errorf("%s: PASS on nothing measured (%q)", tg.name, tg.measured)
		}
		if strings.Contains(tg.name, "perf") && strings.Contains(tg.name, "uprobe 1T") {
			if tg.result() != "FAIL" || !strings.HasSuffix(tg.measured, "… (see Errors)") || len([]rune(tg.measured)) > maxMeasured+20 {
				t.Errorf("%s: %s %q, want FAIL with perf's error cut", tg.name, tg.result(), tg.measured)
			}
		}
	}
	var rss *target
	for i := range ts {
		if strings.HasPrefix(ts[i].name, "recorder peak RSS") {
			rss = &ts[i]
		}
	}
	if rss == nil || rss.result() != "N/A" {
		t.Errorf("peak RSS target: %+v, want N/A", rss)
	}
}
