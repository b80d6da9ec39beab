package replay

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/textsafe"
	"github.com/bpftape/bpftape/internal/usage"
)

// CountOptions configure Count.
type CountOptions struct {
	Rows RowFilter
	// Probes are glob patterns (path.Match) of the probes counted, as
	// funccount takes 'vfs_*'; empty counts every probe.
	Probes []string
	// By adds a key to the probe: "comm", "pid" or "tid"; "" counts per
	// probe alone.
	By string
	// Zeros lists the counted probes that recorded nothing, with 0:
	// funccount shows only the functions that were called.
	Zeros bool
	JSON  bool
}

// CountRow is one line of Count's table.
type CountRow struct {
	Probe string `json:"probe"`
	Key   string `json:"key,omitempty"`
	Count uint64 `json:"count"`
}

// Count counts the events of each probe (and By key), as BCC's funccount
// and bpftrace's @[probe] = count() do, and prints them in ascending order
// of count, as funccount does, then the capture's losses of the counted
// probes. With Zeros, a probe that recorded nothing is listed with 0, so
// that a pattern's functions that were never called show.
func Count(c *Capture, o CountOptions, out io.Writer) ([]CountRow, *Pass, error) {
	m := c.Meta()
	want := make([]bool, len(m.Probes))
	matched := false
	for i, p := range m.Probes {
		want[i] = len(o.Probes) == 0
		for _, pat := range o.Probes {
			if ok, err := path.Match(pat, p.Name); err != nil {
				return nil, nil, usage.Errorf("probe pattern %q: %v", pat, err)
			} else if ok {
				want[i] = true
			}
		}
		matched = matched || want[i]
	}
	if !matched {
		return nil, nil, usage.Errorf("no probe of the capture matches %v (it has %s)", o.Probes, probeNames(m))
	}
	switch o.By {
	case "", "comm", "pid", "tid":
	default:
		return nil, nil, usage.Errorf("--by %q: want comm, pid or tid", o.By)
	}
	type key = countKey
	counts := map[key]uint64{}
	if o.By == "" && o.Rows.Empty() {
		if cn, p := footerCounts(c); cn != nil {
			for i := range cn.Probes {
				if want[i] && cn.Probes[i].Events > 0 {
					counts[key{probe: uint16(i)}] = cn.Probes[i].Events
				}
			}
			return countTable(m, &o, want, counts, p, out)
		}
	}
	kc := &keyCounter{by: o.By, want: want, seen: map[readKey]*keyCount{},
		last: make([]*keyCount, len(m.Probes))}
	var p *Pass
	var err error
	if o.Rows.Empty() && o.By != "" && c.Spans(&o.Rows) {
		// No filter: each stretch of events between loss records in one
		// loop, without a call per row through the pass. (Counts by probe
		// alone read every column and check the times, as the footer's
		// counts do, when the file has no footer.)
		r := c.reader()
		c.selectColumns(r, byColumns(o.By, nil), nil)
		// keyCounter keeps no string of a batch: the comm columns'
		// memory is reused from batch to batch, as ScanSpans reuses it.
		r.RecycleStrings = true
		// Each batch is counted where it is decoded, by a counter of
		// its own, and added up here.
		parts := sync.Pool{New: func() any { return kc.fresh() }}
		p, err = mergedSpans(c, r, false, func(b *format.Batch) *keyCounter {
			part := parts.Get().(*keyCounter)
			eachSpan(b, func(lo, hi int) { part.span(b, lo, hi) })
			return part
		}, func(part *keyCounter) {
			kc.merge(part)
			parts.Put(part)
		})
	} else {
		cols := byColumns(o.By, nil)
		if cols == nil && !o.Rows.Empty() {
			// Counts by probe of the events a filter selects: the
			// probe and the filter's columns, not every column.
			cols = []int{}
		}
		p, err = c.ScanColumns(cols, &o.Rows, kc.add)
	}
	if err != nil {
		return nil, p, err
	}
	for k, e := range kc.seen {
		s := k.s
		if o.By == "pid" || o.By == "tid" {
			s = strconv.FormatUint(uint64(k.n), 10)
		}
		counts[key{probe: k.probe, k: s}] += e.n
	}
	return countTable(m, &o, want, counts, p, out)
}

