package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/textsafe"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay/hist"
)

// Side is one histogram of a comparison: a probe field of a capture.
// Compare fills Log2 and Stats, and Pass with its pass over the side's
// capture (one Pass for both sides of one capture).
type Side struct {
	Capture *Capture
	Probe   string
	Field   string
	Cast    Cast
	Log2    hist.Log2
	Stats   hist.Stats
	Pass    *Pass
}

func (s *Side) name() string {
	return textsafe.Escape(fmt.Sprintf("%s %s.%s", s.Capture.Name, s.Probe, s.Field))
}

// CompareOptions compare two log2 histograms bucket by bucket.
type CompareOptions struct {
	Rows  RowFilter
	Label string
	JSON  bool
}

// CompareResult says whether the histograms are equal and how far apart.
type CompareResult struct {
	Identical bool
	KS        float64
}

// Comparison fills the two sides of a comparison from the events it is
// fed (AddA for side A's capture, AddB for B's; both for a row of a
// capture both sides read), so that it can share a pass with other
// analyses; Compare runs it alone.
type Comparison struct {
	a, b   *Side
	ra, rb Ref
}

// NewComparison resolves the sides' fields against their captures.
func NewComparison(a, b *Side) (*Comparison, error) {
	ra, err := a.Capture.Resolve(a.Probe, a.Field)
	if err != nil {
		return nil, err
	}
	rb, err := b.Capture.Resolve(b.Probe, b.Field)
	if err != nil {
		return nil, err
	}
	for _, s := range []struct {
		side *Side
		ref  *Ref
	}{{a, &ra}, {b, &rb}} {
		if !s.ref.IsInt() {
			return nil, usage.Errorf("%s.%s is %s: compare needs integer fields", s.side.Probe, s.side.Field, s.ref.Kind())
		}
	}
	return &Comparison{a: a, b: b, ra: ra, rb: rb}, nil
}

func (s *Side) add(r *Ref, bt *format.Batch, i int) {
	if v, ok := r.Int(bt, i); ok {
		v = s.Cast.Apply(v)
		s.Log2.Add(uint64(v))
		s.Stats.Add(v)
	}
}

// AddA adds event row i of b, of side A's capture, to side A.
func (c *Comparison) AddA(b *format.Batch, i int) { c.a.add(&c.ra, b, i) }

// AddB adds event row i of b, of side B's capture, to side B.
func (c *Comparison) AddB(b *format.Batch, i int) { c.b.add(&c.rb, b, i) }

// Compare fills both sides (scanning a shared capture once) and prints them
// aligned with per-bucket deltas, percentiles and the Kolmogorov–Smirnov distance.
func Compare(a, b *Side, o CompareOptions, out io.Writer) (*CompareResult, error) {
	cmp, err := NewComparison(a, b)
	if err != nil {
		return nil, err
	}
	if a.Capture.SpansWhere(&o.Rows) && b.Capture.SpansWhere(&o.Rows) {
		err = cmp.runs(&o.Rows)
	} else if a.Capture == b.Capture {
		a.Pass, err = a.Capture.ScanColumns(append(cmp.ColumnsA(), cmp.ColumnsB()...), &o.Rows, func(bt *format.Batch, i int) { cmp.AddA(bt, i); cmp.AddB(bt, i) })
		b.Pass = a.Pass
	} else {
		a.Pass, err = a.Capture.ScanColumns(cmp.ColumnsA(), &o.Rows, cmp.AddA)
		if err == nil {
			b.Pass, err = b.Capture.ScanColumns(cmp.ColumnsB(), &o.Rows, cmp.AddB)
		}
	}
	if err != nil {
		return nil, err
	}
	return cmp.Write(out, o)
}

// runs fills the sides of a comparison a run of equal values at a time
// (runAcc), from the stretches of rows between loss records with f
// masking the rows it leaves out (ScanSpansWhere), reading each capture
// once.
func (c *Comparison) runs(f *RowFilter) error {
	a, b := c.a, c.b
	if a.Capture == b.Capture && a.Capture.Spans(f) {
		return c.merged()
	}
	ra, rb := c.sideRuns(a), c.sideRuns(b)
	var err error
	if a.Capture == b.Capture {
		a.Pass, err = a.Capture.ScanSpansWhere([]int{c.ra.col, c.rb.col}, f, func(bt *format.Batch, lo, hi int) error {
			ra.rangeOf(bt.Col(c.ra.col).Ints(), bt.Probe, c.ra.probe, lo, hi)
			rb.rangeOf(bt.Col(c.rb.col).Ints(), bt.Probe, c.rb.probe, lo, hi)
			return nil
		})
		ra.flush()
		rb.flush()
		b.Pass = a.Pass
		return err
	}
	for _, s := range []struct {
		side *Side
		ref  *Ref
		run  *runAcc
	}{{a, &c.ra, ra}, {b, &c.rb, rb}} {
		s.side.Pass, err = s.side.Capture.ScanSpansWhere([]int{s.ref.col}, f, func(bt *format.Batch, lo, hi int) error {
			s.run.rangeOf(bt.Col(s.ref.col).Ints(), bt.Probe, s.ref.probe, lo, hi)
			return nil
		})
		s.run.flush()
		if err != nil {
			return err
		}
	}
	return nil
}

