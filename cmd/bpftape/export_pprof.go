package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/export"
	"github.com/bpftape/bpftape/replay/pprof"
)

// profileFlags are export's flags for the formats that aggregate stacks or
// pair events (pprof, perfetto) rather than list rows.
type profileFlags struct {
	probe, weight, by, key *string
	user, kernel, both     *bool
	offcpu                 *bool
	pairs                  pairList
}

// pairList is a repeatable --pair START,END.
type pairList []replay.LatencyOptions

func (p *pairList) String() string {
	var s []string
	for _, l := range *p {
		s = append(s, l.Entry+","+l.Return)
	}
	return strings.Join(s, " ")
}

func (p *pairList) Set(v string) error {
	start, end, ok := strings.Cut(v, ",")
	if !ok || start == "" || end == "" || strings.Contains(end, ",") {
		return fmt.Errorf("want START,END (two probe names), got %q", v)
	}
	*p = append(*p, replay.LatencyOptions{Entry: start, Return: end})
	return nil
}

// pprofOnly are the flags only pprof takes; pairFlags those pprof and
// perfetto take.
var (
	pprofOnly = []string{"probe", "weight", "by", "user", "kernel", "both", "offcpu"}
	pairFlags = []string{"pair", "key"}
)

func addProfileFlags(fs *flag.FlagSet) *profileFlags {
	pf := &profileFlags{
		probe:  fs.String("probe", "", "pprof: the `PROBE` whose stacks (default: the one probe that recorded stacks)"),
		weight: fs.String("weight", "", "pprof: what a sample weighs: events (default), offcpu (time off CPU, a sched_switch probe) or latency (the time of the calls --pair pairs)"),
		by:     fs.String("by", "", "pprof: put `KEY` as the root frame: comm, pid, tid or a field of the probe"),
		key:    fs.String("key", "", "pprof --weight latency: pair by these comma-separated `FIELDS` of both probes, as latency --key"),
		user:   fs.Bool("user", false, "pprof: user stacks only"),
		kernel: fs.Bool("kernel", false, "pprof: kernel stacks only"),
		both:   fs.Bool("both", false, "pprof: user and kernel stacks (the default when the probe recorded both)"),
		offcpu: fs.Bool("offcpu", false, "pprof: short for --weight offcpu"),
	}
	fs.Var(&pf.pairs, "pair", "pprof --weight latency: the entry and return probes, `START,END` (default PROBE,PROBE:return)")
	return pf
}

// check refuses the flags that format f does not take.
func (pf *profileFlags) check(fs *flag.FlagSet, f export.Format) error {
	var bad []string
	fs.Visit(func(fl *flag.Flag) {
		switch {
		case f == export.Pprof:
		case contains(pprofOnly, fl.Name), contains(pairFlags, fl.Name):
			bad = append(bad, "--"+fl.Name)
		}
	})
	if len(bad) > 0 {
		return usage.Errorf("%s: only for --format pprof", strings.Join(bad, ", "))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// pprofOptions builds the profile's options from the flags and the rows.
func (pf *profileFlags) pprofOptions(rows replay.RowFilter) (pprof.Options, error) {
	o := pprof.Options{Stacks: replay.StacksOptions{Rows: rows, Probe: *pf.probe, By: *pf.by}}
	n := 0
	for _, m := range []struct {
		on   bool
		mode replay.StackMode
	}{{*pf.user, replay.StacksUser}, {*pf.kernel, replay.StacksKernel}, {*pf.both, replay.StacksBoth}} {
		if m.on {
			n++
			o.Stacks.Mode = m.mode
		}
	}
	if n > 1 {
		return o, usage.Errorf("--user, --kernel and --both exclude each other")
	}
	var err error
	if o.Weight, err = pprof.ParseWeight(*pf.weight); err != nil {
		return o, err
	}
	if *pf.offcpu {
		if *pf.weight != "" && o.Weight != pprof.OffCPU {
			return o, usage.Errorf("--offcpu and --weight %s exclude each other", *pf.weight)
		}
		o.Weight = pprof.OffCPU
	}
	if o.Weight != pprof.Latency {
		if len(pf.pairs) > 0 || *pf.key != "" {
			return o, usage.Errorf("--pair and --key go with --weight latency")
		}
		return o, nil
	}
	switch {
	case len(pf.pairs) > 1:
		return o, usage.Errorf("--weight latency takes one --pair START,END")
	case len(pf.pairs) == 1:
		o.Latency = pf.pairs[0]
	case *pf.probe != "":
		o.Latency = replay.LatencyOptions{Entry: *pf.probe, Return: *pf.probe + ":return"}
	default:
		return o, usage.Errorf("--weight latency needs --pair START,END (or --probe PROBE, paired with PROBE:return)")
	}
	if *pf.key != "" {
		if o.Latency.Key, err = replay.ParseKeyFields(*pf.key); err != nil {
			return o, usage.Errorf("--key: %w", err)
		}
	}
	return o, nil
}

// writePprof writes the profile of c that o selects to w, and its notes
// to stderr; it returns the number of samples and of events (or calls,
// or off-CPU intervals) they hold.
func writePprof(c *replay.Capture, w io.Writer, o pprof.Options, stderr io.Writer) (samples int, events uint64, pass *replay.Pass, err error) {
	p, sc, pass, err := pprof.Build(c, o)
	if err != nil {
		return 0, 0, pass, err
	}
	sc.Notes(stderr)
	return len(p.Sample), sc.Events, pass, pprof.Write(w, p)
}
