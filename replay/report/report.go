// Package report writes one self-contained HTML page about a capture for a
// bug report: where and how it was recorded, its losses, per-probe counts,
// a histogram and a heat map of every numeric field but addresses, a flame
// graph of every stack field, the latency of the entry/return pairs of
// probes it finds (or of those asked for), and the request and comparison
// analyses asked for. The page loads nothing: its CSS and SVG are inline
// and it uses the system's fonts.
package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/humanfmt"
	"github.com/bpftape/bpftape/internal/textsafe"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/flamegraph"
	"github.com/bpftape/bpftape/replay/heatmap"
	"github.com/bpftape/bpftape/replay/hist"
)

// RequestsSpec asks for a per-request analysis (see replay.Requests).
type RequestsSpec struct{ ItemProbe, ItemField, EndProbe, EndField string }

// LatencySpec asks for the latencies from Entry to Return (see replay.Latency).
type LatencySpec struct{ Entry, Return string }

// CompareSpec asks for two histograms side by side: FieldA of ProbeA and
// FieldB of ProbeB, of the capture itself or, with FileB, of another one.
type CompareSpec struct{ ProbeA, FieldA, FileB, ProbeB, FieldB string }

// Options say what the report holds besides the capture's own facts.
type Options struct {
	Rows     replay.RowFilter
	Title    string
	Requests []RequestsSpec
	// Latencies are the latency analyses asked for. Without any, the
	// report shows the latency of the entry/return pairs it finds
	// (Pairs), of the first MaxAutoLatencies of them: -1 means none, 0
	// DefaultMaxAutoLatencies.
	Latencies        []LatencySpec
	MaxAutoLatencies int
	Compares         []CompareSpec
	// MaxHeatmaps bounds the field heat maps (the first fields of the first
	// probes); -1 means none, 0 DefaultMaxHeatmaps.
	MaxHeatmaps int
	// Pointers draws a histogram and a heat map of the fields that hold
	// addresses (format.Field.Pointer) too, which a report leaves out:
	// where a buffer is says little, and its log2 buckets nothing.
	Pointers bool
	Cols     int       // most columns of the heat maps; 0 is DefaultCols
	Version  string    // of the bpftape writing the report
	Now      time.Time // the page's date; zero is the capture's end (Capture.EndWall), so that a report is reproducible
}

// Defaults for Options.
const (
	DefaultMaxHeatmaps = 12
	DefaultCols        = 80
)

// Write reads c in two passes (memory does not grow with the capture),
// writes the report as HTML to w and returns the second pass, whose Notes
// tell the capture's losses. Only a comparison with another file opens
// that file.
func Write(c *replay.Capture, w io.Writer, o Options) (*replay.Pass, error) {
	if o.Now.IsZero() {
		o.Now = c.EndWall()
	}
	if o.MaxHeatmaps == 0 {
		o.MaxHeatmaps = DefaultMaxHeatmaps
	}
	if o.MaxAutoLatencies == 0 {
		o.MaxAutoLatencies = DefaultMaxAutoLatencies
	}
	if o.Cols <= 0 {
		o.Cols = DefaultCols
	}
	v, pass, err := build(c, &o)
	if err != nil {
		return pass, err
	}
	var b bytes.Buffer
	if err := page().Execute(&b, v); err != nil {
		return pass, fmt.Errorf("render report: %w", err)
	}
	// The capture's names may hold control characters, which XML forbids,
	// and format characters such as U+202E, which reorder the text shown:
	// both are written as visible escapes.
	_, err = w.Write(textsafe.Markup(b.Bytes()))
	return pass, err
}

// view is everything the template shows.
type view struct {
	Title, File, Ends, Tool, Sub string
	Facts                        []fact
	Losses                       *lossView
	Recovered                    string
	// Filtered is set when a probe had an in-kernel filter: the capture
	// is a subset of the events.
	Filtered bool
	// RateLimited is set when a probe had a rate limit (record
	// --max-rate): the capture is a subset too.
	RateLimited bool
	// RowFilter is the --pid, --tid, --comm, --from and --to the report
	// was made with, as text; "" if none.
	RowFilter string
	Probes    []probeView
	Timeline  template.HTML
	Latencies []latencyView
	// LatencyNote says where the latency pairs come from when the report
	// found them itself.
	LatencyNote string
	Requests    []requestsView
	Compares    []compareView
	Hists       []histView
	Heatmaps    []template.HTML
	HeatmapNote string
	// Addresses lists the fields that hold addresses, left out of the
	// histograms and heat maps ("rx nc").
	Addresses string
	Flames    []flameView
	Inputs    []inputView
}

// flameView is the flame graph of one stack field of one probe.
type flameView struct {
	Probe, Field, Command, Note string
	SVG                         template.HTML
}

