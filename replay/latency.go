package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay/hist"
)

// LatencyOptions pair entry and return events of one function on the same
// thread, like funclatency, offline; or, with Key, start and end events
// with equal values of the Key fields, like biolatency.
//
// Unit buckets the histograms as funclatency -u or -m does: each duration
// divided by the unit and truncated. The summary (funclatency's "avg = …,
// total: …" line, the statistics line and the JSON "stats") is computed
// from the durations in nanoseconds and only then given in the unit, with
// decimals. funclatency sums the truncated durations instead, so that in
// msecs its total of a thousand calls of 0.9 ms is 0: bpftape's is 900.000.
type LatencyOptions struct {
	Rows          RowFilter
	Entry, Return string
	Unit          string // ns (default), us or ms
	JSON          bool
	// Now stamps the JSON histograms; zero means the capture's
	// (Capture.EndWall), so that a replay says when the data is from
	// and two replays of one capture print the same.
	Now time.Time
	// Key names fields that both probes have: an end pairs with the
	// latest start whose values of them are equal, whatever the threads.
	Key []string
	// By splits the histogram per key of the return event: "comm",
	// "pid", "tid" or a field of the return probe (biolatency -D).
	By string
	// Interval, if not 0, prints one histogram per interval of the
	// capture, by the return's time (funclatency -i with -T).
	Interval time.Duration
	// Style is "bcc" (default): the histograms as funclatency prints
	// them; or "bpftrace": as bpftrace prints @usecs = hist(...), the
	// map named after the unit, as Hist prints them in that style. The
	// JSON is the same in both.
	Style string
	// Bpftrace selects the bpftrace release whose output to mimic.
	Bpftrace hist.BpftraceVersion
}

// LatencyResult is what Latency counted.
type LatencyResult struct {
	Calls uint64 `json:"calls"`
	// UnmatchedReturns are returns with no entry on their thread (the
	// capture began inside the call); UnmatchedEntries never returned
	// before the capture ended; Overflows are entries dropped because a
	// thread nested deeper than MaxDepth.
	UnmatchedReturns uint64 `json:"unmatched_returns"`
	UnmatchedEntries uint64 `json:"unmatched_entries"`
	Overflows        uint64 `json:"overflows"`
	// Restarted counts, with a Key, the starts replaced by a later start
	// of the same key before any end: the later one is kept, as
	// bpftrace's @start[key] = nsecs keeps it.
	Restarted uint64 `json:"restarted"`
	// Hist counts the durations in the Unit, truncated, as funclatency
	// buckets them; Stats holds them in nanoseconds, whatever the Unit.
	Hist  hist.Log2
	Stats hist.Stats
}

// MaxDepth bounds each thread's stack of open calls.
const MaxDepth = 4096

type unit struct {
	div   int64
	label string
}

var units = map[string]unit{"ns": {1, "nsecs"}, "us": {1000, "usecs"}, "ms": {1000000, "msecs"}}

// Latencies pairs the entry and return events of one function on the same
// thread into call durations. It is fed the events of a pass one at a time
// (Add), so that it can share the pass with other analyses; Latency runs
// it alone.
type Latencies struct {
	o    LatencyOptions
	u    unit
	pair *Pairing // each start's token is its time
	res  LatencyResult
	// With By or Interval: the histograms by interval and key.
	ho     HistOptions
	byRef  *Ref
	grid   *intervalGrid
	slices *histSlices
	keys   rowKeys // addSpan's
	// Calls, when set, is handed the calls Add and AddSpan count, as
	// they count them: durations in nanoseconds and their return rows,
	// offsets from lo in b. A pass that also draws the calls (the
	// report's latency heat maps) takes them here rather than pair the
	// events a second time. With Calls set, Latency pairs the batches in
	// file order, not each where it is decoded (mergeable).
	Calls func(b *format.Batch, lo int, durs []int64, ends []int32)
	// recordDur and recordEnd are the one call record hands to Calls: its
	// duration, and its return row as an offset from itself (0).
	recordDur [1]int64
	recordEnd [1]int32
	// leadDurs is merge's, kept from batch to batch.
	leadDurs []int64
}