// comparePart is what one batch adds to the two sides of a comparison of
// one capture's fields, in a pass that counts each batch where it is
// decoded (Comparison.merged).
type comparePart struct {
	a, b   Side
	ra, rb *runAcc
}

// merged fills both sides from one capture without a row filter, each
// batch counted run by run into a part of its own where it is decoded
// (mergedSpans) and the parts added to the sides in file order.
func (c *Comparison) merged() error {
	a, b := c.a, c.b
	parts := sync.Pool{New: func() any {
		pt := &comparePart{a: Side{Cast: a.Cast}, b: Side{Cast: b.Cast}}
		pt.ra, pt.rb = c.sideRuns(&pt.a), c.sideRuns(&pt.b)
		return pt
	}}
	r, timed := a.Capture.readerFor([]int{c.ra.col, c.rb.col}, nil)
	r.RecycleStrings = true
	var err error
	a.Pass, err = mergedSpans(a.Capture, r, timed, func(bt *format.Batch) *comparePart {
		pt := parts.Get().(*comparePart)
		eachSpan(bt, func(lo, hi int) {
			pt.ra.rangeOf(bt.Col(c.ra.col).Ints(), bt.Probe, c.ra.probe, lo, hi)
			pt.rb.rangeOf(bt.Col(c.rb.col).Ints(), bt.Probe, c.rb.probe, lo, hi)
		})
		pt.ra.flush()
		pt.rb.flush()
		return pt
	}, func(pt *comparePart) {
		for _, s := range []struct{ side, part *Side }{{a, &pt.a}, {b, &pt.b}} {
			s.side.Log2.Merge(&s.part.Log2)
			s.side.Stats.Merge(&s.part.Stats)
			// The statistics keep their buckets' memory: fresh for
			// every batch, it was a page fault every 4 KiB.
			s.part.Log2 = hist.Log2{}
			s.part.Stats.Reset()
		}
		parts.Put(pt)
	})
	b.Pass = a.Pass
	return err
}

// sideRuns returns the run accumulator of side s.
func (c *Comparison) sideRuns(s *Side) *runAcc {
	return &runAcc{cast: s.Cast, add: func(v int64, n uint64) {
		s.Log2.AddN(uint64(v), n)
		s.Stats.AddN(v, n)
	}}
}

// Write prints the sides as Compare does; o.Rows is not used.
func (c *Comparison) Write(out io.Writer, o CompareOptions) (*CompareResult, error) {
	a, b := c.a, c.b
	sa, sb := a.Log2.Slots(), b.Log2.Slots()
	res := &CompareResult{Identical: sa == sb, KS: hist.KS(&a.Log2, &b.Log2)}
	top := 0
	for i := range sa {
		if sa[i] != 0 || sb[i] != 0 {
			top = i
		}
	}
	if o.Label == "" {
		o.Label = a.Field
	}
	if o.JSON {
		type row struct {
			Start uint64 `json:"interval-start"`
			End   uint64 `json:"interval-end"`
			A     uint64 `json:"count_a"`
			B     uint64 `json:"count_b"`
			Delta int64  `json:"delta"`
		}
		var rows []row
		for i := 1; i <= top; i++ {
			lo, hi := slotRange(i)
			rows = append(rows, row{lo, hi, sa[i], sb[i], int64(sb[i]) - int64(sa[i])})
		}
		ks := any(res.KS)
		if math.IsNaN(res.KS) {
			ks = nil
		}
		return res, json.NewEncoder(out).Encode(map[string]any{
			"val_type": o.Label, "a": a.name(), "b": b.name(), "data": rows,
			"stats_a": statsJSON(&a.Stats, 1), "stats_b": statsJSON(&b.Stats, 1),
			"ks": ks, "identical": res.Identical,
		})
	}
	fmt.Fprintf(out, "A: %s (%d values)\nB: %s (%d values)\n\n", a.name(), a.Log2.Count(), b.name(), b.Log2.Count())
	fmt.Fprintf(out, "     %-19s : %-10s %-10s %-10s\n", o.Label, "count A", "count B", "delta")
	for i := 1; i <= top; i++ {
		lo, hi := slotRange(i)
		fmt.Fprintf(out, "%10d -> %-10d : %-10d %-10d %+d\n", lo, hi, sa[i], sb[i], int64(sb[i])-int64(sa[i]))
	}
	fmt.Fprintln(out)
	for _, s := range []struct {
		n  string
		st *hist.Stats
	}{{"A", &a.Stats}, {"B", &b.Stats}} {
		fmt.Fprintf(out, "%s: %s\n", s.n, statsLine(s.st, 1))
	}
	switch {
	case math.IsNaN(res.KS):
		fmt.Fprintln(out, "KS distance: undefined (a histogram is empty)")
	case res.Identical:
		fmt.Fprintf(out, "KS distance: %.4f (every bucket count is equal)\n", res.KS)
	default:
		fmt.Fprintf(out, "KS distance: %.4f\n", res.KS)
	}
	return res, nil
}

// slotRange is the value range BCC prints for log2 slot i.
func slotRange(i int) (lo, hi uint64) {
	if i == 1 {
		return 0, 1
	}
	lo = uint64(1) << (i - 1)
	if i == 64 {
		return lo, math.MaxUint64
	}
	return lo, uint64(1)<<i - 1
}