// flames draws a flame graph of every stack field of every probe (a pass
// each).
func flames(c *replay.Capture, o *Options) ([]flameView, error) {
	var out []flameView
	for _, p := range c.Meta().Probes {
		for _, f := range p.Fields {
			mode, flag := replay.StacksUser, "--user"
			switch f.Type {
			case format.UserStack:
			case format.KernelStack:
				mode, flag = replay.StacksKernel, "--kernel"
			default:
				continue
			}
			r, _, err := replay.Stacks(c, replay.StacksOptions{Rows: o.Rows, Probe: p.Name, Mode: mode})
			if err != nil {
				return nil, fmt.Errorf("stacks of %s %s: %w", p.Name, f.Name, err)
			}
			stacks := make([]flamegraph.Stack, len(r.Stacks))
			for i, s := range r.Stacks {
				stacks[i] = flamegraph.Stack{Frames: s.Frames, Value: s.Value}
			}
			svg, err := flamegraph.Fragment(stacks, flamegraph.Options{Title: p.Name + " " + f.Name, Width: 1100,
				Unit: flamegraph.UnitEvents}, fmt.Sprintf("f%d", len(out)))
			if err != nil {
				return nil, err
			}
			fv := flameView{Probe: p.Name, Field: f.Name, SVG: svg,
				Command: fmt.Sprintf("bpftape flamegraph %s %s %s -o %s.svg", shellQuote(c.Name), shellQuote(p.Name), flag, shellQuote(p.Name+"-"+f.Name))}
			var notes bytes.Buffer
			r.Notes(&notes)
			fv.Note = strings.TrimSpace(notes.String())
			out = append(out, fv)
		}
	}
	return out, nil
}

type fact struct {
	Label, Value string
	Mono         bool
}

type lossView struct {
	Total             string
	Percent           string
	ByProbe, ByCPU    []fact
	First, Last, Span string
}

type probeView struct {
	Name, Kind, Spec, Target, BuildID, Events, Lost string
	Fields                                          []string
	HasLoss                                         bool
	// Filter is the probe's in-kernel filter and Filtered what it
	// rejected ("" for a probe without one); Rate is its rate limit
	// (events a second) and RateLimited what that rejected ("" for none).
	Filter, Filtered  string
	Rate, RateLimited string
}

type histView struct {
	Probe, Title, Type, Stats, BCC, Command string
	Bars                                    []bar
	Empty                                   bool
}

type bar struct {
	Lo, Hi, Count string
	Width         float64 // percent of the widest bar
	Tip           string
}

type latencyView struct {
	Title, Summary, Unmatched, BCC, Command string
	Bars                                    []bar
	Heatmap                                 template.HTML
}

type requestsView struct {
	Title, Summary, BCC, Command string
	End, Total                   histView
}

type compareView struct {
	Title, A, B, Verdict, KS, StatsA, StatsB, BCC, Command string
	Identical                                              bool
	Rows                                                   []compareRow
}

type compareRow struct {
	Lo, Hi, A, B, Delta string
	WA, WB              float64
}

type inputView struct {
	File, Host, Kernel, Started, Shift, Command string
}

// fieldAcc accumulates one numeric field of one probe in the first pass.
type fieldAcc struct {
	probe, field string
	typ          format.Type
	ref          replay.Ref
	log2         hist.Log2
	stats        hist.Stats
}

// addN records n occurrences of v, as n of tally's additions would.
func (a *fieldAcc) addN(v int64, n uint64) {
	a.log2.AddN(uint64(v), n)
	a.stats.AddN(v, n)
}

// batchPart is what one batch adds to a report's counts, field
// histograms, time line and field heat maps, made on the goroutine that
// decoded it (replay.WalkMerged).
type batchPart struct {
	counts      []uint64 // by probe
	first, last int64
	seen        uint64
	accs        []fieldAcc // the report's, their histograms the batch's
	runs        []*replay.FieldRuns
	tl          *heatmap.Map
	heat        *heatmap.FillPart
}

// newBatchPart returns an empty part that counts the time line into tl and
// the field heat maps into heat.
func newBatchPart(probes int, accs []*fieldAcc, tl *heatmap.Map, heat *heatmap.FillPart) *batchPart {
	pt := &batchPart{counts: make([]uint64, probes), accs: make([]fieldAcc, len(accs)), tl: tl, heat: heat}
	for k, a := range accs {
		pa := &pt.accs[k]
		pa.ref = a.ref
		pt.runs = append(pt.runs, replay.NewFieldRuns(a.ref, replay.Cast{}, pa.addN))
	}
	return pt
}

// span adds event rows [lo, hi) of b.
func (pt *batchPart) span(b *format.Batch, lo, hi int, hb *heatmap.Builder) {
	probes, times := b.Probe[lo:hi], b.Time[lo:hi]
	for _, p := range probes {
		pt.counts[p]++
	}
	if pt.seen == 0 {
		pt.first, pt.last = times[0], times[0]
	}
	pt.seen += uint64(hi - lo)
	for _, t := range times {
		pt.first, pt.last = min(pt.first, t), max(pt.last, t)
	}
	for _, r := range pt.runs {
		r.Span(b, lo, hi)
	}
	pt.tl.AddCategories(times, probes)
	hb.FillFieldSpan(pt.heat, b, lo, hi)
}

// reset empties pt for the next batch, but for the time line and heat
// maps, which AddPart and AddFillPart empty.
func (pt *batchPart) reset() {
	clear(pt.counts)
	pt.first, pt.last, pt.seen = 0, 0, 0
	for k := range pt.accs {
		// The statistics keep their buckets' memory: fresh for every
		// batch, it was a page fault every 4 KiB.
		pt.accs[k].log2 = hist.Log2{}
		pt.accs[k].stats.Reset()
	}
}