// NewLatencies resolves o's probes against c. o.Rows is the pass's to apply.
func NewLatencies(c *Capture, o LatencyOptions) (*Latencies, error) {
	if o.Unit == "" {
		o.Unit = "ns"
	}
	u, ok := units[o.Unit]
	if !ok {
		return nil, fmt.Errorf("unit %q: use ns, us or ms", o.Unit)
	}
	if o.Style != "" && o.Style != "bcc" && o.Style != "bpftrace" {
		return nil, usage.Errorf("style %q: use bcc or bpftrace", o.Style)
	}
	entry, err := c.ResolveProbe(o.Entry)
	if err != nil {
		return nil, err
	}
	ret, err := c.ResolveProbe(o.Return)
	if err != nil {
		return nil, err
	}
	if entry == ret {
		return nil, usage.Errorf("entry and return are the same probe %q", o.Entry)
	}
	if o.Now.IsZero() {
		o.Now = c.EndWall()
	}
	l := &Latencies{o: o, u: u}
	if l.pair, err = NewPairing(c, o.Entry, o.Return, o.Key); err != nil {
		return nil, err
	}
	bpftrace := o.Style == "bpftrace" && !o.JSON
	if o.By == "" && o.Interval == 0 && !bpftrace {
		return l, nil
	}
	l.ho = HistOptions{Rows: o.Rows, Probe: o.Return, Label: u.label, By: o.By, JSON: o.JSON, Now: o.Now, unit: u.div}
	if bpftrace {
		l.ho.Style, l.ho.Bpftrace = "bpftrace", o.Bpftrace
	}
	switch o.By {
	case "", "comm", "pid", "tid":
	default:
		r, err := c.Resolve(o.Return, o.By)
		if err != nil {
			return nil, fmt.Errorf("--by: %w", err)
		}
		l.byRef = &r
	}
	if o.Interval != 0 {
		if l.grid, err = newIntervalGrid(c.Meta(), &l.o.Rows, o.Interval); err != nil {
			return nil, err
		}
	}
	l.slices = newSlices(&l.ho, l.grid)
	l.keys = rowKeys{by: o.By}
	return l, nil
}

// Add pairs event row i of b, if it is an entry or a return.
func (l *Latencies) Add(b *format.Batch, i int) {
	if l.grid != nil {
		l.grid.see(b.Time[i])
	}
	if p := b.Probe[i]; p != l.pair.start && p != l.pair.end {
		return // no call for the other probes' events
	}
	switch step, start := l.pair.Add(b, i, b.Time[i]); step {
	case PairEnded:
		l.record(b, i, start)
	case PairOverflow:
		l.res.Overflows++
	case PairRestarted:
		l.res.Restarted++
	case PairUnmatched:
		l.res.UnmatchedReturns++
	}
}

// AddSpan is Add for each of rows [lo, hi) of b, a stretch of events of a
// pass without a row filter (Capture.WalkSpans), in a loop of its own
// where the options allow.
func (l *Latencies) AddSpan(b *format.Batch, lo, hi int) {
	if l.spans() {
		l.addSpan(b, lo, hi)
		return
	}
	for i := lo; i < hi; i++ {
		l.Add(b, i)
	}
}

// spans reports whether addSpan may take the events: calls paired by
// thread in a capture of one host, counted by interval and by comm, pid
// or tid, if at all (not by a field).
func (l *Latencies) spans() bool {
	return l.byRef == nil && l.pair.keys == nil && l.pair.threads.cols == nil
}

// addSpan is Add for rows [lo, hi) of b (when spans says so), in loops of
// its own rather than a call per event, which was most of latency's time
// after decoding: the rows of the two probes are picked and paired
// without a branch on whether a row starts or ends a call
// (Pairing.AddSpan), and the calls' durations counted.
func (l *Latencies) addSpan(b *format.Batch, lo, hi int) {
	if l.grid != nil {
		if t, ok := lastTime(b, lo, hi); ok {
			l.grid.see(t)
		}
	}
	unmatched, overflows, _ := l.pair.AddSpan(b, lo, hi, func(durs []int64, ends []int32) {
		l.calls(durs)
		if l.Calls != nil {
			l.Calls(b, lo, durs, ends)
		}
		if l.slices != nil {
			// By interval and key: each call at its return's row.
			for j, i := range ends {
				l.keys.find(l.slices, b, lo+int(i)).add(durs[j], &l.ho)
			}
		}
	})
	l.res.UnmatchedReturns += unmatched
	l.res.Overflows += overflows
}

