package main

import (
	"io"

	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/pprof"
)

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
