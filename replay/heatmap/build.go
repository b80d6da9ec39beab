package heatmap

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay"
)

// Spec says what one heat map shows: Field of Probe, or with Entry and
// Return set, the latency from each entry to its return on the same thread.
type Spec struct {
	Probe, Field  string
	Cast          replay.Cast
	Entry, Return string
	// Rows > 0 asks for that many linear rows from Min to Max (from the
	// data when nil) instead of log2 rows.
	Rows     int
	Min, Max *int64
	Title    string
}

// Latency reports whether s is a latency heat map.
func (s *Spec) Latency() bool { return s.Entry != "" }

// Options shape the time axis of every map of a Builder.
type Options struct {
	Step    time.Duration // column width; 0 picks one from MaxCols
	MaxCols int           // most columns an automatic step gives; 0 is DefaultCols
	// From and To, offsets from the capture start as in replay.RowFilter, fix
	// the axis to that window instead of the samples' span.
	From, To time.Duration
}

// Builder fills heat maps in two streaming passes over a capture: Measure
// sees every event to learn each map's time span and value range, Plan
// sizes the maps, and Fill counts the events into them.
type Builder struct {
	base   int64
	opts   Options
	layers []*layer
}

type layer struct {
	spec      Spec
	ref       replay.Ref
	pair      *replay.Pairing // a latency layer's entries and returns, as latency pairs them
	unmatched uint64          // returns without entry (Fill pass)
	overflows uint64
	// misses, when set, says the layer's calls come from another pairing
	// (FeedLatency), and what it left unpaired.
	misses   func() (unmatched, open, overflows uint64)
	n        uint64
	first    int64
	last     int64
	min, max int64
	m        *Map
}

// NewBuilder resolves the specs against c's probes.
func NewBuilder(c *replay.Capture, specs []Spec, o Options) (*Builder, error) {
	b := &Builder{base: c.Meta().StartBoot, opts: o}
	for _, s := range specs {
		l := &layer{spec: s}
		if s.Latency() {
			if s.Entry == s.Return {
				return nil, usage.Errorf("entry and return are the same probe %q", s.Entry)
			}
			var err error
			if l.pair, err = replay.NewPairing(c, s.Entry, s.Return, nil); err != nil {
				return nil, err
			}
		} else {
			ref, err := c.Resolve(s.Probe, s.Field)
			if err != nil {
				return nil, err
			}
			if !ref.IsInt() {
				return nil, usage.Errorf("%s.%s is %s: heat maps need an integer field", s.Probe, s.Field, ref.Kind())
			}
			l.ref = ref
		}
		if s.Rows < 0 || s.Rows > 4096 {
			return nil, fmt.Errorf("%d rows: want 1 to 4096", s.Rows)
		}
		b.layers = append(b.layers, l)
	}
	return b, nil
}

// sample calls emit with the layer's (time, value) sample of row i, if any.
func (l *layer) sample(b *format.Batch, i int, emit func(t, v int64)) {
	if !l.spec.Latency() {
		if v, ok := l.ref.Int(b, i); ok {
			emit(b.Time[i], l.spec.Cast.Apply(v))
		}
		return
	}
	if l.misses != nil {
		return // fed its calls (FeedLatency)
	}
	switch step, start := l.pair.Add(b, i, b.Time[i]); step {
	case replay.PairEnded:
		emit(b.Time[i], b.Time[i]-start)
	case replay.PairOverflow:
		l.overflows++
	case replay.PairUnmatched:
		l.unmatched++
	}
}

// latencySpan is sample for each of rows [lo, hi) of bt, a latency
// layer's, its calls paired a stretch at a time where the pairing allows
// (replay.Pairing.AddSpan): row by row, its calls took a sixth of a
// report's CPU on a recorded capture of calls and returns.
func (l *layer) latencySpan(bt *format.Batch, lo, hi int, emit func(t, v int64)) {
	if l.misses != nil {
		return // fed its calls (FeedLatency)
	}
	times := bt.Time[lo:hi]
	unmatched, overflows, ok := l.pair.AddSpan(bt, lo, hi, func(durs []int64, ends []int32) {
		for j, e := range ends {
			emit(times[e], durs[j])
		}
	})
	if !ok {
		for i := lo; i < hi; i++ {
			l.sample(bt, i, emit)
		}
		return
	}
	l.unmatched += unmatched
	l.overflows += overflows
}