// callPairer pairs the start and end rows of stretches of events on the
// stacks of open calls of their threads (Pairing.AddSpan, Latencies.part).
type callPairer struct {
	start, end uint16
	stacks     *openCalls
	// leads, if set, takes the ends that find their thread's stack empty
	// (unmatched counts them either way): in a batch paired on its own
	// (Latencies.part), they end calls of the batches before it.
	leads *[]leadEnd
	// scratch, if set, is kept from span to span: a run of rows whose
	// thread's stack has not the room for a push at every row is paired
	// on a copy of the stack there, so that each thread's own stack holds
	// about as many calls as it has open.
	scratch *[]int64
	// out, if set, is where span gathers what each PickMax rows pair,
	// kept from span to span: 20 KiB, which span allocated at every
	// call otherwise (the calls func takes slices of it), a collection
	// every few batches.
	out *pairedRows
	// What span counted: ends with no open start, starts dropped past
	// MaxDepth, and a bound no lower than the deepest a thread's stack
	// went in the rows span paired.
	unmatched, overflows uint64
	depth                int
}

// leadEnd is the end row of a thread's call that a batch paired on its own
// found no start for: its thread key and time.
type leadEnd struct {
	thread uint64
	time   int64
}

// span pairs the start and end rows among rows [lo, hi) of b and hands
// calls each PickMax rows' durations and their end rows (offsets from lo).
func (pr *callPairer) span(b *format.Batch, lo, hi int, calls func(durs []int64, ends []int32)) {
	probes := b.Probe[lo:hi]
	times, tids := b.Time[lo:hi][:len(probes)], b.TID[lo:hi][:len(probes)]
	var rows [PickMax]int32
	out := pr.out
	if out == nil {
		out = new(pairedRows)
	}
	var scratch []int64
	if pr.scratch != nil {
		scratch = *pr.scratch
	}
	for first := 0; first < len(probes); first += PickMax {
		k := PickRows(&rows, probes[first:min(first+PickMax, len(probes))], first, pr.start, pr.end)
		out.calls, out.leads = 0, 0
		// The rows come in runs of one thread, or interleave with a
		// few other threads' (one on each CPU): each run is paired on
		// its thread's stack.
		for j := 0; j < k; {
			tid := tids[rows[j]]
			e := j + 1
			for e < k && tids[rows[e]] == tid {
				e++
			}
			st := pr.stacks.of(uint64(tid))
			leads := out.leads
			if n := len(*st); n+e-j <= MaxDepth {
				// A bound on the depth the run reaches, which
				// run does not track.
				pr.depth = max(pr.depth, n+e-j)
				if cap(*st) > n+e-j {
					*st = out.run(*st, rows[j:e], probes, times, pr.end)
				} else {
					// On a copy in scratch, which run grows
					// to a push a row; the thread's stack
					// takes back only the calls left open.
					scratch = out.run(append(scratch[:0], *st...), rows[j:e], probes, times, pr.end)
					*st = append((*st)[:0], scratch...)
				}
			} else {
				*st = pr.runDeep(out, *st, rows[j:e], probes, times)
			}
			if pr.leads != nil {
				for _, i := range out.leadRows[leads:out.leads] {
					*pr.leads = append(*pr.leads, leadEnd{uint64(tid), times[i]})
				}
			}
			j = e
		}
		pr.unmatched += uint64(out.leads)
		calls(out.durs[:out.calls], out.ends[:out.calls])
	}
	if pr.scratch != nil {
		*pr.scratch = scratch
	}
}

// pairedRows is what a run of rows of one thread paired: the durations
// and end rows of the calls they ended, and the end rows that found the
// thread's stack empty (leadRows), up to PickMax rows' worth.
type pairedRows struct {
	durs         [PickMax]int64
	ends         [PickMax]int32
	leadRows     [PickMax]int32
	calls, leads int
}

