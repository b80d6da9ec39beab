package replay

import "github.com/bpftape/bpftape/format"

// histRuns fills all, the one histogram of Hist without key, from the
// stretches of event rows between loss records (spansWhere, o's row
// filter masking the rows it leaves out), decoding the probe column, the
// field's and the filter's and nothing else: the fast path of the most
// common question. Without a row filter each batch is counted into a
// histogram of its own (newAcc) where it is decoded, and merged into all
// (mergedSpans).
func (c *Capture) histRuns(r *format.Reader, o *HistOptions, ref *Ref, all *accum, newAcc func() *accum) (*Pass, error) {
	stats := statsNeeded(o)
	timed := c.selectColumns(r, []int{ref.col}, &o.Rows)
	if o.Rows.Empty() {
		return mergedSpans(c, r, timed, func(b *format.Batch) *accum {
			a := newAcc()
			run := NewFieldRuns(*ref, o.Cast, func(v int64, n uint64) { a.addN(v, n, o, stats) })
			eachSpan(b, func(lo, hi int) { run.Span(b, lo, hi) })
			run.Flush()
			return a
		}, all.merge)
	}
	run := NewFieldRuns(*ref, o.Cast, func(v int64, n uint64) { all.addN(v, n, o, stats) })
	p, err := c.spansWhere(r, timed, &o.Rows, func(b *format.Batch, lo, hi int) error {
		run.Span(b, lo, hi)
		return nil
	}, nil)
	run.Flush()
	return p, err
}

// FieldRuns adds the values of one integer field to a function a run at a
// time, as hist does: consecutive equal values (a burst of packets of one
// size) cost one call with their number. It takes the rows of a pass a
// stretch at a time (Capture.WalkSpans); Flush hands on the last run.
type FieldRuns struct {
	ref Ref
	run runAcc
}

// NewFieldRuns adds the values of ref's field, cast, to add(v, n), which
// must record exactly what n calls with one would.
func NewFieldRuns(ref Ref, cast Cast, add func(v int64, n uint64)) *FieldRuns {
	return &FieldRuns{ref: ref, run: runAcc{cast: cast, add: add}}
}

// Span adds the field's values in rows [lo, hi) of b.
func (f *FieldRuns) Span(b *format.Batch, lo, hi int) {
	f.run.rangeOf(b.Col(f.ref.col).Ints(), b.Probe, f.ref.probe, lo, hi)
}

// Flush hands the last run on: call it after the pass.
func (f *FieldRuns) Flush() { f.run.flush() }

// statsNeeded reports whether the output of o prints the statistics, which
// cost more per value than the histogram.
func statsNeeded(o *HistOptions) bool {
	return o.Stats || (o.JSON && (o.Linear != nil || o.Style == "bpftrace"))
}

// merge adds what o counted to a.
func (a *accum) merge(o *accum) {
	switch {
	case a.lin != nil:
		a.lin.Merge(o.lin) // of one shape: newKeyed makes both
	default:
		a.log2.Merge(&o.log2)
		a.pow2.Merge(&o.pow2)
	}
	a.stats.Merge(&o.stats)
}

// addN records n occurrences of v, exactly as n calls of add would
// (statistics only when stats is set).
func (a *accum) addN(v int64, n uint64, o *HistOptions, stats bool) {
	switch {
	case o.Linear != nil:
		a.lin.AddN(v, n)
	case o.Style == "bpftrace":
		a.pow2.AddN(v, n)
	default:
		a.log2.AddN(uint64(v), n)
	}
	if stats {
		a.stats.AddN(v, n)
	}
}

// runAcc adds the values of one field (cast) run by run: consecutive
// equal values (a burst of packets of one size) cost one call of add with
// their number, which must record exactly what as many calls with one
// would (hist.Log2.AddN, hist.Stats.AddN...).
type runAcc struct {
	add  func(v int64, n uint64)
	cast Cast
	prev int64
	n    uint64
	buf  [1024]int64 // the values of the probe's rows of one stretch
}

func (r *runAcc) flush() {
	if r.n > 0 {
		r.add(r.prev, r.n)
		r.n = 0
	}
}

// rangeOf adds the values of rows [lo, hi) whose probe is want.
func (r *runAcc) rangeOf(c *format.IntColumn, probes []uint16, want uint16, lo, hi int) {
	switch c.Type {
	case format.Int8:
		runs(r, c.I8, probes, want, lo, hi)
	case format.Int16:
		runs(r, c.I16, probes, want, lo, hi)
	case format.Int32:
		runs(r, c.I32, probes, want, lo, hi)
	case format.Int64:
		runs(r, c.I64, probes, want, lo, hi)
	case format.Uint8:
		runs(r, c.U8, probes, want, lo, hi)
	case format.Uint16:
		runs(r, c.U16, probes, want, lo, hi)
	case format.Uint32:
		runs(r, c.U32, probes, want, lo, hi)
	case format.Uint64:
		runs(r, c.U64, probes, want, lo, hi)
	}
}

func runs[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](r *runAcc, vals []T, probes []uint16, want uint16, lo, hi int) {
	if hi <= lo {
		return
	}
	vals, probes = vals[lo:hi], probes[lo:hi]
	vals = vals[:len(probes)]
	prev, n := r.prev, r.n
	cast := r.cast
	buf := &r.buf
	for len(probes) > 0 {
		m := min(len(probes), len(buf))
		k := pickValues(buf, vals[:m], probes[:m], want)
		probes, vals = probes[m:], vals[m:]
		for _, v := range buf[:k] {
			v = cast.Apply(v)
			if v == prev {
				n++
				continue
			}
			if n > 0 {
				r.add(prev, n)
			}
			prev, n = v, 1
		}
	}
	r.prev, r.n = prev, n
}

// pickValues puts the values of the rows whose probe is want in buf, in
// order, and returns how many. It picks without a branch, as which probe a
// row is from is as good as random, and calls nothing, so that its count
// stays in a register: in runs' loop, which calls add, the count went to
// the stack and back every row (so it is not inlined there).
//
//go:noinline
func pickValues[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](buf *[1024]int64, vals []T, probes []uint16, want uint16) int {
	vals = vals[:len(probes)]
	k := 0
	for i, pr := range probes {
		buf[k&(len(buf)-1)] = int64(vals[i])
		k += b2i(pr == want)
	}
	return k
}