// Columns returns the columns Measure and Fill read, for
// replay.Capture.ScanColumns.
func (b *Builder) Columns() []int {
	cols := []int{format.ColTime}
	for _, l := range b.layers {
		if l.spec.Latency() {
			cols = append(cols, l.pair.Columns()...)
		} else {
			cols = append(cols, l.ref.Column())
		}
	}
	return cols
}

// Measure is the first pass: call it for every event (as replay.Capture.Scan does).
func (b *Builder) Measure(bt *format.Batch, i int) {
	for _, l := range b.layers {
		l.sample(bt, i, l.measure)
	}
}

// MeasureSpan is Measure for rows [lo, hi) of bt, a stretch of events
// between loss records (replay.Capture.ScanSpansWhere): a field's
// samples are gathered from its columns, as FillSpan gathers them.
func (b *Builder) MeasureSpan(bt *format.Batch, lo, hi int) {
	for _, l := range b.layers {
		if l.spec.Latency() {
			l.latencySpan(bt, lo, hi, l.measure)
			continue
		}
		var rows [replay.PickMax]int32
		var vals [replay.PickMax]int64
		times := bt.Time[lo:hi]
		for start := lo; start < hi; start += replay.PickMax {
			k := l.pick(bt, lo, start, hi, &rows, &vals)
			for j, i := range rows[:k] {
				l.measure(times[i], vals[j])
			}
		}
	}
}

// measure takes sample (t, v) into the layer's time span and value range.
func (l *layer) measure(t, v int64) {
	if l.n == 0 {
		l.first, l.last, l.min, l.max = t, t, v, v
	}
	l.n++
	l.first, l.last = min(l.first, t), max(l.last, t)
	l.min, l.max = min(l.min, v), max(l.max, v)
}

// measuredBy sets what Measure would find from the footer's counts of c,
// when they say it: every layer a field's, on log2 rows (whose samples
// are the times of its probe's events: the probe's first and last), and
// no row filter. It reports whether it did; Build then reads the capture
// once, not twice.
func (b *Builder) measuredBy(c *replay.Capture, f *replay.RowFilter) bool {
	cn := c.FooterCounts()
	if cn == nil || f != nil && !f.Empty() {
		return false
	}
	for _, l := range b.layers {
		if l.spec.Latency() || l.spec.Rows > 0 {
			return false
		}
	}
	for _, l := range b.layers {
		pc := &cn.Probes[l.ref.ProbeIndex()]
		l.n, l.first, l.last = pc.Events, pc.First, pc.Last
	}
	return true
}

// Window is a time span in boot-clock ns, both ends included.
type Window struct{ First, Last int64 }

// Plan sizes every map after Measure: its time axis covers shared when
// given (so that the maps of a report line up), else Options.From/To,
// else its own samples.
func (b *Builder) Plan(shared *Window) error {
	for _, l := range b.layers {
		first, last := l.first, l.last
		switch {
		case shared != nil:
			first, last = shared.First, shared.Last
		case b.opts.From != 0 || b.opts.To != 0:
			first = b.base + int64(b.opts.From)
			if b.opts.To != 0 {
				last = b.base + int64(b.opts.To) - 1
			} else if l.n == 0 {
				last = first
			}
		case l.n == 0:
			first, last = b.base, b.base
		}
		last = max(last, first)
		axis, err := NewAxis(b.base, first, last, int64(b.opts.Step), b.opts.MaxCols)
		if err != nil {
			return fmt.Errorf("%s: %w", l.name(), err)
		}
		rows := Log2Rows()
		if s := l.spec; s.Rows > 0 {
			lo, hi := l.min, l.max
			if s.Min != nil {
				lo = *s.Min
			}
			if s.Max != nil {
				hi = *s.Max
			}
			if l.n == 0 && s.Min == nil && s.Max == nil {
				lo, hi = 0, 0
			}
			if rows, err = LinearRows(lo, hi, s.Rows); err != nil {
				return fmt.Errorf("%s: %w", l.name(), err)
			}
		}
		l.m = New(axis, rows)
		l.m.Base = b.base
		l.m.Title = l.spec.Title
		if l.m.Title == "" {
			l.m.Title = l.name()
		}
		l.m.YLabel, l.m.Durations = l.spec.Field, false
		if l.spec.Latency() {
			l.m.YLabel, l.m.Durations, l.m.Noun = "latency", true, "calls"
		}
		if l.pair != nil {
			l.pair.Reset()
		}
		l.unmatched, l.overflows = 0, 0
	}
	return nil
}