// analyses are the latency, request and comparison analyses a report
// asks for, fed the events of its first pass.
type analyses struct {
	latencies []*replay.Latencies
	requests  []*replay.RequestTotals
	compares  []*comparison
}

// comparison is one --compare: its sides, and whether side B reads the
// report's capture (else another file, read in a pass of its own).
type comparison struct {
	spec   CompareSpec
	a, b   *replay.Side
	cmp    *replay.Comparison
	shared bool
}

// newAnalyses resolves the analyses o asks for against c; it opens the
// other files of comparisons, which close closes.
func newAnalyses(c *replay.Capture, o *Options) (*analyses, error) {
	as := &analyses{}
	for _, l := range o.Latencies {
		la, err := replay.NewLatencies(c, replay.LatencyOptions{Rows: o.Rows, Entry: l.Entry, Return: l.Return, Now: o.Now})
		if err != nil {
			return as, fmt.Errorf("--latency %s %s: %w", l.Entry, l.Return, err)
		}
		as.latencies = append(as.latencies, la)
	}
	for _, r := range o.Requests {
		ra, err := replay.NewRequestTotals(c, replay.RequestsOptions{Rows: o.Rows, ItemProbe: r.ItemProbe, ItemField: r.ItemField,
			EndProbe: r.EndProbe, EndField: r.EndField, Now: o.Now, Stats: true}, nil)
		if err != nil {
			return as, fmt.Errorf("--requests %s %s %s %s: %w", r.ItemProbe, r.ItemField, r.EndProbe, r.EndField, err)
		}
		as.requests = append(as.requests, ra)
	}
	for _, cs := range o.Compares {
		cmp := &comparison{spec: cs, shared: cs.FileB == "" || cs.FileB == c.Name}
		cb := c
		if !cmp.shared {
			var err error
			if cb, err = replay.Open(cs.FileB); err != nil {
				return as, fmt.Errorf("--compare: %w", err)
			}
		}
		cmp.a = &replay.Side{Capture: c, Probe: cs.ProbeA, Field: cs.FieldA}
		cmp.b = &replay.Side{Capture: cb, Probe: cs.ProbeB, Field: cs.FieldB}
		as.compares = append(as.compares, cmp)
		var err error
		if cmp.cmp, err = replay.NewComparison(cmp.a, cmp.b); err != nil {
			return as, fmt.Errorf("--compare: %w", err)
		}
	}
	return as, nil
}

// add feeds event row i of b, of the report's capture, to every analysis.
func (as *analyses) add(b *format.Batch, i int) {
	for _, l := range as.latencies {
		l.Add(b, i)
	}
	for _, r := range as.requests {
		r.Add(b, i)
	}
	for _, c := range as.compares {
		c.cmp.AddA(b, i)
		if c.shared {
			c.cmp.AddB(b, i)
		}
	}
}

// addSpan is add for each of rows [lo, hi) of b, a stretch of events of
// a pass without a row filter.
func (as *analyses) addSpan(b *format.Batch, lo, hi int) {
	for _, l := range as.latencies {
		l.AddSpan(b, lo, hi)
	}
	for _, r := range as.requests {
		r.AddSpan(b, lo, hi)
	}
	for _, c := range as.compares {
		for i := lo; i < hi; i++ {
			c.cmp.AddA(b, i)
			if c.shared {
				c.cmp.AddB(b, i)
			}
		}
	}
}

// columns returns the columns add reads.
func (as *analyses) columns() []int {
	var cols []int
	for _, l := range as.latencies {
		cols = append(cols, l.Columns()...)
	}
	for _, r := range as.requests {
		cols = append(cols, r.Columns()...)
	}
	for _, c := range as.compares {
		cols = append(cols, c.cmp.ColumnsA()...)
		if c.shared {
			cols = append(cols, c.cmp.ColumnsB()...)
		}
	}
	return cols
}

// close closes the other files of comparisons.
func (as *analyses) close() {
	for _, c := range as.compares {
		if !c.shared {
			c.b.Capture.Close()
		}
	}
}