// run pairs rows, all of one thread, on the thread's stack s, which they
// cannot push past MaxDepth, adds what they pair to o and returns the
// stack. Its loop has no branch on whether a row starts or ends a call: a
// start is pushed; an end pops the innermost start into the durations.
// An end that finds the stack empty, rare but in a capture of returns
// alone, takes a branch of its own: kept in the loop's arithmetic, its
// count and store at every row cost 0.6 ns more a row on alternating
// rows, 0.3 on runs of four threads' (BenchmarkLatencySpan, 4 rounds:
// 4.20-4.24 against 3.57-3.63 ns, 3.52-3.61 against 3.25-3.35). It reads
// the rows' probes and times and the stack through pointers, their room
// checked once: a bounds check at each kept four slices' lengths live,
// and the loop's values went to the stack and back (3 rounds, alternating:
// 3.70-4.64 ns a row against 3.34-3.54, 3.44-3.95 against 3.23-3.51).
func (o *pairedRows) run(s []int64, rows []int32, probes []uint16, times []int64, end uint16) []int64 {
	if len(rows) == 0 {
		return s
	}
	// rows ascend (PickRows): the last is in probes and times if any is.
	if rows[0] < 0 || int(rows[len(rows)-1]) >= min(len(probes), len(times)) {
		panic("replay: pairedRows.run: row out of range")
	}
	n := len(s)
	s = slices.Grow(s, len(rows)+1)[:n+len(rows)+1]
	nd := o.calls
	ps, ts, sp := unsafe.Pointer(unsafe.SliceData(probes)), unsafe.Pointer(unsafe.SliceData(times)), unsafe.Pointer(unsafe.SliceData(s))
	for _, i := range rows {
		t := *(*int64)(unsafe.Add(ts, 8*int(i)))
		isEnd := b2i(*(*uint16)(unsafe.Add(ps, 2*int(i))) == end)
		top := *(*int64)(unsafe.Add(sp, 8*max(n-1, 0)))
		*(*int64)(unsafe.Add(sp, 8*n)) = t
		if isEnd&b2i(n == 0) != 0 {
			o.leadRows[o.leads&(PickMax-1)] = i
			o.leads++
			continue
		}
		o.durs[nd&(PickMax-1)], o.ends[nd&(PickMax-1)] = t-top, i
		nd += isEnd
		n += 1 - 2*isEnd
	}
	o.calls = nd
	return s[:n]
}

// runDeep is run for rows that could push their thread's stack past
// MaxDepth: a start that would is dropped (counted in overflows).
func (pr *callPairer) runDeep(o *pairedRows, s []int64, rows []int32, probes []uint16, times []int64) []int64 {
	pr.depth = max(pr.depth, len(s))
	for _, i := range rows {
		t := times[i]
		n := len(s)
		switch {
		case probes[i] != pr.end:
			if n >= MaxDepth {
				pr.overflows++
				continue
			}
			s = append(s, t)
			pr.depth = max(pr.depth, n+1)
		case n == 0:
			o.leadRows[o.leads] = i
			o.leads++
		default:
			o.durs[o.calls], o.ends[o.calls] = t-s[n-1], i
			o.calls++
			s = s[:n-1]
		}
	}
	return s
}

// latencyPart is what the rows of one batch pair among themselves, in a
// pass that pairs each batch where it is decoded (Latencies.scanMerged).
type latencyPart struct {
	res    LatencyResult // the calls the batch begins and ends
	leads  []leadEnd     // the ends that end calls begun before it, in order
	open   openCalls     // the calls it leaves open, by thread
	depth  int           // no lower than the deepest a thread's stack went in the batch
	excess bool          // a start was dropped past MaxDepth in the batch alone
	// scratch and paired are where part pairs a thread's run of rows
	// (callPairer).
	scratch []int64
	paired  pairedRows
}

// part pairs the event rows of b among themselves.
func (l *Latencies) part(b *format.Batch, pt *latencyPart) {
	pr := callPairer{start: l.pair.start, end: l.pair.end, stacks: &pt.open, leads: &pt.leads, scratch: &pt.scratch, out: &pt.paired}
	eachSpan(b, func(lo, hi int) {
		pr.span(b, lo, hi, func(durs []int64, _ []int32) { l.count(&pt.res, durs) })
	})
	pt.depth, pt.excess = pr.depth, pr.overflows > 0
}

