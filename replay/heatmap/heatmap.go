// Package heatmap draws heat maps of a capture as SVG: time across in
// columns, value buckets up in rows and the count of events as colour, so
// that a distribution that shifts during a capture shows when and how.
// Maps fill in a streaming pass, so memory is columns × rows, not events.
package heatmap

import (
	"fmt"
	"math"
	"math/big"

	"github.com/bpftape/bpftape/internal/humanfmt"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay/hist"
)

// Rows is the value axis: log2 rows on BCC's bucket edges (row r holds
// BCC's slot r+1, values taken as u64 as bpf_log2l takes them), N equal
// linear rows from Min to Max, or one row per label (value i is row i).
type Rows struct {
	Linear   bool
	Min, Max int64 // linear rows: the values drawn, both included
	N        int
	Labels   []string // category rows
	width    uint64
}

// CategoryRows are one row per label, bottom up: value i counts in row i.
func CategoryRows(labels []string) Rows { return Rows{Labels: labels, N: len(labels)} }

// Log2Rows are the 64 rows of BCC's log2 slots 1 to 64.
func Log2Rows() Rows { return Rows{N: hist.Log2Slots - 1} }

// LinearRows splits [min, max] into at most n rows of equal integer width.
func LinearRows(min, max int64, n int) (Rows, error) {
	if n <= 0 {
		return Rows{}, usage.Errorf("%d rows: want at least 1", n)
	}
	if max < min {
		return Rows{}, usage.Errorf("max %d is below min %d", max, min)
	}
	span := uint64(max-min) + 1 // 0 when the range is all of int64
	var w uint64
	if span == 0 {
		w = math.MaxUint64/uint64(n) + 1
	} else {
		w = (span + uint64(n) - 1) / uint64(n)
	}
	// Fewer rows than asked when the range is narrower than n values.
	rows := int((uint64(max-min))/w) + 1
	return Rows{Linear: true, Min: min, Max: max, N: rows, width: w}, nil
}

// log2 reports whether the rows are log2 rows (Log2Rows).
func (r *Rows) log2() bool { return !r.Linear && r.Labels == nil }

// Row returns the row of v; cmp is -1 below a linear range, +1 above it.
func (r *Rows) Row(v int64) (row, cmp int) {
	if r.Labels != nil {
		if v < 0 || v >= int64(r.N) {
			return 0, 1
		}
		return int(v), 0
	}
	if !r.Linear {
		return hist.Log2Slot(uint64(v)) - 1, 0
	}
	switch {
	case v < r.Min:
		return 0, -1
	case v > r.Max:
		return 0, 1
	}
	return int(uint64(v-r.Min) / r.width), 0
}

// Bounds returns the smallest and largest value of row i: int64s for linear
// rows, uint64s (as bit patterns in int64) for log2 rows.
func (r *Rows) Bounds(i int) (lo, hi uint64) {
	if r.Labels != nil {
		return uint64(i), uint64(i)
	}
	if !r.Linear {
		slot := i + 1
		if slot == 1 {
			return 0, 1
		}
		return 1 << (slot - 1), math.MaxUint64 >> (64 - slot)
	}
	l := uint64(r.Min) + uint64(i)*r.width
	h := l + r.width - 1
	if i == r.N-1 {
		h = uint64(r.Max)
	}
	return l, h
}

// Axis is the time axis: column c holds boot-clock times from Start+c*Step
// up to, not including, Start+(c+1)*Step.
type Axis struct {
	Start, Step int64
	Cols        int
}

// MaxCols bounds the columns of a map, whatever step is asked for.
const MaxCols = 10000

// DefaultCols is how many columns an automatic step aims at, at most.
const DefaultCols = 100

// niceSteps are the column widths an automatic axis chooses from, in ns.
var niceSteps = func() []int64 {
	var s []int64
	for p := int64(1); p <= 1e9; p *= 10 {
		s = append(s, p, 2*p, 5*p)
	}
	const sec = int64(1e9)
	for _, v := range []int64{10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400} {
		s = append(s, v*sec)
	}
	return s
}()