func build(c *replay.Capture, o *Options) (*view, *replay.Pass, error) {
	path := c.Name
	m := c.Meta()
	var latencyNote string
	if len(o.Latencies) == 0 && o.MaxAutoLatencies > 0 {
		o.Latencies = Pairs(m)
		if len(o.Latencies) > 0 {
			latencyNote = "Entry and return probes the report paired: a uprobe and a uretprobe, a kprobe and a kretprobe, or a fentry and a fexit on the same function, or else a probe and its :return."
		}
		if n := len(o.Latencies); n > o.MaxAutoLatencies {
			latencyNote += fmt.Sprintf(" The first %d of %d pairs.", o.MaxAutoLatencies, n)
			o.Latencies = o.Latencies[:o.MaxAutoLatencies]
		}
		if latencyNote != "" {
			latencyNote += fmt.Sprintf(" Name the pairs with 'bpftape report --latency \"ENTRY RETURN\"', or draw one with 'bpftape latency %s ENTRY RETURN'.", shellQuote(path))
		}
	}
	var accs []*fieldAcc
	var specs []heatmap.Spec
	var addrs []string
	for _, p := range m.Probes {
		for _, f := range p.Fields {
			if !f.Type.IsInt() {
				continue
			}
			if f.Pointer && !o.Pointers {
				addrs = append(addrs, p.Name+" "+f.Name)
				continue
			}
			ref, err := c.Resolve(p.Name, f.Name)
			if err != nil {
				return nil, nil, err
			}
			accs = append(accs, &fieldAcc{probe: p.Name, field: f.Name, typ: f.Type, ref: ref})
			if len(specs) < o.MaxHeatmaps {
				specs = append(specs, heatmap.Spec{Probe: p.Name, Field: f.Name, Title: p.Name + " " + f.Name})
			}
		}
	}
	nField := len(specs)
	for _, l := range o.Latencies {
		specs = append(specs, heatmap.Spec{Entry: l.Entry, Return: l.Return})
	}
	hb, err := heatmap.NewBuilder(c, specs, heatmap.Options{MaxCols: o.Cols})
	if err != nil {
		return nil, nil, err
	}
	as, err := newAnalyses(c, o)
	defer as.close()
	if err != nil {
		return nil, nil, err
	}
	// The first pass: counts, time spans, the field histograms, what the
	// heat maps must hold, and the other analyses.
	counts := make([]uint64, len(m.Probes))
	// The field histograms of each probe: an event adds to its own.
	byProbe := make([][]*fieldAcc, len(m.Probes))
	for _, a := range accs {
		pi, _ := m.Probe(a.probe)
		byProbe[pi] = append(byProbe[pi], a)
	}
	var first, last int64
	var seen uint64
	var lossFirst, lossLast int64
	var lossSeen bool
	need := append(hb.Columns(), as.columns()...)
	for _, a := range accs {
		need = append(need, a.ref.Column())
	}
	// tally is the first pass: counts, time spans, the field histograms
	// and the other analyses.
	tally := func(b *format.Batch, i int, lost bool) error {
		t := b.Time[i]
		if lost {
			if !lossSeen {
				lossFirst, lossLast, lossSeen = t, t, true
			}
			lossFirst, lossLast = min(lossFirst, t), max(lossLast, t)
			return nil
		}
		counts[b.Probe[i]]++
		if seen == 0 {
			first, last = t, t
		}
		seen++
		first, last = min(first, t), max(last, t)
		for _, a := range byProbe[b.Probe[i]] {
			if v, ok := a.ref.Int(b, i); ok {
				a.log2.Add(uint64(v))
				a.stats.Add(v)
			}
		}
		as.add(b, i)
		return nil
	}
	// The time line (events per probe, and lost events) and the heat maps
	// share the time axis of the events shown (or of the window asked
	// for), so that they line up: known before reading when the footer's
	// counts say it or --from and --to do, and then one pass does all.
	var tl *heatmap.Map
	var axis heatmap.Axis
	labels := append(m.ProbeNames(), "lost events")
	lostRow := int64(len(m.Probes))
	plan := func() error {
		win := heatmap.Window{First: first, Last: last}
		if seen == 0 {
			win = heatmap.Window{First: m.StartBoot, Last: m.StartBoot}
		}
		if lossSeen {
			// Loss records are reported after the events they count: show them too.
			if seen == 0 {
				win = heatmap.Window{First: lossFirst, Last: lossLast}
			}
			win.First, win.Last = min(win.First, lossFirst), max(win.Last, lossLast)
		}
		if o.Rows.From != 0 || o.Rows.To != 0 {
			win.First = m.StartBoot + int64(o.Rows.From)
			if o.Rows.To != 0 {
				win.Last = m.StartBoot + int64(o.Rows.To) - 1
			}
			win.Last = max(win.Last, win.First)
		}
		if err := hb.Plan(&win); err != nil {
			return err
		}
		var err error
		if axis, err = heatmap.NewAxis(m.StartBoot, win.First, win.Last, 0, o.Cols); err != nil {
			return err
		}
		tl = heatmap.New(axis, heatmap.CategoryRows(labels))
		tl.Base, tl.YLabel, tl.Title = m.StartBoot, "probe", "Events per probe over time"
		tl.Alert = []int{int(len(m.Probes))}
		return nil
	}
	fill := func(b *format.Batch, i int, lost bool) error {
		if lost {
			n, _ := b.Lost(i)
			tl.AddN(b.Time[i], lostRow, n)
			return nil
		}
		tl.Add(b.Time[i], int64(b.Probe[i]))
		hb.Fill(b, i)
		return nil
	}
	var pass *replay.Pass
	if cn := c.FooterCounts(); cn != nil && o.Rows.Empty() {
		first, last, seen = cn.First, cn.Last, cn.Events
		lossFirst, lossLast, lossSeen = cn.LossFirst, cn.LossLast, cn.LossRecords > 0
		if err := plan(); err != nil {
			return nil, nil, err
		}
		// The latency heat maps take the calls the latencies pair,
		// rather than pair them again.
		for k, la := range as.latencies {
			la.Calls = hb.FeedLatency(nField+k, func() (unmatched, open, overflows uint64) {
				res := la.Result()
				return res.UnmatchedReturns, res.UnmatchedEntries, res.Overflows
			})
		}
		// The counts and spans are tallied again, as they read.
		first, last, seen, lossSeen = 0, 0, 0, false
		// addCounts adds a part's counts, time span and field
		// histograms to the report's.
		addCounts := func(pt *batchPart) {
			for p, n := range pt.counts {
				counts[p] += n
			}
			if pt.seen > 0 {
				if seen == 0 {
					first, last = pt.first, pt.last
				}
				first, last = min(first, pt.first), max(last, pt.last)
				seen += pt.seen
			}
			for k, a := range accs {
				a.log2.Merge(&pt.accs[k].log2)
				a.stats.Merge(&pt.accs[k].stats)
			}
		}
		switch {
		case c.Spans(&o.Rows) && tl.Cells()+hb.PartCells() <= heatmap.MaxPartCells:
			// Without a row filter, each batch's counts, field
			// histograms, time line and field heat maps where it is
			// decoded, added up here in file order, where the batch's
			// calls are paired and its loss records read.
			parts := sync.Pool{New: func() any { return newBatchPart(len(m.Probes), accs, tl.Part(), hb.NewFillPart()) }}
			pass, err = replay.WalkMerged(c, need, func(b *format.Batch) *batchPart {
				pt := parts.Get().(*batchPart)
				replay.EachSpan(b, func(lo, hi int) { pt.span(b, lo, hi, hb) })
				for _, r := range pt.runs {
					r.Flush()
				}
				return pt
			}, func(b *format.Batch, pt *batchPart) {
				addCounts(pt)
				tl.AddPart(pt.tl)
				hb.AddFillPart(pt.heat)
				pt.reset()
				parts.Put(pt)
				for i := 0; i < b.Len; {
					j := b.NextLoss(i)
					if j > i {
						as.addSpan(b, i, j)
						hb.FillLatencySpan(b, i, j)
					}
					if j == b.Len {
						break
					}
					tally(b, j, true)
					fill(b, j, true) // fails never: it counts
					i = j + 1
				}
			})
		case c.Spans(&o.Rows):
			// Maps too large to have a part per batch in flight: a
			// stretch of events at a time, in file order, into one part
			// whose time line and heat maps are the report's own.
			pt := newBatchPart(len(m.Probes), accs, tl, hb.OwnFillPart())
			pass, err = c.WalkSpans(need, func(b *format.Batch, lo, hi int) error {
				pt.span(b, lo, hi, hb)
				as.addSpan(b, lo, hi)
				hb.FillLatencySpan(b, lo, hi)
				return nil
			}, func(b *format.Batch, i int) error {
				tally(b, i, true)
				return fill(b, i, true)
			})
			for _, r := range pt.runs {
				r.Flush()
			}
			addCounts(pt)
		default:
			pass, err = c.WalkColumns(need, &o.Rows, func(b *format.Batch, i int, lost bool) error {
				tally(b, i, lost)
				return fill(b, i, lost)
			})
		}
		if err != nil {
			return nil, pass, err
		}
	} else {
		if pass, err = c.WalkColumns(need, &o.Rows, tally); err != nil {
			return nil, pass, err
		}
		if err := plan(); err != nil {
			return nil, pass, err
		}
		if pass, err = c.WalkColumns(hb.Columns(), &o.Rows, fill); err != nil {
			return nil, pass, err
		}
	}
	if pass.Losses.Total == 0 {
		tl = trimLastRow(tl, axis, labels) // no losses: no empty row
	} else {
		tl.Notes = []string{"lost events: counted at the time of their loss record, which the recorder writes after the loss"}
	}

	v := &view{
		Title: o.Title, File: path, Tool: "bpftape " + o.Version,
		Ends: o.Now.UTC().Format("2006-01-02 15:04:05 MST"),
	}
	if v.Title == "" {
		v.Title = filepath.Base(path)
	}
	v.Facts = facts(c, pass, first, last, seen)
	v.Sub = fmt.Sprintf("host %s · kernel %s · %s events", m.Host, m.Kernel, commas(seen))
	if seen > 0 {
		v.Sub += " in " + humanfmt.Duration(float64(last-first))
	}
	v.Sub += " · started " + m.StartWall.UTC().Format("2006-01-02 15:04 UTC")
	if f := rowFilterText(&o.Rows); f != "" {
		v.RowFilter = f
	}
	if pass.Recovered {
		v.Recovered = fmt.Sprintf("%s has no footer (was the recorder killed?): the report reads its %d complete batches", path, pass.Batches)
		if pass.RecoverErr != nil {
			v.Recovered += fmt.Sprintf(" and drops the %v", pass.RecoverErr)
		}
		v.Recovered += ". 'bpftape repair' writes a standard file."
	}
	v.Losses = losses(&pass.Losses, m, pass.Events)
	for i, p := range m.Probes {
		pv := probeView{Name: p.Name, Kind: p.Kind, Spec: p.Spec, Target: p.Target, BuildID: p.BuildID,
			Events: commas(counts[i]), Lost: commas(pass.Losses.ByProbe[p.Name]), HasLoss: pass.Losses.ByProbe[p.Name] > 0}
		for _, f := range p.Fields {
			fv := f.Name + " " + f.Type.String()
			if f.Pointer && f.Type.IsInt() {
				fv += " (address)"
			}
			pv.Fields = append(pv.Fields, fv)
		}
		if p.Filter != "" {
			pv.Filter = p.Filter
			pv.Filtered = "how many events it rejected is not recorded (the file has no footer)"
			if m.Window == nil || m.Window.End != 0 {
				pv.Filtered = commas(p.Filtered) + " events rejected in the kernel"
			}
			v.Filtered = true
		}
		if p.MaxRate > 0 {
			pv.Rate = humanfmt.Rate(p.MaxRate)
			pv.RateLimited = "how many events it rejected is not recorded (the file has no footer)"
			if m.Window == nil || m.Window.End != 0 {
				pv.RateLimited = commas(p.RateLimited) + " events rate-limited in the kernel"
			}
			v.RateLimited = true
		}
		v.Probes = append(v.Probes, pv)
	}
	v.Timeline = svg(tl)

	maps := hb.Maps()
	for _, mp := range maps[:nField] {
		v.Heatmaps = append(v.Heatmaps, svg(mp))
	}
	if nField < len(accs) {
		v.HeatmapNote = fmt.Sprintf("Heat maps of the first %d of %d numeric fields; draw the others with 'bpftape heatmap %s PROBE FIELD' or raise --heatmaps.", nField, len(accs), path)
	}
	v.Addresses = strings.Join(addrs, ", ")
	v.LatencyNote = latencyNote
	for _, a := range accs {
		hv := log2View(&a.log2, &a.stats, a.field, false)
		hv.Probe, hv.Title, hv.Type = a.probe, a.field, a.typ.String()
		hv.Command = fmt.Sprintf("bpftape hist %s %s %s", shellQuote(path), shellQuote(a.probe), shellQuote(a.field))
		v.Hists = append(v.Hists, hv)
	}

	for i, l := range o.Latencies {
		lv, err := latency(path, l, as.latencies[i])
		if err != nil {
			return nil, pass, fmt.Errorf("--latency %s %s: %w", l.Entry, l.Return, err)
		}
		lv.Heatmap = svg(maps[nField+i])
		v.Latencies = append(v.Latencies, *lv)
	}
	for i, r := range o.Requests {
		rv, err := requests(path, r, as.requests[i])
		if err != nil {
			return nil, pass, fmt.Errorf("--requests %s %s %s %s: %w", r.ItemProbe, r.ItemField, r.EndProbe, r.EndField, err)
		}
		v.Requests = append(v.Requests, *rv)
	}
	for _, cmp := range as.compares {
		cv, err := compare(path, o, cmp)
		if err != nil {
			return nil, pass, fmt.Errorf("--compare: %w", err)
		}
		v.Compares = append(v.Compares, *cv)
	}
	if v.Flames, err = flames(c, o); err != nil {
		return nil, pass, err
	}
	for _, in := range m.Inputs {
		iv := inputView{File: in.Extra["merge.file"], Host: in.Host, Kernel: in.Kernel,
			Started: in.StartWall.UTC().Format(time.RFC3339), Command: textsafe.ShellQuote(in.CommandLine)}
		if s, err := strconv.ParseInt(in.Extra["merge.time_shift_ns"], 10, 64); err == nil && s != 0 {
			iv.Shift = humanfmt.Duration(float64(s))
		}
		v.Inputs = append(v.Inputs, iv)
	}
	return v, pass, nil
}