// merge adds part pt of batch b to the calls: its leading ends pop the
// calls left open before it, in order, then the calls it leaves open are
// pushed. Where a thread could have passed MaxDepth with the calls open
// before the batch (which the part did not know), b is paired again here
// as addSpan pairs it, so that the starts dropped are the same.
func (l *Latencies) merge(b *format.Batch, pt *latencyPart) {
	stacks := &l.pair.stacks
	redo := pt.excess
	for k := range pt.open.m {
		if redo {
			break
		}
		// A start overflows where its thread holds MaxDepth calls:
		// at most those open before and the batch's depth less one.
		redo = len(*stacks.of(k))+pt.depth > MaxDepth
	}
	if redo {
		eachSpan(b, func(lo, hi int) { l.addSpan(b, lo, hi) })
		return
	}
	l.res.Calls += pt.res.Calls
	l.res.Hist.Merge(&pt.res.Hist)
	l.res.Stats.Merge(&pt.res.Stats)
	durs := l.leadDurs[:0]
	for _, e := range pt.leads {
		s := stacks.of(e.thread)
		if len(*s) == 0 {
			l.res.UnmatchedReturns++
			continue
		}
		durs = append(durs, e.time-(*s)[len(*s)-1])
		*s = (*s)[:len(*s)-1]
	}
	l.calls(durs)
	l.leadDurs = durs
	for k, open := range pt.open.m {
		if len(*open) > 0 {
			s := stacks.of(k)
			*s = append(*s, *open...)
		}
	}
}

// reset empties pt for another batch.
func (pt *latencyPart) reset() {
	// The statistics keep their buckets' memory: a batch's calls
	// allocated them anew for every batch.
	stats := pt.res.Stats
	stats.Reset()
	pt.res, pt.leads = LatencyResult{Stats: stats}, pt.leads[:0]
	pt.open.reuse(func(s *[]int64) { *s = (*s)[:0] })
	pt.depth, pt.excess = 0, false
}

// scanMerged is Latency's pass without row filter, each batch paired
// where it is decoded (mergedSpans) and merged here in file order: for
// calls by thread, counted in one histogram (mergeable).
func (l *Latencies) scanMerged(c *Capture) (*Pass, error) {
	r, timed := c.readerFor(l.Columns(), nil)
	parts := sync.Pool{New: func() any { return new(latencyPart) }}
	return mergedSpans(c, r, timed, func(b *format.Batch) *latencyPart {
		pt := parts.Get().(*latencyPart)
		l.part(b, pt)
		return pt
	}, func(pt *latencyPart) {
		l.merge(r.Batch(), pt)
		pt.reset()
		parts.Put(pt)
	})
}

// mergeable reports whether scanMerged may take a pass with row filter f.
func (l *Latencies) mergeable(f *RowFilter) bool {
	return l.spans() && f.Empty() && l.grid == nil && l.slices == nil && l.Calls == nil
}

// record counts the call that return row i of b ends, begun at start: its
// histogram bucket in the unit, its statistics in nanoseconds.
func (l *Latencies) record(b *format.Batch, i int, start int64) {
	ns := b.Time[i] - start
	l.call(ns)
	if l.Calls != nil {
		l.recordDur[0] = ns
		l.Calls(b, i, l.recordDur[:], l.recordEnd[:])
	}
	if l.slices != nil {
		l.slices.at(b.Time[i]).pick(l.o.By, l.byRef, b, i).add(ns, &l.ho)
	}
}

// call counts a call of ns nanoseconds: its histogram bucket in the unit,
// its statistics in nanoseconds.
func (l *Latencies) call(ns int64) {
	l.res.Calls++
	if l.u.div == 1 {
		l.res.Hist.Add(uint64(ns)) // no division: the default unit
	} else {
		l.res.Hist.Add(uint64(ns / l.u.div))
	}
	l.res.Stats.Add(ns)
}

// calls counts the calls of ns nanoseconds each, as call does one by one.
func (l *Latencies) calls(ns []int64) { l.count(&l.res, ns) }

// count counts the calls of ns nanoseconds each into res.
func (l *Latencies) count(res *LatencyResult, ns []int64) {
	res.Calls += uint64(len(ns))
	if l.u.div == 1 {
		hist.AddAllLog2(&res.Stats, &res.Hist, ns)
		return
	}
	res.Stats.AddAll(ns)
	for _, v := range ns {
		res.Hist.Add(uint64(v / l.u.div))
	}
}

// Result is what the events added so far count, the entries still open
// counted as never returning.
func (l *Latencies) Result() *LatencyResult {
	res := l.res
	l.pair.Open(func(int64) { res.UnmatchedEntries++ })
	return &res
}