// NewAxis covers first to last (both included) with columns of step ns,
// aligned on multiples of step from base (the capture start), so that the
// last sample's column is drawn too. A zero step picks the smallest round
// step that needs at most maxCols columns.
func NewAxis(base, first, last, step int64, maxCols int) (Axis, error) {
	if last < first {
		return Axis{}, fmt.Errorf("time axis ends before it starts")
	}
	if maxCols <= 0 {
		maxCols = DefaultCols
	}
	maxCols = min(maxCols, MaxCols)
	if step < 0 {
		return Axis{}, fmt.Errorf("negative step %d", step)
	}
	// The times come from a capture, which may hold any int64: spans are
	// taken as uint64 (exact, since last >= first) so that nothing wraps.
	if step == 0 {
		// Past the round steps (spans of years), any step that fits.
		step = int64(min((uint64(last)-uint64(first))/uint64(max(maxCols-1, 1))+1, math.MaxInt64))
		for _, s := range niceSteps {
			if start := alignedStart(base, first, s); columns(start, last, s) <= uint64(maxCols) {
				step = s
				break
			}
		}
	}
	start := alignedStart(base, first, step)
	cols := columns(start, last, step)
	if cols > MaxCols {
		return Axis{}, usage.Errorf("a step of %s makes %d columns, more than %d: give a longer --step, or --from and --to", humanfmt.Duration(float64(step)), cols, MaxCols)
	}
	return Axis{Start: start, Step: step, Cols: int(cols)}, nil
}

// alignedStart is the largest base + k*step (k an integer) at or below
// first, or first itself when that is not an int64.
func alignedStart(base, first, step int64) int64 {
	d := new(big.Int).Sub(big.NewInt(first), big.NewInt(base))
	k := new(big.Int).Div(d, big.NewInt(step)) // Euclidean: rounds down for step > 0
	s := k.Mul(k, big.NewInt(step))
	s.Add(s, big.NewInt(base))
	if !s.IsInt64() {
		return first
	}
	return s.Int64()
}

// columns is how many columns of step ns cover start to last (start <=
// last), without wrapping.
func columns(start, last, step int64) uint64 {
	return (uint64(last)-uint64(start))/uint64(step) + 1
}

// Map is one heat map: counts per time column and value row.
type Map struct {
	Title string
	// YLabel names the values ("arg2", "latency"); Durations says that they
	// are nanoseconds and are labelled as durations.
	YLabel    string
	Durations bool
	// Base is the capture's start (boot clock): times are labelled from it.
	Base int64
	Axis
	Rows Rows
	// Below and Above count values outside linear rows, Outside samples
	// outside the time axis: none of them is drawn.
	Below, Above, Outside uint64
	// Notes are extra lines for the caption (unmatched latency events...).
	Notes []string
	// Alert lists category rows whose label is drawn in red (lost events).
	Alert []int
	// Noun names what is counted: "events" (the default) or "calls".
	Noun   string
	counts []uint64
	// The column of the last sample, [colLo, colHi) in boot-clock time:
	// samples come in time order, so that most find their column by two
	// comparisons rather than a division (a third of a heat map's time).
	colLo, colHi int64
	col          int
	// The columns counted into since the map was made or last merged
	// from (a part of a batch): [usedLo, usedHi], when used.
	usedLo, usedHi int
	used           bool
}

// New makes an empty map on the given axes.
func New(a Axis, r Rows) *Map {
	return &Map{Axis: a, Rows: r, counts: make([]uint64, a.Cols*r.N)}
}

// Add counts one sample: value v at boot-clock time t.
func (m *Map) Add(t, v int64) { m.AddN(t, v, 1) }

// AddN counts n samples of value v at boot-clock time t.
func (m *Map) AddN(t, v int64, n uint64) {
	c := m.col
	if t < m.colLo || t >= m.colHi {
		var ok bool
		if c, ok = m.column(t); !ok {
			m.Outside += n
			return
		}
	}
	r, cmp := m.Rows.Row(v)
	switch cmp {
	case -1:
		m.Below += n
	case 1:
		m.Above += n
	default:
		m.counts[c*m.Rows.N+r] += n
	}
}

// AddCategories counts category cats[i] at boot-clock time times[i], for
// each i, as AddN(t, v, 1) does on category rows (CategoryRows), in a loop
// of its own with the column at hand in registers: the report's time line
// of events by probe, where a call of AddN per event was 6% of the
// report's CPU in a profile (10M-event recorded capture); the report
// took 2-4% less CPU.
func (m *Map) AddCategories(times []int64, cats []uint16) {
	cats = cats[:len(times)]
	if m.Rows.Labels == nil {
		for i, t := range times {
			m.AddN(t, int64(cats[i]), 1)
		}
		return
	}
	from, to, c, n := m.colLo, m.colHi, m.col, m.Rows.N
	for i, t := range times {
		if t < from || t >= to {
			tc, ok := m.column(t)
			if !ok {
				m.Outside++
				continue
			}
			from, to, c = m.colLo, m.colHi, tc
		}
		if v := int(cats[i]); v < n {
			m.counts[c*n+v]++
		} else {
			m.Above++
		}
	}
}

