package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// vmTools are the columns of make vmbench's table, in the guest's order
// (bench/vmguest.sh); bare is the untraced loop each round's overheads
// are taken against.
var vmTools = []string{"empty", "bpftrace", "bpftape"}

// vmRun is one VMBENCH line of bench/vmguest.sh.
type vmRun struct {
	kernel, row, tool string
	round             int
	events            float64
	loopNs            float64
	progNs            float64 // -1: none
	cpuNs             float64 // the tool's CPU over the loop, -1: none
	err               string
}

// parseVMRun parses "VMBENCH kernel=K row=R round=I tool=T ..."; ok is
// false for the guest's other VMBENCH lines (start, done).
func parseVMRun(line string) (r vmRun, ok bool, err error) {
	f := strings.Fields(line)
	if len(f) == 0 || f[0] != "VMBENCH" {
		return r, false, nil
	}
	kv := map[string]string{}
	for _, w := range f[1:] {
		k, v, _ := strings.Cut(w, "=")
		kv[k] = v
	}
	if kv["row"] == "" || kv["tool"] == "" {
		return r, false, nil
	}
	r = vmRun{kernel: kv["kernel"], row: kv["row"], tool: kv["tool"], progNs: -1, cpuNs: -1, err: kv["error"]}
	if r.round, err = strconv.Atoi(kv["round"]); err != nil {
		return r, false, fmt.Errorf("bad round in %q", line)
	}
	if _, bad := kv["error"]; bad {
		if r.err == "" {
			r.err = "failed"
		}
		return r, true, nil
	}
	if r.events, err = strconv.ParseFloat(kv["events"], 64); err != nil || r.events <= 0 {
		return r, false, fmt.Errorf("bad events in %q", line)
	}
	if r.loopNs, err = strconv.ParseFloat(kv["loop_ns"], 64); err != nil {
		return r, false, fmt.Errorf("bad loop_ns in %q", line)
	}
	if p := kv["prog_ns"]; p != "" && p != "-" {
		if r.progNs, err = strconv.ParseFloat(p, 64); err != nil {
			return r, false, fmt.Errorf("bad prog_ns in %q", line)
		}
	}
	if c := kv["tool_cpu_ns"]; c != "" && c != "-" {
		if r.cpuNs, err = strconv.ParseFloat(c, 64); err != nil {
			return r, false, fmt.Errorf("bad tool_cpu_ns in %q", line)
		}
	}
	return r, true, nil
}

// vmRow is one kernel-function row: per tool, the overhead of each round
// (ns per event over the same round's bare loop) and the program run times.
type vmRow struct {
	name     string
	overhead map[string][]float64
	prog     map[string][]float64
	cpu      map[string][]float64 // the tool's CPU ns per event
}

// runVMTable reads the guest's console lines on r and prints the
// kernel-function table to w: medians over rounds and the ratios of
// bpftape to bpftrace and to the empty program. It fails if any run failed
// or a row lacks a tool.
func runVMTable(r io.Reader, w io.Writer) error {
	var rows []*vmRow
	byName := map[string]*vmRow{}
	bare := map[string]float64{} // row/round -> bare ns per event
	var runs []vmRun
	var errs []string
	kernel, cpus := "", "?"
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 2 && f[0] == "VMBENCH" && f[2] == "start" {
			for _, w := range f[3:] {
				if v, ok := strings.CutPrefix(w, "cpus="); ok {
					cpus = v
				}
			}
		}
		run, ok, err := parseVMRun(sc.Text())
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		kernel = run.kernel
		if run.err != "" {
			errs = append(errs, fmt.Sprintf("%s round %d %s: %s", run.row, run.round, run.tool, run.err))
			continue
		}
		if byName[run.row] == nil {
			byName[run.row] = &vmRow{name: run.row, overhead: map[string][]float64{}, prog: map[string][]float64{}, cpu: map[string][]float64{}}
			rows = append(rows, byName[run.row])
		}
		if run.tool == "bare" {
			bare[fmt.Sprintf("%s/%d", run.row, run.round)] = run.loopNs / run.events
		}
		runs = append(runs, run)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	for _, run := range runs {
		b, ok := bare[fmt.Sprintf("%s/%d", run.row, run.round)]
		if run.tool == "bare" || !ok {
			continue
		}
		row := byName[run.row]
		row.overhead[run.tool] = append(row.overhead[run.tool], run.loopNs/run.events-b)
		if run.progNs >= 0 {
			row.prog[run.tool] = append(row.prog[run.tool], run.progNs)
		}
		if run.cpuNs >= 0 {
			row.cpu[run.tool] = append(row.cpu[run.tool], run.cpuNs/run.events)
		}
	}
	if len(rows) == 0 {
		return fmt.Errorf("no VMBENCH runs in the input")
	}
	fmt.Fprintf(w, "Kernel-function rows (make vmbench): vfs_read in one QEMU TCG guest, kernel %s, %s vCPU", kernel, cpus)
	if cpus == "1" {
		fmt.Fprintf(w, " (the recorder's CPU comes out of the workload's, as in make bench's 2T rows).\n")
	} else {
		fmt.Fprintf(w, " (the workload pinned to the last, as in make bench's 1T rows).\n")
	}
	fmt.Fprintf(w, "TCG inflates absolute times many fold: compare the ratios, not the ns with the host's rows.\n")
	fmt.Fprintf(w, "Each tool: overhead / prog / cpu, ns per event. Overhead = the workload's loop ns per read under the tool - the\n")
	fmt.Fprintf(w, "same round's bare loop; prog = BPF run time per run (kernel.bpf_stats_enabled); cpu = the tool's own CPU over the loop\n")
	fmt.Fprintf(w, "(10 ms ticks). Medians over rounds; bpftrace and bpftape filter by the workload's pid.\n\n")
	fmt.Fprintf(w, "%-10s", "row")
	for _, t := range vmTools {
		fmt.Fprintf(w, "  %22s", t)
	}
	fmt.Fprintf(w, "  %18s  %21s  %18s  %6s\n", "bpftape÷bpftrace", "prog bpftape÷bpftrace", "prog bpftape÷empty", "rounds")
	bad := len(errs) > 0
	for _, row := range rows {
		fmt.Fprintf(w, "%-10s", row.name)
		for _, t := range vmTools {
			if len(row.overhead[t]) == 0 {
				fmt.Fprintf(w, "  %22s", "-")
				bad = true
				continue
			}
			med := func(xs []float64) string {
				if len(xs) == 0 {
					return "-"
				}
				return fmt.Sprintf("%.0f", median(xs))
			}
			fmt.Fprintf(w, "  %22s", fmt.Sprintf("%.0f / %s / %s", median(row.overhead[t]), med(row.prog[t]), med(row.cpu[t])))
		}
		ratio := func(a, b float64) string {
			if b <= 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f×", a/b)
		}
		fmt.Fprintf(w, "  %18s  %21s  %18s  %6d\n",
			ratio(median(row.overhead["bpftape"]), median(row.overhead["bpftrace"])),
			ratio(median(row.prog["bpftape"]), median(row.prog["bpftrace"])),
			ratio(median(row.prog["bpftape"]), median(row.prog["empty"])),
			len(row.overhead["bpftape"]))
	}
	for _, e := range errs {
		fmt.Fprintf(w, "failed: %s\n", e)
	}
	if bad {
		return fmt.Errorf("%d runs failed or a row lacks a tool", len(errs))
	}
	return nil
}