func trimLastRow(tl *heatmap.Map, axis heatmap.Axis, labels []string) *heatmap.Map {
	n := heatmap.New(axis, heatmap.CategoryRows(labels[:len(labels)-1]))
	n.Base, n.YLabel, n.Title = tl.Base, tl.YLabel, tl.Title
	for c := 0; c < axis.Cols; c++ {
		for r := 0; r < len(labels)-1; r++ {
			if k := tl.Count(c, r); k > 0 {
				n.AddN(axis.Start+int64(c)*axis.Step, int64(r), k)
			}
		}
	}
	return n
}

func svg(m *heatmap.Map) template.HTML {
	var b bytes.Buffer
	m.WriteSVG(&b, heatmap.SVGOptions{Width: 1180})
	return template.HTML(b.String()) // built by heatmap with every text escaped
}

func facts(c *replay.Capture, pass *replay.Pass, first, last int64, n uint64) []fact {
	m := c.Meta()
	fs := []fact{
		{Label: "File", Value: c.Name, Mono: true},
		{Label: "Host", Value: m.Host},
		{Label: "Kernel", Value: m.Kernel},
		{Label: "Recorded by", Value: m.Tool},
		{Label: "Command line", Value: textsafe.ShellQuote(m.CommandLine), Mono: true},
		{Label: "Capture started", Value: m.StartWall.UTC().Format("2006-01-02 15:04:05.000 UTC")},
	}
	if n > 0 {
		fs = append(fs, fact{Label: "Events", Value: fmt.Sprintf("%s, from %s to %s (%s), %s to %s",
			commas(n), offset(first, m), offset(last, m), humanfmt.Duration(float64(last-first)),
			m.WallTime(first).UTC().Format("15:04:05.000"), m.WallTime(last).UTC().Format("15:04:05.000 UTC"))})
	} else {
		fs = append(fs, fact{Label: "Events", Value: "none"})
	}
	fs = append(fs, fact{Label: "File size", Value: fmt.Sprintf("%s bytes, %d batches, %s compression",
		commas(uint64(c.Size())), pass.Batches, m.Compression)})
	for _, k := range sortedKeys(m.Extra) {
		fs = append(fs, fact{Label: k, Value: m.Extra[k]})
	}
	return fs
}