// addLog2 counts, for each j, value vals[j] at time times[rows[j]], as
// AddN(t, v, 1) does, on log2 rows (Rows.log2): in a loop of its own, the
// column at hand in registers.
func (m *Map) addLog2(times []int64, rows []int32, vals []int64) {
	from, to, c, n := m.colLo, m.colHi, m.col, m.Rows.N
	for j, i := range rows[:len(vals)] {
		t := times[i]
		if t < from || t >= to {
			tc, ok := m.column(t)
			if !ok {
				m.Outside++
				continue
			}
			from, to, c = m.colLo, m.colHi, tc
		}
		m.counts[c*n+hist.Log2Slot(uint64(vals[j]))-1]++
	}
}

// column returns the column of time t, if t is on the axis, and makes it
// the cached one.
func (m *Map) column(t int64) (int, bool) {
	if t < m.Start || m.Step <= 0 {
		return 0, false
	}
	c := (uint64(t) - uint64(m.Start)) / uint64(m.Step) // t >= Start: exact
	if c >= uint64(m.Cols) {
		return 0, false
	}
	// The column's bounds: its low end is between Start and t, exact
	// in wrapping arithmetic; past the largest int64 its high end is
	// that (a time there finds its column by division).
	lo := int64(uint64(m.Start) + c*uint64(m.Step))
	m.colLo, m.col, m.colHi = lo, int(c), math.MaxInt64
	if !m.used {
		m.usedLo, m.usedHi, m.used = int(c), int(c), true
	}
	m.usedLo, m.usedHi = min(m.usedLo, int(c)), max(m.usedHi, int(c))
	if lo <= math.MaxInt64-m.Step {
		m.colHi = lo + m.Step
	}
	return int(c), true
}

// MaxPartCells bounds the cells of the parts of maps filled a batch at a
// time (Part, Builder.NewFillPart): a part is a whole map's grid, and as
// many parts are in flight as batches decoded ahead (about twice the
// CPUs), so maps of more cells are filled in file order instead. 1<<18
// cells is 2 MiB a part; a map of the default 100 columns of log2 rows has
// 6,400.
const MaxPartCells = 1 << 18

// Cells returns how many cells m has.
func (m *Map) Cells() int { return m.Cols * m.Rows.N }

// Part returns an empty map of m's axes, to count a batch's samples into
// on a goroutine of its own, for AddPart.
func (m *Map) Part() *Map { return New(m.Axis, m.Rows) }

// AddPart adds the counts of p, a Part of m, to m's, and empties p for
// the next batch: only the columns p counted into are read.
func (m *Map) AddPart(p *Map) {
	m.Below += p.Below
	m.Above += p.Above
	m.Outside += p.Outside
	if p.used {
		n := m.Rows.N
		lo, hi := p.usedLo*n, (p.usedHi+1)*n
		for i, v := range p.counts[lo:hi] {
			m.counts[lo+i] += v
		}
		clear(p.counts[lo:hi])
	}
	p.Below, p.Above, p.Outside = 0, 0, 0
	p.used, p.colLo, p.colHi, p.col = false, 0, 0, 0
}

// forgetCache forgets which column m counted into last and since when,
// once it is filled: the same counts make the same map however they were
// counted.
func (m *Map) forgetCache() {
	m.used, m.usedLo, m.usedHi = false, 0, 0
	m.colLo, m.colHi, m.col = 0, 0, 0
}

// Count returns the count of column c, row r.
func (m *Map) Count(c, r int) uint64 { return m.counts[c*m.Rows.N+r] }

// Total returns the number of samples drawn (in the cells).
func (m *Map) Total() uint64 {
	var n uint64
	for _, v := range m.counts {
		n += v
	}
	return n
}

// MaxCount returns the largest cell count.
func (m *Map) MaxCount() uint64 {
	var n uint64
	for _, v := range m.counts {
		n = max(n, v)
	}
	return n
}

// rowSpan returns the rows to draw: all linear rows, or the log2 rows from
// the lowest to the highest with a count (both drawn).
func (m *Map) rowSpan() (lo, hi int) {
	if m.Rows.Linear || m.Rows.Labels != nil {
		return 0, max(m.Rows.N-1, 0)
	}
	lo, hi = m.Rows.N, -1
	for c := 0; c < m.Cols; c++ {
		for r := 0; r < m.Rows.N; r++ {
			if m.Count(c, r) > 0 {
				lo, hi = min(lo, r), max(hi, r)
			}
		}
	}
	if hi < 0 {
		return 0, 0
	}
	return lo, hi
}
