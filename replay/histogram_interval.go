package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/bpftape/bpftape/format"
)

// histSlices are the histograms of an analysis cut by interval (key 0 without
// --interval) and by --by key.
type histSlices struct {
	o    *HistOptions
	grid *intervalGrid // nil without --interval
	by   map[int64]*keyed
	k    int64
	cur  *keyed
}

func newSlices(o *HistOptions, grid *intervalGrid) *histSlices {
	return &histSlices{o: o, grid: grid, by: map[int64]*keyed{}}
}

// at returns the histograms of the interval of boot time t.
func (s *histSlices) at(t int64) *keyed {
	var k int64
	if s.grid != nil {
		k = s.grid.index(t)
	}
	if s.cur == nil || k != s.k {
		s.k, s.cur = k, s.by[k]
		if s.cur == nil {
			s.cur = newKeyed(s.o)
			s.by[k] = s.cur
		}
	}
	s.cur.n++
	return s.cur
}

// total is how many values all slices counted.
func (s *histSlices) total() uint64 {
	var n uint64
	for _, g := range s.by {
		n += g.n
	}
	return n
}

func (s *histSlices) entries(k int64) []keyedEntry {
	if g := s.by[k]; g != nil {
		return g.entries()
	}
	return nil
}

// writeIntervals prints every interval of the grid, empty ones too: in
// BCC's style a blank line and the time (biolatency -T), in bpftrace's the
// time line of time("%H:%M:%S\n"), then its histograms as o prints them;
// as JSON, an array of IntervalJSON.
func (s *histSlices) writeIntervals(out io.Writer, isKeyed bool) error {
	o, g := s.o, s.grid
	first, last, err := g.span()
	if err != nil {
		return err
	}
	if o.JSON {
		docs := make([]IntervalJSON, 0, last-first+1)
		var buf bytes.Buffer
		for k := first; k <= last; k++ {
			buf.Reset()
			_, end := g.bounds(k)
			if err := printHistBody(&buf, o, s.entries(k), isKeyed, g.m.WallTime(end)); err != nil {
				return err
			}
			var n uint64
			if g := s.by[k]; g != nil {
				n = g.n
			}
			docs = append(docs, g.json(k, n, jsonLines(buf.Bytes())))
		}
		return json.NewEncoder(out).Encode(docs)
	}
	for k := first; k <= last; k++ {
		if o.Style == "bpftrace" {
			fmt.Fprintf(out, "%s\n", g.stamp(k))
		} else {
			fmt.Fprintf(out, "\n%-8s\n", g.stamp(k))
		}
		_, end := g.bounds(k)
		if err := printHistBody(out, o, s.entries(k), isKeyed, g.m.WallTime(end)); err != nil {
			return err
		}
	}
	return nil
}

// histIntervals is Hist with o.Interval: one histogram (or one per key)
// per interval of the capture, in one pass that reads every column.
func (c *Capture) histIntervals(o *HistOptions, ref, byRef *Ref, out io.Writer) (*Pass, error) {
	grid, err := newIntervalGrid(c.Meta(), &o.Rows, o.Interval)
	if err != nil {
		return nil, err
	}
	s := newSlices(o, grid)
	cols := append([]int{format.ColTime, ref.col}, byColumns(o.By, byRef)...)
	var p *Pass
	if byRef == nil && c.SpansWhere(&o.Rows) {
		r := c.reader()
		timed := c.selectColumns(r, cols, &o.Rows)
		p, err = c.histSpans(r, timed, o, ref, s)
	} else {
		r, _ := c.readerFor(cols, &o.Rows)
		stats := statsNeeded(o)
		p, err = c.walkWith(r, true, &o.Rows, false, func(b *format.Batch, i int, _ bool) error {
			grid.see(b.Time[i])
			v, ok := ref.Int(b, i)
			if !ok {
				return nil
			}
			s.at(b.Time[i]).pick(o.By, byRef, b, i).addN(o.Cast.Apply(v), 1, o, stats)
			return nil
		})
	}
	if err != nil {
		return p, err
	}
	p.unmatched = unmatched{}
	noteEmpty(o, s.total())
	return p, s.writeIntervals(out, o.By != "")
}

// histSpans counts o's histograms of ref by interval (s's grid, if any)
// and by comm, pid or tid (o.By, if any) a stretch of rows at a time
// (spansWhere, o's row filter masking the rows it leaves out; timed: r
// decodes the times, which are checked): the probe's rows picked and their values gathered
// without a branch, each row's histograms found through the row before's
// (rowKeys), rather than a call, a map lookup and the statistics (when
// not printed) a row.
func (c *Capture) histSpans(r *format.Reader, timed bool, o *HistOptions, ref *Ref, s *histSlices) (*Pass, error) {
	stats := statsNeeded(o)
	if o.By == "comm" {
		r.RecycleStrings = true // keyed copies the comms it keeps
	}
	var rows [PickMax]int32
	var vals [PickMax]int64
	keys := rowKeys{by: o.By}
	return c.spansWhere(r, timed, &o.Rows, func(b *format.Batch, lo, hi int) error {
		if s.grid != nil {
			if t, ok := lastTime(b, lo, hi); ok {
				s.grid.see(t)
			}
		}
		ints := b.Col(ref.col).Ints()
		probes := b.Probe[lo:hi]
		for first := 0; first < len(probes); first += PickMax {
			k := PickRows(&rows, probes[first:min(first+PickMax, len(probes))], first, ref.probe, ref.probe)
			ints.Gather(vals[:k], lo, rows[:k])
			for j, i := range rows[:k] {
				keys.find(s, b, lo+int(i)).addN(o.Cast.Apply(vals[j]), 1, o, stats)
			}
		}
		return nil
	}, nil)
}

// rowKeys finds the histograms of a row in histSlices: its interval's (by
// its time, with a grid), and its key's, by comm, pid or tid (by), through
// the row before's: a thread's events come in runs, and a comm is told by
// its string view, as count --by comm tells it.
type rowKeys struct {
	by        string
	last      *accum
	lastGroup *keyed // the interval's histograms last is in
	lo, hi    uint64 // its comm's string view, or its pid or tid
	batch     int    // the batch of a long comm's view
}

// find returns the histograms of row of b, and counts the row in its
// interval.
func (k *rowKeys) find(s *histSlices, b *format.Batch, row int) *accum {
	g := s.cur
	switch {
	case s.grid != nil:
		g = s.at(b.Time[row])
	case g == nil:
		g = s.at(0) // one slice: the time need not be read
	default:
		g.n++
	}
	var lo, hi uint64
	switch k.by {
	case "comm":
		lo, hi = b.CommView(row)
	case "pid":
		lo = uint64(b.PID[row])
	case "tid":
		lo = uint64(b.TID[row])
	}
	if k.last != nil && g == k.lastGroup && lo == k.lo && hi == k.hi && (k.by != "comm" || uint32(lo) <= 12 || b.Index == k.batch) {
		return k.last
	}
	var a *accum
	switch k.by {
	case "":
		a = g.int(0)
	case "comm":
		a = g.str(b.Comm(row))
	default:
		a = g.int(int64(lo))
	}
	k.last, k.lastGroup, k.lo, k.hi, k.batch = a, g, lo, hi, b.Index
	return a
}
