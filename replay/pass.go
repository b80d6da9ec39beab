package replay

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/humanfmt"
	"github.com/bpftape/bpftape/internal/textsafe"
)

// Pass is what one read of a capture, from its first batch, found besides
// the events it handed on. Analyses return it, also with an error (it then
// holds what was read before the error), so that their caller can warn
// about losses and recovery (Notes).
type Pass struct {
	// Events counts the event rows read (loss records excluded), before
	// the row filter.
	Events uint64
	// Losses tallies every loss record read, whatever the row filter: they are
	// data, and every analysis reports them so that an undercounted
	// histogram is never silent.
	Losses Losses
	// Times tallies implausible event times, in the passes that read
	// every event's time (those whose analysis or row filter reads it).
	Times TimeAnomalies
	// Batches is the number of batches read, RawBytes their size
	// uncompressed (Scan and Walk).
	Batches  int
	RawBytes int64
	// Recovered is set when the capture has no footer (Capture.Recovered):
	// the pass read its complete batches, and RecoverErr says what it
	// dropped after them (nil: the file ends at a batch boundary).
	Recovered  bool
	RecoverErr error

	name string
	meta *format.Meta
	// unmatched says what a row filter that matched no event left out (Scan).
	unmatched unmatched
	spans     bool // read a stretch of events at a time (spans)
	paired    bool // the analysis pairs entries with returns (Paired)
	// stopped: the analysis had all it wanted before the end (events -n);
	// Losses are then the footer's, of the whole capture, where it has
	// counts.
	stopped  bool
	progress Progress // the capture's, told when the pass is over
}

// Paired marks p as the pass of an analysis that pairs entry events with
// return events (latency, requests), whose durations losses can lengthen:
// Notes then says so.
func (p *Pass) Paired() {
	if p != nil {
		p.paired = true
	}
}

func (c *Capture) newPass() *Pass {
	return &Pass{name: c.Name, meta: c.Meta(), Recovered: c.Recovered(), progress: c.Progress}
}

// next is r.Next for a pass of c: it tells c.Progress of each batch read.
func (c *Capture) next(r *format.Reader) bool {
	if !r.Next() {
		return false
	}
	if c.Progress != nil {
		c.Progress.Read(r.Batches(), r.NumBatches())
	}
	return true
}

// read records what reader r read in the pass, which is over.
func (p *Pass) read(r *format.Reader) {
	p.Batches, p.RawBytes, p.RecoverErr = r.Batches(), r.RawBytes, r.RecoverErr
	if p.progress != nil {
		p.progress.Done()
	}
}

// Notes prints what the reader of an analysis must know about the pass:
// recovery, repair, losses, implausible times, and a row filter that
// matched nothing; for an analysis that pairs entries with returns
// (Paired), what losses and a repaired gap do to its durations.
// A nil Pass (an analysis that failed before it read) prints nothing.
func (p *Pass) Notes(w io.Writer) {
	if p == nil {
		return
	}
	switch {
	case p.Recovered && p.stopped:
		fmt.Fprintf(w, "NOTE: %s has no footer (was the recorder killed?); 'bpftape repair' writes a standard file.\n", p.name)
	case p.Recovered:
		fmt.Fprintf(w, "NOTE: %s has no footer (was the recorder killed?): read its %s", p.name, humanfmt.Plural(uint64(p.Batches), "complete batch", "complete batches"))
		if p.RecoverErr != nil {
			fmt.Fprintf(w, ", dropped the %v", p.RecoverErr)
		}
		fmt.Fprintf(w, "; 'bpftape repair' writes a standard file.\n")
	}
	if left := p.meta.Extra[format.ExtraRepaired]; left != "" {
		fmt.Fprintf(w, "NOTE: %s: %s: counts are low by those events", p.name, textsafe.Escape(left))
		if p.paired {
			fmt.Fprintf(w, ", and a call may pair an entry before the gap with a return after it")
		}
		fmt.Fprintf(w, ".\n")
	}
	p.Losses.Warn(w, p.name, p.meta)
	if p.paired && p.Losses.Total > 0 {
		fmt.Fprintf(w, "WARNING: %s: where a return's event was lost, its entry pairs with a later call's return: durations of calls that span the losses (up to %s) may be too long.\n",
			p.name, offset(p.Losses.Last, p.meta))
	}
	warnRateLimited(w, p.name, p.meta)
	p.Times.Warn(w, p.name)
	p.unmatched.note(w, p.name)
}

