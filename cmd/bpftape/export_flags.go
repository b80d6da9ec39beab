package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/export"
)

// profileFlags are export's flags for the formats that aggregate stacks or
// pair events (pprof, perfetto) rather than list rows.
type profileFlags struct {
	probe, weight, by, key *string
	user, kernel, both     *bool
	offcpu                 *bool
	pairs                  pairList
	counters               stringList
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

// The flags of one format or two: the others refuse them.
var (
	pprofOnly    = []string{"probe", "weight", "by", "user", "kernel", "both", "offcpu"}
	pairFlags    = []string{"pair", "key"} // pprof and perfetto
	perfettoOnly = []string{"counter"}
)

func addProfileFlags(fs *flag.FlagSet) *profileFlags {
	pf := &profileFlags{
		probe:  fs.String("probe", "", "pprof: the `PROBE` whose stacks (default: the one probe that recorded stacks)"),
		weight: fs.String("weight", "", "pprof: what a sample weighs: events (default), offcpu (time off CPU, a sched_switch probe) or latency (the time of the calls --pair pairs)"),
		by:     fs.String("by", "", "pprof: put `KEY` as the root frame: comm, pid, tid or a field of the probe"),
		key:    fs.String("key", "", "pprof --weight latency, perfetto: pair by these comma-separated `FIELDS` of both probes, as latency --key"),
		user:   fs.Bool("user", false, "pprof: user stacks only"),
		kernel: fs.Bool("kernel", false, "pprof: kernel stacks only"),
		both:   fs.Bool("both", false, "pprof: user and kernel stacks (the default when the probe recorded both)"),
		offcpu: fs.Bool("offcpu", false, "pprof: short for --weight offcpu"),
	}
	fs.Var(&pf.pairs, "pair", "pprof --weight latency: the entry and return probes, `START,END` (default PROBE,PROBE:return); perfetto: more pairs to draw as slices (repeat it; a probe pairs once)")
	fs.Var(&pf.counters, "counter", "perfetto: draw `PROBE.FIELD` as a counter track (repeat it)")
	return pf
}

// check refuses the flags that format f does not take.
func (pf *profileFlags) check(fs *flag.FlagSet, f export.Format) error {
	var bad []string
	only := ""
	fs.Visit(func(fl *flag.Flag) {
		switch {
		case slices.Contains(pprofOnly, fl.Name) && f != export.Pprof:
			only = "--format pprof"
		case slices.Contains(pairFlags, fl.Name) && f != export.Pprof && f != export.Perfetto:
			only = "--format pprof and perfetto"
		case slices.Contains(perfettoOnly, fl.Name) && f != export.Perfetto:
			only = "--format perfetto"
		default:
			return
		}
		bad = append(bad, "--"+fl.Name)
	})
	if len(bad) > 0 {
		return usage.Errorf("%s: only for %s", strings.Join(bad, ", "), only)
	}
	return nil
}