// keyCounter counts events by probe and the key of count --by as read (a
// pid or tid as a number, a comm as the string the batch holds), each
// probe's last key kept at hand: a thread's events come in runs, and a map
// lookup per event was most of the cost after decoding.
type keyCounter struct {
	by   string
	want []bool
	seen map[readKey]*keyCount
	last []*keyCount // by probe
	// By comm, a row is counted by its string view, not its string:
	// hashing the string per event was half of count --by comm's time.
	views viewTable
	runs  []commRun                  // by probe
	tally *[4][maxBlockProbes]uint32 // blockProbes's, by probe
}

type readKey struct {
	probe uint16
	s     string
	n     uint32
}

// fresh returns an empty counter of kc's key and probes.
func (kc *keyCounter) fresh() *keyCounter {
	return &keyCounter{by: kc.by, want: kc.want, seen: map[readKey]*keyCount{},
		last: make([]*keyCount, len(kc.last))}
}

// span counts rows [lo, hi) of b, rows of no filter.
func (kc *keyCounter) span(b *format.Batch, lo, hi int) {
	if kc.by == "comm" {
		kc.commSpan(b, lo, hi)
		return
	}
	for i := lo; i < hi; i++ {
		kc.add(b, i)
	}
}

// merge adds the counts of part to kc's, and empties part.
func (kc *keyCounter) merge(part *keyCounter) {
	for k, e := range part.seen {
		kc.entry(k).n += e.n
	}
	clear(part.seen)
	clear(part.last)
	if part.runs != nil {
		clear(part.runs)
		part.views.reset()
	}
}

// add counts row i of b, a row a filter selects.
func (kc *keyCounter) add(b *format.Batch, i int) {
	if kc.by == "comm" {
		kc.commSpan(b, i, i+1)
		return
	}
	k := readKey{probe: b.Probe[i]}
	if !kc.want[k.probe] {
		return
	}
	switch kc.by {
	case "pid":
		k.n = b.PID[i]
	case "tid":
		k.n = b.TID[i]
	}
	kc.entry(k).n++
}

// commSpan counts rows [lo, hi) of b by comm. A run of at least minCommRun
// rows of one comm (one string view), as a thread's events make, has its
// probes counted at once (blockProbes); the rows between such runs go a
// row at a time (commRows).
func (kc *keyCounter) commSpan(b *format.Batch, lo, hi int) {
	if kc.runs == nil {
		kc.runs = make([]commRun, len(kc.want))
		kc.views.reset()
	}
	if len(kc.want) > maxBlockProbes {
		kc.commRows(b, lo, hi)
		return
	}
	rows := lo // the first row not counted
	for i := lo; i < hi; {
		e := b.CommRun(i, hi)
		if e-i >= minCommRun {
			if rows < i {
				kc.commRows(b, rows, i)
			}
			kc.blockProbes(b, i, e)
			rows = e
		}
		i = e
	}
	if rows < hi {
		kc.commRows(b, rows, hi)
	}
}

// minCommRun is the fewest rows of one comm that commSpan counts as a run;
// maxBlockProbes the most probes a capture may have for it to count runs:
// a run's counts are added up over every probe. Where runs were found in
// aligned blocks of 64 rows, the bursts of the synthesized capture (1 to
// 64 events of one thread) went a row at a time: count --by comm on it,
// 11 runs alternating, 0.603-0.619 s wall and 1.18 s CPU (median) before,
// 0.574-0.584 s and 1.12 s after; runs of 8 or 32 rows at least, no
// better.
const (
	minCommRun     = 16
	maxBlockProbes = 64
)