// warnRateLimited warns that the capture name's rate-limited probes (record
// --max-rate) recorded a subset of their events, as a loss warning does:
// N events rate-limited in the kernel, by probe, with each probe's rate.
func warnRateLimited(w io.Writer, name string, m *format.Meta) {
	if m == nil {
		return
	}
	ps := RateLimitedProbes(m)
	if len(ps) == 0 {
		return
	}
	var total uint64
	parts := make([]string, len(ps))
	for i, p := range ps {
		total = format.AddCount(total, p.RateLimited)
		parts[i] = fmt.Sprintf("%s %d (at most %s/s)", textsafe.Escape(p.Name), p.RateLimited, humanfmt.Rate(p.MaxRate))
		if footerless(m) {
			parts[i] = fmt.Sprintf("%s at most %s/s", textsafe.Escape(p.Name), humanfmt.Rate(p.MaxRate))
		}
	}
	switch {
	case footerless(m):
		fmt.Fprintf(w, "WARNING: %s: probes were rate-limited in the kernel (--max-rate: %s), how many events they rejected is not recorded (no footer): counts from these probes are of a subset.\n",
			name, strings.Join(parts, ", "))
	case total > 0:
		fmt.Fprintf(w, "WARNING: %s: %d events rate-limited in the kernel (--max-rate: %s): counts from these probes are of a subset.\n",
			name, total, strings.Join(parts, ", "))
	}
}

// Scan reads the capture from its first batch and calls fn for every event
// row that passes f (nil: every event); loss records are tallied in the
// Pass, not handed on. Every column is decoded: see ScanColumns.
func (c *Capture) Scan(f *RowFilter, fn func(b *format.Batch, i int)) (*Pass, error) {
	return c.ScanColumns(nil, f, fn)
}

// ScanColumns is Scan decoding only the columns cols lists (schema
// indices, as Column and Ref.Column give them) besides those every pass
// reads, the probe and the loss count, and the columns f selects on. A
// batch's other columns are empty (see format.Reader.Select); nil decodes
// every column. The pass checks event times (Pass.Times) only when the
// time is among them.
func (c *Capture) ScanColumns(cols []int, f *RowFilter, fn func(b *format.Batch, i int)) (*Pass, error) {
	r, timed := c.readerFor(cols, f)
	return c.walkWith(r, timed, f, false, func(b *format.Batch, i int, _ bool) error {
		fn(b, i)
		return nil
	})
}

// Walk reads the capture from its first batch and calls fn for every event
// that passes f and for every loss record in f's time window (loss records
// have no process), in file order, with lost set for loss records: for
// the tools that must place losses (exports, time lines) where Scan only
// tallies them. It stops at the first error fn returns, and returns it.
// Every column is decoded: see WalkColumns.
func (c *Capture) Walk(f *RowFilter, fn func(b *format.Batch, i int, lost bool) error) (*Pass, error) {
	return c.WalkColumns(nil, f, fn)
}

// WalkColumns is Walk decoding only the columns cols lists, as
// ScanColumns does. A loss record's time and cpu are always decoded.
func (c *Capture) WalkColumns(cols []int, f *RowFilter, fn func(b *format.Batch, i int, lost bool) error) (*Pass, error) {
	if f == nil {
		f = &RowFilter{}
	}
	r, timed := c.readerFor(cols, f)
	return c.walkWith(r, timed, f, true, fn)
}

// readerFor starts a pass that decodes cols (nil: every column) and what
// every pass and f need; timed reports whether they include the time.
func (c *Capture) readerFor(cols []int, f *RowFilter) (r *format.Reader, timed bool) {
	r = c.reader()
	return r, c.selectColumns(r, cols, f)
}