func (l *layer) name() string {
	if l.spec.Latency() {
		return fmt.Sprintf("latency %s → %s", l.spec.Entry, l.spec.Return)
	}
	return l.spec.Probe + " " + l.spec.Field
}

// FeedLatency has the latency map of spec i take its calls from the func
// it returns, after Plan, rather than pair the entries and returns itself:
// an analysis that pairs them anyway (replay.Latencies.Calls) hands it
// each stretch's calls, their durations and return rows (offsets from lo
// in bt). misses returns what that pairing left unpaired, for the map's
// notes. In the report, pairing the calls once rather than twice took a
// tenth of its CPU off a 10M-event capture of one function's calls
// (bench/README.md, "The report pairs its calls once").
func (b *Builder) FeedLatency(i int, misses func() (unmatched, open, overflows uint64)) func(bt *format.Batch, lo int, durs []int64, ends []int32) {
	l := b.layers[i]
	l.misses = misses
	return func(bt *format.Batch, lo int, durs []int64, ends []int32) {
		times := bt.Time[lo:]
		for j, e := range ends {
			l.m.Add(times[e], durs[j])
		}
	}
}

// Fill is the second pass: call it for every event, after Plan.
func (b *Builder) Fill(bt *format.Batch, i int) {
	for _, l := range b.layers {
		l.sample(bt, i, l.m.Add)
	}
}

// FillSpan is Fill for rows [lo, hi) of bt, a stretch of events between
// loss records (replay.Capture.ScanSpans): a field's samples are gathered
// from its columns in a loop of their own, not a call per event.
func (b *Builder) FillSpan(bt *format.Batch, lo, hi int) {
	for _, l := range b.layers {
		if l.spec.Latency() {
			l.latencySpan(bt, lo, hi, l.m.Add)
			continue
		}
		l.fieldSpan(l.m, bt, lo, hi)
	}
}

// fieldSpan adds the samples of field layer l in rows [lo, hi) of bt to m,
// its map or a part of it.
func (l *layer) fieldSpan(m *Map, bt *format.Batch, lo, hi int) {
	var rows [replay.PickMax]int32
	var vals [replay.PickMax]int64
	times := bt.Time[lo:hi]
	for start := lo; start < hi; start += replay.PickMax {
		k := l.pick(bt, lo, start, hi, &rows, &vals)
		if !m.Rows.log2() {
			for j, i := range rows[:k] {
				m.AddN(times[i], vals[j], 1)
			}
			continue
		}
		m.addLog2(times, rows[:k], vals[:k])
	}
}

// pick writes to rows the rows of field layer l's probe among rows
// [start, min(start+replay.PickMax, hi)) of bt, as sample takes them
// (Ref.Int), as indices from lo (replay.PickRows), and their values, cast,
// to vals; it returns how many.
func (l *layer) pick(bt *format.Batch, lo, start, hi int, rows *[replay.PickMax]int32, vals *[replay.PickMax]int64) int {
	want := uint16(l.ref.ProbeIndex())
	k := replay.PickRows(rows, bt.Probe[start:min(start+replay.PickMax, hi)], start-lo, want, want)
	bt.Col(l.ref.Column()).Ints().Gather(vals[:k], lo, rows[:k])
	cast := l.spec.Cast
	for j, v := range vals[:k] {
		vals[j] = cast.Apply(v)
	}
	return k
}

// Maps returns the filled maps, in the order of the specs.
func (b *Builder) Maps() []*Map {
	var ms []*Map
	for _, l := range b.layers {
		if l.spec.Latency() {
			var open uint64
			if l.misses != nil {
				l.unmatched, open, l.overflows = l.misses()
			} else {
				l.pair.Open(func(int64) { open++ })
			}
			var notes []string
			if l.unmatched > 0 {
				notes = append(notes, fmt.Sprintf("%d returns without entry", l.unmatched))
			}
			if open > 0 {
				notes = append(notes, fmt.Sprintf("%d entries without return", open))
			}
			if l.overflows > 0 {
				notes = append(notes, fmt.Sprintf("%d entries beyond depth %d", l.overflows, replay.MaxDepth))
			}
			if len(notes) > 0 {
				l.m.Notes = []string{"not drawn: " + strings.Join(notes, ", ")}
			}
		}
		l.m.forgetCache()
		ms = append(ms, l.m)
	}
	return ms
}