func losses(l *replay.Losses, m *format.Meta, events uint64) *lossView {
	if l.Total == 0 {
		return nil
	}
	lv := &lossView{Total: commas(l.Total), First: offset(l.First, m), Last: offset(l.Last, m)}
	lv.Percent = fmt.Sprintf("%.2f%%", 100*float64(l.Total)/float64(l.Total+events))
	for _, p := range sortedKeys(l.ByProbe) {
		lv.ByProbe = append(lv.ByProbe, fact{Label: p, Value: commas(l.ByProbe[p])})
	}
	cpus := make([]int, 0, len(l.ByCPU))
	for c := range l.ByCPU {
		cpus = append(cpus, int(c))
	}
	sort.Ints(cpus)
	for _, c := range cpus {
		lv.ByCPU = append(lv.ByCPU, fact{Label: fmt.Sprintf("cpu %d", c), Value: commas(l.ByCPU[uint16(c)])})
	}
	return lv
}

func rowFilterText(f *replay.RowFilter) string {
	var parts []string
	if len(f.PIDs) > 0 {
		parts = append(parts, fmt.Sprintf("pid %v", f.PIDs))
	}
	if len(f.TIDs) > 0 {
		parts = append(parts, fmt.Sprintf("tid %v", f.TIDs))
	}
	if len(f.Comms) > 0 {
		parts = append(parts, "comm "+strings.Join(f.Comms, ","))
	}
	if f.From != 0 || f.To != 0 {
		to := "the end"
		if f.To != 0 {
			to = "+" + f.To.String()
		}
		parts = append(parts, fmt.Sprintf("from +%s to %s", f.From, to))
	}
	return strings.Join(parts, "; ")
}