// selectColumns makes r decode cols (nil: every column) and what f needs,
// and reports whether that includes the time of every event: a pass
// checks the times it reads (TimeAnomalies), since only the analyses that
// read them are misled by damaged ones.
func (c *Capture) selectColumns(r *format.Reader, cols []int, f *RowFilter) (timed bool) {
	need := slices.Concat(cols, f.columns())
	timed = cols == nil || slices.Contains(need, format.ColTime)
	if cols == nil || c.decodeAll {
		r.Select(nil)
	} else {
		r.Select(need)
	}
	return timed
}

// walkWith is ScanColumns (losses false) or WalkColumns with r, a reader
// at its first batch; timed: check the times of events (selectColumns).
func (c *Capture) walkWith(r *format.Reader, timed bool, f *RowFilter, losses bool, fn func(b *format.Batch, i int, lost bool) error) (*Pass, error) {
	p := c.newPass()
	m := c.Meta()
	if f != nil && f.Empty() {
		f = nil
	}
	for c.next(r) {
		b := r.Batch()
		j := -1 // the next loss record at or after i, or b.Len
		for i := 0; i < b.Len; i++ {
			if j < i {
				j = b.NextLoss(i)
			}
			if i == j {
				p.lossRow(b, i)
				if losses && (f == nil || f.InWindow(b.Time[i], m.StartBoot)) {
					if err := fn(b, i, true); err != nil {
						p.read(r)
						return p, err
					}
				}
				continue
			} else if f == nil && !timed {
				// A stretch of events that no filter or check looks at.
				p.Events += uint64(j - i)
				p.unmatched.matched = true
				for ; i < j; i++ {
					if err := fn(b, i, false); err != nil {
						p.read(r)
						return p, err
					}
				}
				i--
				continue
			}
			p.Events++
			if timed {
				p.Times.Check(b.Time[i], m)
			}
			if f != nil && !f.Match(b, i, m.StartBoot) {
				p.unmatched.saw(f, b, i)
				continue
			}
			p.unmatched.matched = true
			if err := fn(b, i, false); err != nil {
				p.read(r)
				return p, err
			}
		}
	}
	p.read(r)
	if err := r.Err(); err != nil {
		return p, fmt.Errorf("%s: %w", c.Name, err)
	}
	return p, nil
}

// spans is a pass without row filter that hands fn each stretch [lo, hi)
// of event rows between loss records, whole, for the analyses that add a
// column's values a run at a time (histRuns) and the listings (ScanSpans).
// Events and losses are tallied as walkWith tallies them, a stretch at a
// time, and with timed (r decodes every event's time: selectColumns) the
// times are checked. With lost set, each loss record is handed to it too,
// in file order, after it is tallied. It stops at the first error fn or
// lost returns, and returns it.
func (c *Capture) spans(r *format.Reader, timed bool, fn func(b *format.Batch, lo, hi int) error, lost func(b *format.Batch, i int) error) (*Pass, error) {
	return c.spansWhere(r, timed, nil, fn, lost)
}

// maskedProbe is the probe of an event row that a row filter left out, in
// a pass by stretches with a filter (spansWhere): no probe has it.
const maskedProbe = math.MaxUint16

// spansWhere is spans with row filter f (nil or empty: none), for the
// analyses that pick their probes' rows from a stretch (PickRows,
// FieldRuns): each event row f leaves out is handed on with probe
// maskedProbe, in the batch of this pass alone, and the pass notes what
// f matched as walkWith notes it. Loss records keep their probe, and are
// handed to lost whatever their time.
func (c *Capture) spansWhere(r *format.Reader, timed bool, f *RowFilter, fn func(b *format.Batch, lo, hi int) error, lost func(b *format.Batch, i int) error) (*Pass, error) {
	if f != nil && f.Empty() {
		f = nil
	}
	if f != nil {
		// The note of a filter that matched nothing keeps some of the
		// comms it saw: their memory must stay.
		r.RecycleStrings = false
	}
	p := c.newPass()
	p.spans = true
	m := c.Meta()
	for c.next(r) {
		b := r.Batch()
		for i := 0; i < b.Len; {
			j := b.NextLoss(i)
			if j > i {
				p.Events += uint64(j - i)
				if timed {
					p.Times.CheckRun(b.Time[i:j], m)
				}
				if f != nil {
					p.mask(f, b, i, j)
				}
				if err := fn(b, i, j); err != nil {
					p.read(r)
					return p, err
				}
			}
			if j == b.Len {
				break
			}
			p.lossRow(b, j)
			if lost != nil {
				if err := lost(b, j); err != nil {
					p.read(r)
					return p, err
				}
			}
			i = j + 1
		}
	}
	p.read(r)
	if err := r.Err(); err != nil {
		return p, fmt.Errorf("%s: %w", c.Name, err)
	}
	return p, nil
}

