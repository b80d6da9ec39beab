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
	o      *HistOptions
	grid   *intervalGrid // nil without --interval
	by     map[int64]*keyed
	k      int64
	cur    *keyed
	counts map[int64]uint64
}

func newSlices(o *HistOptions, grid *intervalGrid) *histSlices {
	return &histSlices{o: o, grid: grid, by: map[int64]*keyed{}, counts: map[int64]uint64{}}
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
	s.counts[k]++
	return s.cur
}

// total is how many values all slices counted.
func (s *histSlices) total() uint64 {
	var n uint64
	for _, c := range s.counts {
		n += c
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
			docs = append(docs, g.json(k, s.counts[k], jsonLines(buf.Bytes())))
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
	r, _ := c.readerFor(append([]int{format.ColTime, ref.col}, byColumns(o.By, byRef)...), &o.Rows)
	p, err := c.walkWith(r, true, &o.Rows, false, func(b *format.Batch, i int, _ bool) error {
		grid.see(b.Time[i])
		v, ok := ref.Int(b, i)
		if !ok {
			return nil
		}
		s.at(b.Time[i]).pick(o.By, byRef, b, i).add(o.Cast.Apply(v), o)
		return nil
	})
	if err != nil {
		return p, err
	}
	p.unmatched = unmatched{}
	noteEmpty(o, s.total())
	return p, s.writeIntervals(out, o.By != "")
}