// Latency computes call durations and prints their histogram as funclatency
// does; it returns them and its pass over c.
func Latency(c *Capture, o LatencyOptions, out io.Writer) (*LatencyResult, *Pass, error) {
	l, err := NewLatencies(c, o)
	if err != nil {
		return nil, nil, err
	}
	var p *Pass
	switch {
	case l.mergeable(&o.Rows) && c.Spans(&o.Rows):
		p, err = l.scanMerged(c)
	case l.spans() && c.SpansWhere(&o.Rows):
		p, err = c.ScanSpansWhere(l.Columns(), &o.Rows, func(b *format.Batch, lo, hi int) error {
			l.addSpan(b, lo, hi)
			return nil
		})
	default:
		p, err = c.ScanColumns(l.Columns(), &o.Rows, l.Add)
	}
	p.Paired()
	if err != nil {
		return nil, p, err
	}
	res := l.Result()
	return res, p, l.write(out, res)
}

// Write prints the Result as funclatency does, or as JSON.
func (l *Latencies) Write(out io.Writer) (*LatencyResult, error) {
	res := l.Result()
	return res, l.write(out, res)
}

func (l *Latencies) write(out io.Writer, res *LatencyResult) error {
	o, u := &l.o, l.u
	if o.JSON {
		doc := map[string]any{
			"calls": res.Calls, "unit": o.Unit, "unmatched_returns": res.UnmatchedReturns,
			"unmatched_entries": res.UnmatchedEntries, "overflows": res.Overflows,
			"hist": histJSON(&res.Hist, u.label, o.Now), "stats": statsJSON(&res.Stats, u.div),
		}
		if len(o.Key) > 0 {
			doc["key"], doc["restarted"] = o.Key, res.Restarted
		}
		if err := l.slicesJSON(doc); err != nil {
			return err
		}
		return json.NewEncoder(out).Encode(doc)
	}
	switch {
	case l.grid != nil:
		if err := l.slices.writeIntervals(out, o.By != ""); err != nil {
			return err
		}
	case o.By != "" || l.ho.Style == "bpftrace":
		if err := printHistBody(out, &l.ho, l.slices.entries(0), o.By != "", l.ho.Now); err != nil {
			return err
		}
	default:
		if err := res.Hist.WriteBCC(out, u.label); err != nil {
			return err
		}
	}
	if res.Calls > 0 {
		s := &res.Stats
		if l.ho.Style != "bpftrace" {
			// bpftrace ends each histogram with a blank line already.
			fmt.Fprintln(out)
		}
		if u.div == 1 {
			fmt.Fprintf(out, "avg = %.0f %s, total: %s %s, count: %d\n", s.Mean(), u.label, s.Sum(), u.label, res.Calls)
		} else {
			fmt.Fprintf(out, "avg = %s %s, total: %s %s, count: %d\n", meanFixed3(s, u.div), u.label, fixed3(s.Sum(), u.div), u.label, res.Calls)
		}
		fmt.Fprintln(out, statsLine(s, u.div))
	}
	fmt.Fprintf(out, "unmatched: %d returns without entry, %d entries without return", res.UnmatchedReturns, res.UnmatchedEntries)
	if res.Overflows > 0 {
		fmt.Fprintf(out, ", %d entries beyond depth %d", res.Overflows, MaxDepth)
	}
	if len(o.Key) > 0 {
		fmt.Fprintf(out, ", %d entries restarted before a return (the later kept)", res.Restarted)
	}
	fmt.Fprintln(out)
	return nil
}

// slicesJSON adds the histograms by key ("hists", BCC's JSON sections)
// or by interval ("intervals", IntervalJSON) to doc.
func (l *Latencies) slicesJSON(doc map[string]any) error {
	if l.slices == nil {
		return nil
	}
	var buf bytes.Buffer
	if l.grid == nil {
		if err := printHistBody(&buf, &l.ho, l.slices.entries(0), true, l.ho.Now); err != nil {
			return err
		}
		doc["hists"] = nonNil(jsonLines(buf.Bytes()))
		return nil
	}
	if err := l.slices.writeIntervals(&buf, l.o.By != ""); err != nil {
		return err
	}
	doc["intervals"] = json.RawMessage(bytes.TrimSpace(buf.Bytes()))
	return nil
}

func nonNil(v []json.RawMessage) []json.RawMessage {
	if v == nil {
		return []json.RawMessage{}
	}
	return v
}