// mergedSpans is the pass without row filter of an analysis whose result
// for a batch merges into its whole: part analyses each batch on the
// goroutine that decoded it (format.Reader.Work), several at once, and
// merge takes the results on this goroutine in file order, so that the
// whole is what one goroutine reading every batch would have made. The
// pass tallies events and losses as spans does, and with timed (r decodes
// every event's time) checks the times in file order. Against decoding
// ahead and analysing on one more goroutine, which hands every decoded
// byte to another core and does the analysis's work on one, it saved hist
// 11% of its CPU and wall time on 2 CPUs, and left the goroutine that
// merges a tenth of latency's work (bench/README.md, "Decoding on the
// analysis's own core").
func mergedSpans[T any](c *Capture, r *format.Reader, timed bool, part func(b *format.Batch) T, merge func(T)) (*Pass, error) {
	return mergedBatches(c, r, timed, part, func(_ *format.Batch, pt T) { merge(pt) })
}

// mergedBatches is mergedSpans whose merge also takes the batch of each
// part, to read it in file order there (what does not merge: a thread's
// open calls).
func mergedBatches[T any](c *Capture, r *format.Reader, timed bool, part func(b *format.Batch) T, merge func(b *format.Batch, pt T)) (*Pass, error) {
	// With the times, whether each stretch's are in order is found where
	// they were decoded too: here only a stretch's first and last are read,
	// but for one out of order.
	r.Work = func(b *format.Batch) any {
		w := worked[T]{part: part(b)}
		if timed {
			eachSpan(b, func(lo, hi int) { w.disorder = append(w.disorder, !sorted(b.Time[lo:hi])) })
		}
		return w
	}
	defer func() { r.Work = nil }()
	p := c.newPass()
	p.spans = true
	m := c.Meta()
	for c.next(r) {
		b := r.Batch()
		w := r.Worked().(worked[T])
		k := 0
		for i := 0; i < b.Len; {
			j := b.NextLoss(i)
			p.Events += uint64(j - i)
			if timed && j > i {
				p.Times.CheckRunOrdered(b.Time[i:j], !w.disorder[k], m)
				k++
			}
			if j == b.Len {
				break
			}
			p.lossRow(b, j)
			i = j + 1
		}
		merge(b, w.part)
	}
	p.read(r)
	if err := r.Err(); err != nil {
		return p, fmt.Errorf("%s: %w", c.Name, err)
	}
	return p, nil
}

// worked is what mergedSpans computes for a batch where it is decoded:
// the analysis's part, and with the times which stretches have theirs out
// of order.
type worked[T any] struct {
	part     T
	disorder []bool
}

// sorted reports whether ts never decreases.
func sorted(ts []int64) bool {
	bad := 0
	for i := 1; i < len(ts); i++ {
		bad |= b2i(ts[i] < ts[i-1])
	}
	return bad == 0
}

// eachSpan calls fn with each stretch [lo, hi) of event rows of b between
// its loss records, as spans hands them on.
func eachSpan(b *format.Batch, fn func(lo, hi int)) {
	for i := 0; i < b.Len; {
		j := b.NextLoss(i)
		if j > i {
			fn(i, j)
		}
		i = j + 1
	}
}

