package replay

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bpftape/bpftape/format"
)

// statsNeeded reports whether the output of o prints the statistics, which
// cost more per value than the histogram.
func statsNeeded(o *HistOptions) bool {
	return o.Stats || (o.JSON && (o.Linear != nil || o.Style == "bpftrace"))
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
		for ; n > 0; n-- {
			a.stats.Add(v)
		}
	}
}

// histProjected fills the histograms of Hist from proj, a projection of
// r, reading only the columns they need: the probe indices, the field, the
// validity of the lost column (and, in batches with loss records, their
// cpu, time and count), and the columns of the row filter and of --by. Its
// Pass is Scan's: loss records tallied, Events counted, the same rows
// added.
//
// With more than one CPU, batches are decoded by one goroutine per CPU,
// each with its own Projection and histograms, merged at the end: every
// histogram and tally is a sum, a minimum or a maximum, so the merge holds
// exactly what one pass would. A capture that fails to read is read again
// in one pass, which stops where Scan stops, with Scan's error and tallies.
func (c *Capture) histProjected(r *format.Reader, proj *format.Projection, o *HistOptions, ref, byRef *Ref, groups *keyed) (*Pass, error) {
	pass := c.newPass()
	pass.projected, pass.Batches, pass.RecoverErr = true, proj.NumBatches(), proj.RecoverErr()
	workers := c.workers
	if workers == 0 {
		workers = min(runtime.GOMAXPROCS(0), maxHistWorkers)
	}
	workers = min(workers, proj.NumBatches())
	if workers > 1 && c.histParallel(r, proj, workers, o, ref, byRef, groups, pass) {
		return pass, nil
	}
	if workers > 1 { // read again, in one pass, for the error
		proj.Close()
		var err error
		if proj, err = r.Project(); err != nil {
			return pass, fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	defer proj.Close()
	var all *accum
	if o.By == "" {
		all = groups.int(0)
	}
	h := c.newHistPass(o, ref, byRef, groups, all)
	for proj.Next() {
		if err := h.batch(proj); err != nil {
			return pass, fmt.Errorf("%s: %w", c.Name, err)
		}
		// Tallied batch by batch, as Scan tallies them: a batch that
		// fails to read counts for nothing.
		pass.Events += h.events
		pass.Losses.merge(&h.losses)
		h.events, h.losses = 0, Losses{}
	}
	h.run.flush()
	if err := proj.Err(); err != nil {
		return pass, fmt.Errorf("%s: %w", c.Name, err)
	}
	return pass, nil
}

// maxHistWorkers bounds the goroutines of a projected hist (and the
// buffers they hold: one batch's columns each).
const maxHistWorkers = 8

// histParallel reads the batches of the capture with workers goroutines,
// the first with proj, the others with projections of their own of r, and
// merges what they counted into groups and pass. It returns false, having
// changed neither, when a batch fails to read.
func (c *Capture) histParallel(r *format.Reader, proj *format.Projection, workers int, o *HistOptions, ref, byRef *Ref, groups *keyed, pass *Pass) bool {
	n := proj.NumBatches()
	var next atomic.Int64
	var failed atomic.Bool
	counts := make([]*histPass, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		g := newKeyed(o)
		var all *accum
		if o.By == "" {
			all = g.int(0)
		}
		h := c.newHistPass(o, ref, byRef, g, all)
		counts[w] = h
		wp := proj
		if w > 0 {
			var err error
			if wp, err = r.Project(); err != nil {
				failed.Store(true)
				break
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer wp.Close()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					break
				}
				if !wp.Read(i) || h.batch(wp) != nil {
					failed.Store(true)
					break
				}
			}
			h.run.flush()
		}()
	}
	wg.Wait()
	if failed.Load() {
		return false
	}
	for _, h := range counts {
		for k, a := range h.groups.ints {
			groups.int(k).merge(a)
		}
		for k, a := range h.groups.strs {
			groups.str(k).merge(a)
		}
		pass.Events += h.events
		pass.Losses.merge(&h.losses)
	}
	return true
}

// merge adds what o counted to a (both of the same options).
func (a *accum) merge(o *accum) {
	a.log2.Merge(&o.log2)
	a.pow2.Merge(&o.pow2)
	if a.lin != nil && o.lin != nil {
		a.lin.Merge(o.lin)
	}
	a.stats.Merge(&o.stats)
}

// merge adds the tallies of o to l, as if l had passed o's records too.
func (l *Losses) merge(o *Losses) {
	if o.ByProbe == nil {
		return
	}
	if l.ByProbe == nil {
		l.ByProbe = map[string]uint64{}
		l.ByCPU = map[uint16]uint64{}
		l.First = o.First
	}
	l.Total = format.AddCount(l.Total, o.Total)
	for k, v := range o.ByProbe {
		l.ByProbe[k] = format.AddCount(l.ByProbe[k], v)
	}
	for k, v := range o.ByCPU {
		l.ByCPU[k] = format.AddCount(l.ByCPU[k], v)
	}
	l.First = min(l.First, o.First)
	l.Last = max(l.Last, o.Last)
}

// histPass is what one reader of batches counts.
type histPass struct {
	o          *HistOptions
	m          *format.Meta
	ref, byRef *Ref
	groups     *keyed
	all        *accum
	filtered   bool
	run        runAcc
	events     uint64
	losses     Losses
}

func (c *Capture) newHistPass(o *HistOptions, ref, byRef *Ref, groups *keyed, all *accum) *histPass {
	f := &o.Rows
	return &histPass{o: o, m: c.Meta(), ref: ref, byRef: byRef, groups: groups, all: all,
		filtered: len(f.PIDs) > 0 || len(f.TIDs) > 0 || f.From != 0 || f.To != 0,
		run:      runAcc{o: o, stats: statsNeeded(o), a: all, cast: o.Cast}}
}

// batch counts the current batch of p.
func (h *histPass) batch(p *format.Projection) error {
	o, f, ref := h.o, &h.o.Rows, h.ref
	rows := p.Len()
	if rows == 0 {
		return nil
	}
	probes, err := p.Probe()
	if err != nil {
		return err
	}
	vals, err := p.Ints(ref.col)
	if err != nil {
		return err
	}
	lossBits, err := p.Validity(format.ColLost)
	if err != nil {
		return err
	}
	var lb lossBatch
	next := func(i int) int { return i } // every row is a loss record
	if lossBits != nil {
		next = func(i int) int { return nextSet(lossBits, i, rows) }
	}
	var pid, tid, tim, by format.IntColumn
	load := func(ci int, col *format.IntColumn) error {
		var err error
		*col, err = p.Ints(ci)
		return err
	}
	if h.filtered {
		if len(f.PIDs) > 0 {
			err = load(format.ColPID, &pid)
		}
		if err == nil && len(f.TIDs) > 0 {
			err = load(format.ColTID, &tid)
		}
		if err == nil && (f.From != 0 || f.To != 0) {
			err = load(format.ColTime, &tim)
		}
	}
	if err == nil {
		switch {
		case o.By == "pid":
			err = load(format.ColPID, &by)
		case o.By == "tid":
			err = load(format.ColTID, &by)
		case h.byRef != nil:
			err = load(h.byRef.col, &by)
		}
	}
	if err != nil {
		return err
	}
	for i := 0; i < rows; {
		j := next(i)
		h.events += uint64(j - i)
		if !h.filtered && h.all != nil {
			h.run.rangeOf(&vals, probes, ref.probe, i, j)
		} else {
			for k := i; k < j; k++ {
				if probes[k] != ref.probe {
					continue
				}
				if h.filtered && !f.matchCols(k, &pid, &tid, &tim, h.m.StartBoot) {
					continue
				}
				v := o.Cast.Apply(vals.Int(k))
				a := h.all
				if a == nil {
					a = h.groups.int(by.Int(k))
				}
				a.add(v, o)
			}
		}
		if j == rows {
			break
		}
		if err := lb.add(p, &h.losses, h.m, probes, j); err != nil {
			return err
		}
		i = j + 1
	}
	return nil
}

// matchCols is Match on projected columns; only those the row filter uses are loaded.
func (f *RowFilter) matchCols(i int, pid, tid, tim *format.IntColumn, startBoot int64) bool {
	if len(f.PIDs) > 0 && !contains(f.PIDs, pid.U32[i]) {
		return false
	}
	if len(f.TIDs) > 0 && !contains(f.TIDs, tid.U32[i]) {
		return false
	}
	if f.From != 0 || f.To != 0 {
		off := time.Duration(tim.I64[i] - startBoot)
		if off < f.From || (f.To != 0 && off >= f.To) {
			return false
		}
	}
	return true
}

// lossBatch loads the columns of loss records, once per batch that has any.
type lossBatch struct {
	loaded         bool
	cpu, tim, lost format.IntColumn
}

func (lb *lossBatch) add(p *format.Projection, l *Losses, m *format.Meta, probes []uint16, i int) error {
	if !lb.loaded {
		var err error
		if lb.cpu, err = p.Ints(format.ColCPU); err != nil {
			return err
		}
		if lb.tim, err = p.Ints(format.ColTime); err != nil {
			return err
		}
		if lb.lost, err = p.Ints(format.ColLost); err != nil {
			return err
		}
		lb.loaded = true
	}
	l.Add(m.Probes[probes[i]].Name, lb.cpu.U16[i], lb.tim.I64[i], lb.lost.U64[i])
	return nil
}

// nextSet returns the first row at or after i whose bit is set in bm, or n.
func nextSet(bm []byte, i, n int) int {
	for i < n {
		if i&63 == 0 && i+64 <= n {
			if w := binary.LittleEndian.Uint64(bm[i>>3:]); w != 0 {
				return i + bits.TrailingZeros64(w)
			}
			i += 64
			continue
		}
		if bm[i>>3]&(1<<(i&7)) != 0 {
			return i
		}
		i++
	}
	return n
}

// runAcc adds the values of one histogram run by run: consecutive equal
// values (a burst of packets of one size) cost one AddN, which records
// exactly what as many Adds would.
type runAcc struct {
	a     *accum
	o     *HistOptions
	stats bool
	cast  Cast
	prev  int64
	n     uint64
	buf   [1024]int64 // the values of the probe's rows of one stretch
}

func (r *runAcc) flush() {
	if r.n > 0 {
		r.a.addN(r.prev, r.n, r.o, r.stats)
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
		// Gather the rows of the probe without a branch: which probe a
		// row is from is as good as random.
		k := 0
		for i, pr := range probes[:m] {
			buf[k&(len(buf)-1)] = int64(vals[i])
			k += b2i(pr == want)
		}
		probes, vals = probes[m:], vals[m:]
		for _, v := range buf[:k] {
			v = cast.Apply(v)
			if v == prev {
				n++
				continue
			}
			if n > 0 {
				r.a.addN(prev, n, r.o, r.stats)
			}
			prev, n = v, 1
		}
	}
	r.prev, r.n = prev, n
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