// log2View shows a log2 histogram as bars from its lowest to its highest
// non-empty slot, with BCC's text below.
func log2View(h *hist.Log2, s *hist.Stats, label string, durations bool) histView {
	var hv histView
	slots := h.Slots()
	lo, hi := -1, -1
	var top uint64
	for i, n := range slots {
		if n > 0 {
			if lo < 0 {
				lo = i
			}
			hi = i
			top = max(top, n)
		}
	}
	if lo < 0 {
		hv.Empty = true
		hv.Stats = "no values"
		return hv
	}
	cum := uint64(0)
	for i := lo; i <= hi; i++ {
		l, u := slotRange(i)
		cum += slots[i]
		b := bar{Lo: strconv.FormatUint(l, 10), Hi: strconv.FormatUint(u, 10), Count: commas(slots[i]),
			Width: 100 * float64(slots[i]) / float64(top)}
		if durations {
			b.Lo, b.Hi = humanfmt.Duration(float64(l)), humanfmt.Duration(float64(u))
		}
		b.Tip = fmt.Sprintf("%s of %s values (%.1f%%); %.1f%% at or below %d", commas(slots[i]), commas(h.Count()),
			100*float64(slots[i])/float64(h.Count()), 100*float64(cum)/float64(h.Count()), u)
		hv.Bars = append(hv.Bars, b)
	}
	hv.Stats = statsText(s, durations)
	var t bytes.Buffer
	h.WriteBCC(&t, label)
	hv.BCC = t.String()
	return hv
}

// slotRange is the range BCC prints for log2 slot i.
func slotRange(i int) (lo, hi uint64) {
	if i <= 1 {
		return 0, 1
	}
	lo = uint64(1) << (i - 1)
	return lo, math.MaxUint64 >> (64 - i)
}

func statsText(s *hist.Stats, durations bool) string {
	if s.Count() == 0 {
		return "no values"
	}
	f := func(v int64) string {
		if durations {
			return humanfmt.Duration(float64(v))
		}
		return strconv.FormatInt(v, 10)
	}
	mean := strconv.FormatFloat(s.Mean(), 'f', 1, 64)
	if durations {
		mean = humanfmt.Duration(s.Mean())
	}
	return fmt.Sprintf("count %s · min %s · mean %s · p50 %s · p90 %s · p99 %s · max %s",
		commas(s.Count()), f(s.Min()), mean, f(s.Percentile(50)), f(s.Percentile(90)), f(s.Percentile(99)), f(s.Max()))
}