// Spans reports whether a pass with row filter f may hand an analysis its
// rows a stretch at a time (ScanSpans): f selects every row, and the
// capture is not made to hand them one by one (DecodeAll), as the check
// of every span path against the row-by-row one does.
func (c *Capture) Spans(f *RowFilter) bool { return (f == nil || f.Empty()) && !c.perRow }

// SpansWhere reports whether a pass with row filter f may hand an
// analysis that picks its probes' rows from a stretch a stretch at a time
// (ScanSpansWhere): not in a capture that has a probe maskedProbe (one of
// 65,536 probes, which a merge can make), nor one made to hand its rows
// one by one (DecodeAll).
func (c *Capture) SpansWhere(f *RowFilter) bool {
	return c.Spans(f) || !c.perRow && len(c.Meta().Probes) <= maskedProbe
}

// ScanSpans is Scan without a row filter for the listings, which take the
// event rows a stretch at a time rather than through a call each: it
// hands fn each stretch [lo, hi) of event rows between loss records, in
// file order, decoding only the columns cols lists as ScanColumns does
// (nil: every column). Loss records are tallied in the Pass, and times
// checked where they are decoded, a stretch at a time. It stops at the
// first error fn returns, and returns it.
//
// The strings of b (its comms, string fields) are valid only until fn
// returns, unlike Scan's: fn must copy what it keeps of them. Their
// memory is then reused from batch to batch, as the integers' is, which
// spared a listing of every column 6% of its CPU.
func (c *Capture) ScanSpans(cols []int, fn func(b *format.Batch, lo, hi int) error) (*Pass, error) {
	return c.ScanSpansWhere(cols, nil, fn)
}

// ScanSpansLost is ScanSpans that also hands lost each loss record in
// file order, as WalkSpans does, for an export that writes them among the
// events; the strings of b are valid only until fn or lost returns.
func (c *Capture) ScanSpansLost(cols []int, fn func(b *format.Batch, lo, hi int) error, lost func(b *format.Batch, i int) error) (*Pass, error) {
	r, timed := c.readerFor(cols, nil)
	r.RecycleStrings = true
	return c.spans(r, timed, fn, lost)
}

// ScanSpansWhere is ScanSpans with row filter f (when SpansWhere says it
// may), for the analyses that pick their probes' rows from a stretch, as
// PickRows does: a row f leaves out is handed on as a row of no probe of
// the capture. The pass notes what f matched as ScanColumns does.
func (c *Capture) ScanSpansWhere(cols []int, f *RowFilter, fn func(b *format.Batch, lo, hi int) error) (*Pass, error) {
	r, timed := c.readerFor(cols, f)
	r.RecycleStrings = true
	return c.spansWhere(r, timed, f, fn, nil)
}

// ScanMerged is ScanSpans for an analysis whose result for a batch merges
// into its whole (when Spans says a pass may go by stretches): part
// analyses a whole batch, loss records and all (EachSpan hands it the
// stretches of events), on the goroutine that decoded it, several batches
// at once, so it must keep no state between calls; merge takes the parts
// on this goroutine in file order. The whole is then what one goroutine
// reading every batch would have made. The batches' strings are valid only
// until part returns, as ScanSpans's are until fn returns.
func ScanMerged[T any](c *Capture, cols []int, part func(b *format.Batch) T, merge func(T)) (*Pass, error) {
	r, timed := c.readerFor(cols, nil)
	r.RecycleStrings = true
	return mergedSpans(c, r, timed, part, merge)
}

// WalkMerged is ScanMerged for an analysis of which some parts merge: merge
// takes each part with its batch, on this goroutine in file order, to add
// the part and to read in order what does not merge (a thread's open
// calls, the loss records: it walks them itself, with Batch.NextLoss; the
// Pass has counted them already). The batch's strings stay valid as
// Walk's do.
func WalkMerged[T any](c *Capture, cols []int, part func(b *format.Batch) T, merge func(b *format.Batch, pt T)) (*Pass, error) {
	r, timed := c.readerFor(cols, nil)
	return mergedBatches(c, r, timed, part, merge)
}

