package replay

import (
	"slices"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/usage"
)

// LatencyStacks sums the time of the calls that l.Entry and l.Return pair
// (as Latency pairs them: on one thread, nested, or by l.Key) by a stack:
// the entry's stacks, or the return's when only the return probe recorded
// stacks (o.Probe picks one of the two when both did). Values are
// nanoseconds; Events counts the calls. A call whose return is timed
// before its entry (a damaged capture) counts with no time.
func LatencyStacks(c *Capture, o StacksOptions, l LatencyOptions) (*StackCounts, *Pass, error) {
	pair, err := NewPairing(c, l.Entry, l.Return, l.Key)
	if err != nil {
		return nil, nil, err
	}
	m := c.Meta()
	if o.Probe == "" {
		o.Probe = l.Return
		if probeHasStacks(&m.Probes[pair.start]) || !probeHasStacks(&m.Probes[pair.end]) {
			o.Probe = l.Entry
		}
	}
	pi, cols, err := stackProbe(c, &o)
	if err != nil {
		return nil, nil, err
	}
	if uint16(pi) != pair.start && uint16(pi) != pair.end {
		return nil, nil, usage.Errorf("the stacks of a call are its entry's (%q) or its return's (%q), not %q's", l.Entry, l.Return, o.Probe)
	}
	agg, err := newStackAgg(c, &o, pi, "ns")
	if err != nil {
		return nil, nil, err
	}
	// With the entry's stacks, a start's token is its index in calls (a
	// slot reused once its call ends), holding its time and stack; with
	// the return's, the start's time.
	onEntry := uint16(pi) == pair.start
	type call struct {
		t int64
		k stackKey
	}
	var calls []call
	var free []int64
	add := func(b *format.Batch, i int) {
		token := b.Time[i]
		if onEntry && b.Probe[i] == pair.start {
			c := call{b.Time[i], agg.key(b, i, cols)}
			if n := len(free); n > 0 {
				token, free = free[n-1], free[:n-1]
				calls[token] = c
			} else {
				token = int64(len(calls))
				calls = append(calls, c)
			}
		}
		switch step, prev := pair.Add(b, i, token); {
		case step == PairEnded && onEntry:
			start := calls[prev]
			free = append(free, prev)
			agg.add(start.k, start.t, uint64(max(b.Time[i]-start.t, 0)))
		case step == PairEnded:
			agg.add(agg.key(b, i, cols), b.Time[i], uint64(max(b.Time[i]-prev, 0)))
		case step == PairOverflow && onEntry:
			free = append(free, token)
		case step == PairRestarted && onEntry:
			free = append(free, prev)
		}
	}
	need := slices.Concat([]int{format.ColTime}, pair.Columns(), cols.columns(), byFieldColumns(c, pi, o.By), agg.columns())
	p, err := c.ScanColumns(need, &o.Rows, add)
	if err != nil {
		return nil, p, err
	}
	return agg.fold(), p, nil
}