// Build makes the maps of specs from c in two passes, each over the events
// that pass f. It returns the second pass (or the one that failed), whose
// Notes tell its losses.
func Build(c *replay.Capture, f *replay.RowFilter, specs []Spec, o Options) ([]*Map, *replay.Pass, error) {
	if f != nil {
		o.From, o.To = f.From, f.To
	}
	b, err := NewBuilder(c, specs, o)
	if err != nil {
		return nil, nil, err
	}
	// A pass takes its rows a stretch at a time where it may, else one
	// by one.
	pass := func(span func(*format.Batch, int, int), row func(*format.Batch, int)) (*replay.Pass, error) {
		if c.SpansWhere(f) {
			return c.ScanSpansWhere(b.Columns(), f, func(bt *format.Batch, lo, hi int) error {
				span(bt, lo, hi)
				return nil
			})
		}
		return c.ScanColumns(b.Columns(), f, row)
	}
	var p *replay.Pass
	if !b.measuredBy(c, f) {
		if p, err = pass(b.MeasureSpan, b.Measure); err != nil {
			return nil, p, err
		}
	}
	if err := b.Plan(nil); err != nil {
		return nil, p, err
	}
	if b.fieldsOnly() && c.Spans(f) && b.PartCells() <= MaxPartCells {
		p, err = b.fillMerged(c)
	} else {
		p, err = pass(b.FillSpan, b.Fill)
	}
	if err != nil {
		return nil, p, err
	}
	return b.Maps(), p, nil
}

// fieldsOnly reports whether every map is a field's, whose counts per batch
// add up: a latency map pairs calls across batches.
func (b *Builder) fieldsOnly() bool {
	for _, l := range b.layers {
		if l.spec.Latency() {
			return false
		}
	}
	return true
}

// fillMerged is the Fill pass of field maps without a row filter: each
// batch is counted where it is decoded, into parts of the maps, which are
// added to them in file order (replay.ScanMerged).
func (b *Builder) fillMerged(c *replay.Capture) (*replay.Pass, error) {
	parts := sync.Pool{New: func() any { return b.NewFillPart() }}
	return replay.ScanMerged(c, b.Columns(), func(bt *format.Batch) *FillPart {
		p := parts.Get().(*FillPart)
		replay.EachSpan(bt, func(lo, hi int) { b.FillFieldSpan(p, bt, lo, hi) })
		return p
	}, func(p *FillPart) {
		b.AddFillPart(p)
		parts.Put(p)
	})
}

// FillPart holds what one batch adds to the field maps of a Builder, filled
// on a goroutine of its own (FillFieldSpan) and added in file order
// (AddFillPart); the latency maps, which pair calls across batches, are
// filled in order (FillLatencySpan).
type FillPart struct {
	maps []*Map // by layer; nil for a latency layer
}

// NewFillPart returns an empty part of b's field maps, after Plan.
func (b *Builder) NewFillPart() *FillPart {
	p := &FillPart{maps: make([]*Map, len(b.layers))}
	for i, l := range b.layers {
		if !l.spec.Latency() {
			p.maps[i] = l.m.Part()
		}
	}
	return p
}

// OwnFillPart returns a FillPart whose maps are b's field maps themselves,
// for a pass in file order that fills them as FillFieldSpan fills a part
// (there is nothing to add).
func (b *Builder) OwnFillPart() *FillPart {
	p := &FillPart{maps: make([]*Map, len(b.layers))}
	for i, l := range b.layers {
		if !l.spec.Latency() {
			p.maps[i] = l.m
		}
	}
	return p
}

// PartCells returns how many cells a FillPart of b has, after Plan: the
// cells of its field maps.
func (b *Builder) PartCells() int {
	n := 0
	for _, l := range b.layers {
		if !l.spec.Latency() {
			n += l.m.Cells()
		}
	}
	return n
}

// FillFieldSpan is FillSpan of the field maps into p: it keeps no state of
// its own, so that parts may be filled on several goroutines at once.
func (b *Builder) FillFieldSpan(p *FillPart, bt *format.Batch, lo, hi int) {
	for i, l := range b.layers {
		if !l.spec.Latency() {
			l.fieldSpan(p.maps[i], bt, lo, hi)
		}
	}
}

// FillLatencySpan is FillSpan of the latency maps, in file order.
func (b *Builder) FillLatencySpan(bt *format.Batch, lo, hi int) {
	for _, l := range b.layers {
		if l.spec.Latency() {
			l.latencySpan(bt, lo, hi, l.m.Add)
		}
	}
}

// AddFillPart adds part p to the field maps and empties it.
func (b *Builder) AddFillPart(p *FillPart) {
	for i, l := range b.layers {
		if m := p.maps[i]; m != nil {
			l.m.AddPart(m)
		}
	}
}