// EachSpan calls fn with each stretch [lo, hi) of event rows of b between
// its loss records, in order: the stretches a pass by stretches hands on.
func EachSpan(b *format.Batch, fn func(lo, hi int)) { eachSpan(b, fn) }

// WalkSpans is Walk without a row filter for the analyses that take the
// event rows a stretch at a time (when Spans says they may): it hands fn
// each stretch [lo, hi) of event rows between loss records and lost each
// loss record, in file order, decoding only the columns cols lists as
// WalkColumns does (a loss record's time and cpu always). Strings stay
// valid as Walk's do. It stops at the first error fn or lost returns, and
// returns it.
func (c *Capture) WalkSpans(cols []int, fn func(b *format.Batch, lo, hi int) error, lost func(b *format.Batch, i int) error) (*Pass, error) {
	r, timed := c.readerFor(cols, nil)
	return c.spans(r, timed, fn, lost)
}

// mask gives event rows [lo, hi) of b that f leaves out probe maskedProbe,
// noting what f matched as walkWith does row by row.
func (p *Pass) mask(f *RowFilter, b *format.Batch, lo, hi int) {
	for i := lo; i < hi; i++ {
		if f.Match(b, i, p.meta.StartBoot) {
			p.unmatched.matched = true
			continue
		}
		p.unmatched.saw(f, b, i)
		b.Probe[i] = maskedProbe
	}
}

// lastTime returns the latest time of the event rows [lo, hi) of b that a
// filter kept (all of them in a pass without one), and whether there is
// one.
func lastTime(b *format.Batch, lo, hi int) (last int64, ok bool) {
	for i, t := range b.Time[lo:hi] {
		if b.Probe[lo+i] != maskedProbe && (!ok || t > last) {
			last, ok = t, true
		}
	}
	return last, ok
}

// lossRow tallies loss record i of b.
func (p *Pass) lossRow(b *format.Batch, i int) {
	n, _ := b.Lost(i)
	p.Losses.Add(p.meta.Probes[b.Probe[i]].Name, b.CPU[i], b.Time[i], n)
}

// unmatched gathers, while a row filter has matched nothing, a few of the
// values the capture has instead, for the note that says so: a row filter
// that selects nothing otherwise prints an empty result and exits 0.
type unmatched struct {
	filtered, matched bool
	pids              map[uint32]bool
	comms             map[string]bool
	// The values last added: a thread's events come in runs, and a map
	// assignment per event row cost more than decoding its columns.
	lastPID  uint32
	lastComm string
}

const unmatchedValues = 8

func (u *unmatched) saw(f *RowFilter, b *format.Batch, i int) {
	u.filtered = true
	if u.matched {
		return
	}
	if u.pids == nil {
		u.pids, u.comms = map[uint32]bool{}, map[string]bool{}
	}
	if len(f.PIDs) > 0 && len(u.pids) < unmatchedValues {
		if p := b.PID[i]; p != u.lastPID || len(u.pids) == 0 {
			u.pids[p], u.lastPID = true, p
		}
	}
	if len(f.Comms) > 0 && len(u.comms) < unmatchedValues {
		if c := b.Comm(i); c != u.lastComm || len(u.comms) == 0 {
			u.comms[c], u.lastComm = true, c
		}
	}
}

func (u *unmatched) note(w io.Writer, name string) {
	if !u.filtered || u.matched {
		return
	}
	var has []string
	if len(u.pids) > 0 {
		var ps []string
		for _, p := range sortedKeys(u.pids) {
			ps = append(ps, fmt.Sprint(p))
		}
		has = append(has, "pids "+strings.Join(ps, ", "))
	}
	if len(u.comms) > 0 {
		has = append(has, "comms "+strings.Join(textsafe.Strings(sortedKeys(u.comms)), ", "))
	}
	msg := ""
	if len(has) > 0 {
		msg = " (it has " + strings.Join(has, "; ") + ")"
	}
	fmt.Fprintf(w, "NOTE: %s: no event matches the --pid, --tid, --comm, --from and --to filters%s.\n", name, msg)
}