func latency(path string, l LatencySpec, la *replay.Latencies) (*latencyView, error) {
	var text bytes.Buffer
	res, err := la.Write(&text)
	if err != nil {
		return nil, err
	}
	hv := log2View(&res.Hist, &res.Stats, "nsecs", true)
	lv := &latencyView{
		Title:   fmt.Sprintf("%s → %s", l.Entry, l.Return),
		Summary: fmt.Sprintf("%s calls · %s", commas(res.Calls), strings.TrimPrefix(hv.Stats, "count "+commas(res.Calls)+" · ")),
		BCC:     text.String(), Bars: hv.Bars,
		Command: fmt.Sprintf("bpftape latency %s %s %s", shellQuote(path), shellQuote(l.Entry), shellQuote(l.Return)),
	}
	if res.Calls == 0 {
		lv.Summary = "no calls: no return event followed an entry event on its thread"
	}
	lv.Unmatched = fmt.Sprintf("%s returns without entry, %s entries without return", commas(res.UnmatchedReturns), commas(res.UnmatchedEntries))
	if res.Overflows > 0 {
		lv.Unmatched += fmt.Sprintf(", %s entries beyond depth %d", commas(res.Overflows), replay.MaxDepth)
	}
	return lv, nil
}

func requests(path string, r RequestsSpec, ra *replay.RequestTotals) (*requestsView, error) {
	var text bytes.Buffer
	res, err := ra.Write(&text)
	if err != nil {
		return nil, err
	}
	rv := &requestsView{
		Title: fmt.Sprintf("%s.%s summed per thread until %s.%s", r.ItemProbe, r.ItemField, r.EndProbe, r.EndField),
		Summary: fmt.Sprintf("%s requests · %s ends without items skipped · %s incomplete requests (%s items) at the end",
			commas(res.Requests), commas(res.EndsWithoutItems), commas(res.Incomplete), commas(res.IncompleteItems)),
		BCC: text.String(),
		End: log2View(&res.End, &res.EndStats, r.EndField, false), Total: log2View(&res.Total, &res.TotalStats, r.ItemField, false),
		Command: fmt.Sprintf("bpftape requests %s %s %s %s %s", shellQuote(path), shellQuote(r.ItemProbe), shellQuote(r.ItemField),
			shellQuote(r.EndProbe), shellQuote(r.EndField)),
	}
	rv.End.Title = fmt.Sprintf("%s.%s per request", r.EndProbe, r.EndField)
	rv.Total.Title = fmt.Sprintf("sum of %s.%s per request", r.ItemProbe, r.ItemField)
	return rv, nil
}

func compare(path string, o *Options, cmp *comparison) (*compareView, error) {
	cs, a, b := cmp.spec, cmp.a, cmp.b
	ca, cb := a.Capture, b.Capture
	if !cmp.shared {
		if _, err := cb.ScanColumns(cmp.cmp.ColumnsB(), &o.Rows, cmp.cmp.AddB); err != nil {
			return nil, err
		}
	}
	var text bytes.Buffer
	res, err := cmp.cmp.Write(&text, replay.CompareOptions{Rows: o.Rows})
	if err != nil {
		return nil, err
	}
	name := func(s *replay.Side) string {
		if s.Capture != ca {
			return fmt.Sprintf("%s %s.%s", s.Capture.Name, s.Probe, s.Field)
		}
		return s.Probe + "." + s.Field
	}
	cv := &compareView{Title: name(a) + " vs " + name(b), A: name(a), B: name(b), Identical: res.Identical,
		StatsA: statsText(&a.Stats, false), StatsB: statsText(&b.Stats, false), BCC: text.String()}
	switch {
	case math.IsNaN(res.KS):
		cv.KS = "undefined (a histogram is empty)"
	default:
		cv.KS = strconv.FormatFloat(res.KS, 'f', 4, 64)
	}
	if res.Identical {
		cv.Verdict = "identical: every bucket count is equal"
	} else {
		cv.Verdict = "different"
	}
	sa, sb := a.Log2.Slots(), b.Log2.Slots()
	lo, hi := -1, -1
	var top uint64
	for i := range sa {
		if sa[i] > 0 || sb[i] > 0 {
			if lo < 0 {
				lo = i
			}
			hi = i
			top = max(top, sa[i], sb[i])
		}
	}
	for i := lo; i <= hi && lo >= 0; i++ {
		l, u := slotRange(i)
		cv.Rows = append(cv.Rows, compareRow{Lo: strconv.FormatUint(l, 10), Hi: strconv.FormatUint(u, 10),
			A: commas(sa[i]), B: commas(sb[i]), Delta: fmt.Sprintf("%+d", int64(sb[i])-int64(sa[i])),
			WA: 100 * float64(sa[i]) / float64(top), WB: 100 * float64(sb[i]) / float64(top)})
	}
	args := []string{shellQuote(path), shellQuote(cs.ProbeA), shellQuote(cs.FieldA)}
	if cb != ca {
		args = append(args, shellQuote(cs.FileB))
	}
	cv.Command = "bpftape compare " + strings.Join(append(args, shellQuote(cs.ProbeB), shellQuote(cs.FieldB)), " ")
	return cv, nil
}

func offset(t int64, m *format.Meta) string {
	return "+" + strings.TrimPrefix(humanfmt.Duration(float64(t-m.StartBoot)), "+")
}

func commas(n uint64) string { return humanfmt.Commas(n) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:@=+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