// blockProbes counts rows [lo, hi) of b, all of one comm, by probe: in
// four tallies a row at a time, so that a row's count does not wait on the
// row before's (one counter a probe took 1.3 ns a row where two probes
// alternate), then added to the comm's counter of each probe.
func (kc *keyCounter) blockProbes(b *format.Batch, lo, hi int) {
	if kc.tally == nil {
		kc.tally = new([4][maxBlockProbes]uint32)
	}
	// Fixed arrays indexed by a mask (a probe index is below
	// maxBlockProbes here), without a bounds check a row: count --by
	// comm on the 100M synthesized capture 1.5-2% less CPU.
	t0, t1, t2, t3 := &kc.tally[0], &kc.tally[1], &kc.tally[2], &kc.tally[3]
	const m = maxBlockProbes - 1
	ps := b.Probe[lo:hi]
	i := 0
	for ; i+4 <= len(ps); i += 4 {
		q := (*[4]uint16)(ps[i:])
		t0[q[0]&m]++
		t1[q[1]&m]++
		t2[q[2]&m]++
		t3[q[3]&m]++
	}
	for _, p := range ps[i:] {
		t0[p&m]++
	}
	views := b.CommViews()
	vlo, vhi := binary.LittleEndian.Uint64(views[16*lo:]), binary.LittleEndian.Uint64(views[16*lo+8:])
	for p := range kc.want {
		n := uint64(t0[p]) + uint64(t1[p]) + uint64(t2[p]) + uint64(t3[p])
		if n == 0 {
			continue
		}
		t0[p], t1[p], t2[p], t3[p] = 0, 0, 0, 0
		if !kc.want[p] {
			continue
		}
		r := &kc.runs[p]
		if r.n == nil || vlo != r.lo || vhi != r.hi || (uint32(vlo) > 12 && r.batch != b.Index) {
			*r = commRun{lo: vlo, hi: vhi, batch: b.Index, n: kc.view(vlo, vhi, uint16(p), b, lo)}
		}
		*r.n += n
	}
}

// commRows counts rows [lo, hi) of b by comm one at a time. A row with
// the string view of its probe's last row costs a comparison, which a
// thread's run of events makes most rows; another finds its view in a
// table of the views seen, and a view new to the table is read as a
// string and counted in the map.
func (kc *keyCounter) commRows(b *format.Batch, lo, hi int) {
	views := b.CommViews()[16*lo : 16*hi]
	for i, p := range b.Probe[lo:hi] {
		r := &kc.runs[p]
		v := views[16*i : 16*i+16]
		vlo, vhi := binary.LittleEndian.Uint64(v), binary.LittleEndian.Uint64(v[8:])
		if r.n != nil && vlo == r.lo && vhi == r.hi && (uint32(vlo) <= 12 || r.batch == b.Index) {
			*r.n++
			continue
		}
		if !kc.want[p] {
			continue
		}
		n := kc.view(vlo, vhi, p, b, lo+i)
		*n++
		*r = commRun{lo: vlo, hi: vhi, batch: b.Index, n: n}
	}
}

// commRun is the string view of a probe's last row commSpan counted, and
// its counter.
type commRun struct {
	lo, hi uint64
	batch  int
	n      *uint64
}

// view returns the counter of probe p and string view lo, hi, the comm
// of row i of b.
func (kc *keyCounter) view(lo, hi uint64, p uint16, b *format.Batch, i int) *uint64 {
	t := &kc.views
	for h := viewHash(lo, hi, p); ; h++ {
		s := &t.slots[h&viewMask]
		if s.n == nil {
			if t.used >= (viewMask+1)/2 {
				t.reset()
				s = &t.slots[viewHash(lo, hi, p)&viewMask]
			}
			t.used++
			*s = viewSlot{lo: lo, hi: hi, probe: p}
			kc.relocate(s, b, i)
			return s.n
		}
		if s.lo == lo && s.hi == hi && s.probe == p {
			if uint32(lo) > 12 && s.batch != b.Index {
				kc.relocate(s, b, i)
			}
			return s.n
		}
	}
}

// viewMask sizes the table of comm views: 1024 slots, cleared when half
// are taken (the views of long comms change from batch to batch, as their
// bytes do).
const viewMask = 1023

// viewTable is count --by comm's table of the string views seen, by
// probe, open-addressed.
type viewTable struct {
	slots []viewSlot
	used  int
}

func (t *viewTable) reset() {
	if t.slots == nil {
		t.slots = make([]viewSlot, viewMask+1)
	}
	clear(t.slots)
	t.used = 0
}

// viewSlot is a (probe, comm) of count --by comm as a string view read
// it (lo, hi: equal views of a comm of up to 12 bytes hold equal comms; a
// longer one's view names where it lies, so it holds s only in batch),
// and the comm's counter in the map.
type viewSlot struct {
	lo, hi uint64
	probe  uint16
	batch  int
	s      string
	n      *uint64
}

