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
	lat, err := NewLatencies(c, LatencyOptions{Entry: l.Entry, Return: l.Return, Key: l.Key})
	if err != nil {
		return nil, nil, err
	}
	m := c.Meta()
	if o.Probe == "" {
		o.Probe = l.Return
		if probeHasStacks(&m.Probes[lat.entry]) || !probeHasStacks(&m.Probes[lat.ret]) {
			o.Probe = l.Entry
		}
	}
	pi, cols, err := stackProbe(c, &o)
	if err != nil {
		return nil, nil, err
	}
	if uint16(pi) != lat.entry && uint16(pi) != lat.ret {
		return nil, nil, usage.Errorf("the stacks of a call are its entry's (%q) or its return's (%q), not %q's", l.Entry, l.Return, o.Probe)
	}
	by, err := byKey(c, pi, o.By)
	if err != nil {
		return nil, nil, err
	}
	agg, err := newStackAgg(c, &o, pi, "ns")
	if err != nil {
		return nil, nil, err
	}
	if uint16(pi) == lat.entry {
		// Each entry is tagged with its stack key, interned (tags from 0).
		var keys []stackKey
		ids := map[stackKey]uint64{}
		lat.tag = func(b *format.Batch, i int) uint64 {
			k := agg.key(b, i, cols, by)
			id, ok := ids[k]
			if !ok {
				id = uint64(len(keys))
				ids[k] = id
				keys = append(keys, k)
			}
			return id
		}
		lat.called = func(b *format.Batch, i int, tag uint64, ns int64) {
			agg.add(keys[tag], b.Time[i]-ns, uint64(max(ns, 0)))
		}
	} else {
		lat.called = func(b *format.Batch, i int, _ uint64, ns int64) {
			agg.add(agg.key(b, i, cols, by), b.Time[i], uint64(max(ns, 0)))
		}
	}
	need := slices.Concat(lat.Columns(), cols.columns(), byFieldColumns(c, pi, o.By), agg.columns())
	p, err := c.ScanColumns(need, &o.Rows, lat.Add)
	if err != nil {
		return nil, p, err
	}
	return agg.fold(), p, nil
}
