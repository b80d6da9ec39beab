package main

import (
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/perfetto"
)

// perfettoOptions builds the trace's options from the flags and the rows.
func (pf *profileFlags) perfettoOptions(rows replay.RowFilter) (perfetto.Options, error) {
	o := perfetto.Options{Rows: rows, Counters: pf.counters}
	for _, p := range pf.pairs {
		o.Pairs = append(o.Pairs, perfetto.Pair{Start: p.Entry, End: p.Return})
	}
	if *pf.key != "" {
		var err error
		if o.Key, err = replay.ParseKeyFields(*pf.key); err != nil {
			return o, usage.Errorf("--key: %w", err)
		}
	}
	return o, nil
}