func viewHash(lo, hi uint64, probe uint16) uint64 {
	return ((lo*0x9e3779b97f4a7c15 ^ hi ^ uint64(probe)) * 0xc2b2ae3d27d4eb4f) >> 40
}

// relocate points slot s, a long comm's view first met in this batch, at
// the counter of the comm row i of b holds.
func (kc *keyCounter) relocate(s *viewSlot, b *format.Batch, i int) {
	s.batch = b.Index
	if s.n != nil && s.s == b.Comm(i) {
		return
	}
	e := kc.entry(readKey{probe: s.probe, s: b.Comm(i)})
	s.n, s.s = &e.n, e.key.s // the map's copy: the batch's memory is reused
}

// entry returns the map's count of key k, which it adds if new.
func (kc *keyCounter) entry(k readKey) *keyCount {
	e := kc.last[k.probe]
	if e == nil || k != e.key {
		if e = kc.seen[k]; e == nil {
			if kc.by == "comm" {
				k.s = strings.Clone(k.s) // a map key outlives the batch
			}
			e = &keyCount{key: k}
			kc.seen[k] = e
		}
		kc.last[k.probe] = e
	}
	return e
}

// keyCount is a key count --by counts, as the map holds it (its comm a
// copy of the batch's), and its count.
type keyCount struct {
	key readKey
	n   uint64
}

// countKey is what Count counts by: a probe, and its By key.
type countKey struct {
	probe uint16
	k     string
}

// countTable prints Count's table of counts, of the probes it wants, as
// the Pass p found them, and its losses.
func countTable(m *format.Meta, o *CountOptions, want []bool, counts map[countKey]uint64, p *Pass, out io.Writer) ([]CountRow, *Pass, error) {
	type key = countKey
	if o.By == "" && o.Zeros {
		for i := range m.Probes {
			if want[i] {
				counts[key{probe: uint16(i)}] += 0
			}
		}
	}
	rows := make([]CountRow, 0, len(counts))
	for k, n := range counts {
		rows = append(rows, CountRow{Probe: m.Probes[k.probe].Name, Key: k.k, Count: n})
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Count != b.Count {
			return a.Count < b.Count
		}
		if a.Probe != b.Probe {
			return a.Probe < b.Probe
		}
		return a.Key < b.Key
	})
	if o.JSON {
		return rows, p, json.NewEncoder(out).Encode(struct {
			Rows   []CountRow `json:"counts"`
			Losses Losses     `json:"losses"`
		}{rows, p.Losses})
	}
	wp, wk := len("FUNC"), len(o.By)
	for _, r := range rows {
		wp = max(wp, len(textsafe.Escape(r.Probe)))
		wk = max(wk, len(textsafe.Escape(r.Key)))
	}
	if o.By == "" {
		fmt.Fprintf(out, "%-*s %12s\n", wp, "FUNC", "COUNT")
	} else {
		fmt.Fprintf(out, "%-*s %-*s %12s\n", wp, "FUNC", wk, strings.ToUpper(o.By), "COUNT")
	}
	for _, r := range rows {
		if o.By == "" {
			fmt.Fprintf(out, "%-*s %12d\n", wp, textsafe.Escape(r.Probe), r.Count)
		} else {
			fmt.Fprintf(out, "%-*s %-*s %12d\n", wp, textsafe.Escape(r.Probe), wk, textsafe.Escape(r.Key), r.Count)
		}
	}
	var lost uint64
	for name, n := range p.Losses.ByProbe {
		for i, pr := range m.Probes {
			if pr.Name == name && want[i] {
				lost += n
			}
		}
	}
	if lost > 0 {
		fmt.Fprintf(out, "(%d events of these probes were lost: the counts are low by that much in all)\n", lost)
	}
	return rows, p, nil
}

// probeNames lists the capture's probe names, for errors.
func probeNames(m *format.Meta) string {
	s := ""
	for i, p := range m.Probes {
		if i == 8 {
			return s + ", ..."
		}
		if i > 0 {
			s += ", "
		}
		s += strconv.Quote(p.Name)
	}
	return s
}
