package heatmap

import (
	"bytes"
	"encoding/xml"
	"math"
	"math/rand"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/hist"
)

const base = int64(1_000_000_000)

type ev struct {
	probe uint16
	tid   uint32
	t     int64 // offset from base
	v     uint64
	lost  uint64
}

// write makes a capture with probes "size" (field len, int64), "entry" and
// "ret" (no fields) and returns its path.
func write(t *testing.T, evs []ev) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.arrow")
	m := &format.Meta{Host: "h", StartBoot: base, StartWall: time.Unix(1700000000, 0), Probes: []format.Probe{
		{Name: "size", Kind: "usdt", Spec: "size=U:/bin/x:p:size", Fields: []format.Field{{Name: "len", Type: format.Int64}}},
		{Name: "entry", Kind: "uprobe", Spec: "entry=u:/bin/x:f"},
		{Name: "ret", Kind: "uretprobe", Spec: "ret=ur:/bin/x:f"},
	}}
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.lost > 0 {
			if err := w.Lost(e.probe, 0, base+e.t, e.lost); err != nil {
				t.Fatal(err)
			}
			continue
		}
		fe := format.Event{Time: base + e.t, PID: 1, TID: e.tid, Probe: e.probe, Comm: []byte("x")}
		if e.probe == 0 {
			fe.Ints = []uint64{e.v}
		}
		if err := w.Append(&fe); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// build builds the map of s twice: as Build does, in one pass where the
// footer's counts give what the first would measure (a field on log2
// rows, no row filter), and in two passes, reading every batch
// (DecodeAll); the maps must be the same.
func build(t *testing.T, path string, f *replay.RowFilter, s Spec, o Options) *Map {
	t.Helper()
	read := func(all bool) (*Map, int) {
		c, err := replay.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if all {
			c.DecodeAll()
		}
		ms, _, err := Build(c, f, []Spec{s}, o)
		if err != nil {
			t.Fatal(err)
		}
		return ms[0], c.Passes()
	}
	m, passes := read(false)
	want := 2
	if (f == nil || f.Empty()) && !s.Latency() && s.Rows == 0 {
		want = 1
	}
	if passes != want {
		t.Errorf("%d passes over the capture, want %d", passes, want)
	}
	all, passes := read(true)
	if passes != 2 {
		t.Errorf("every batch read: %d passes over the capture, want 2", passes)
	}
	if !reflect.DeepEqual(m, all) {
		t.Errorf("map from the footer's counts:\n%+v\nfrom the batches:\n%+v", m, all)
	}
	return m
}

// TestPattern puts c+1 events of value 2^c in column c and checks that each
// lands in log2 row c (BCC slot c+1) and nowhere else, the last column and
// the top row included.
func TestPattern(t *testing.T) {
	const step = int64(time.Millisecond)
	var evs []ev
	for c := 0; c < 10; c++ {
		for k := 0; k <= c; k++ {
			evs = append(evs, ev{t: int64(c)*step + int64(k)*1000, v: 1 << c})
		}
	}
	// The last event sits at the very end of the last column.
	evs = append(evs, ev{t: 10*step - 1, v: 1 << 9})
	m := build(t, write(t, evs), nil, Spec{Probe: "size", Field: "len"}, Options{Step: time.Millisecond})
	if m.Cols != 10 || m.Start != base || m.Step != step {
		t.Fatalf("axis %+v, want 10 columns of 1ms from the capture start", m.Axis)
	}
	for c := 0; c < m.Cols; c++ {
		for r := 0; r < m.Rows.N; r++ {
			want := uint64(0)
			if r == c {
				want = uint64(c + 1)
				if c == 9 {
					want++
				}
			}
			if got := m.Count(c, r); got != want {
				t.Errorf("cell (%d, %d) = %d, want %d", c, r, got, want)
			}
		}
	}
	if m.Total() != uint64(len(evs)) || m.Outside != 0 {
		t.Errorf("total %d, outside %d; want %d, 0", m.Total(), m.Outside, len(evs))
	}
	lo, hi := m.rowSpan()
	if lo != 0 || hi != 9 {
		t.Errorf("rows drawn %d..%d, want 0..9", lo, hi)
	}
	// The SVG draws the top row and the last column.
	var b bytes.Buffer
	if err := m.WriteSVG(&b, SVGOptions{}); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if !strings.Contains(svg, "+9ms to +10ms\nlen: 512 to 1023") || !strings.Contains(svg, "11 events, 100.0% of the column") {
		t.Errorf("the last column's top cell has no tooltip:\n%s", svg)
	}
}

// TestSumEqualsEvents fills maps from random events and checks that the
// cells hold every event (log2) or every event in range (linear).
func TestSumEqualsEvents(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var evs []ev
	var n, inRange uint64
	tm := int64(0)
	for i := 0; i < 20000; i++ {
		tm += rng.Int63n(200_000)
		e := ev{probe: uint16(rng.Intn(3)), tid: uint32(1 + rng.Intn(3)), t: tm, v: uint64(rng.Int63n(1 << uint(rng.Intn(40)+1)))}
		if i%997 == 0 {
			e = ev{probe: 0, t: tm, lost: 5}
		} else if e.probe == 0 {
			n++
			if e.v >= 100 && e.v <= 100000 {
				inRange++
			}
		}
		evs = append(evs, e)
	}
	path := write(t, evs)
	m := build(t, path, nil, Spec{Probe: "size", Field: "len"}, Options{})
	if m.Total() != n {
		t.Errorf("log2: cells hold %d events, the capture %d", m.Total(), n)
	}
	if m.Cols > DefaultCols {
		t.Errorf("%d columns, at most %d", m.Cols, DefaultCols)
	}
	lo, hi := int64(100), int64(100000)
	m = build(t, path, nil, Spec{Probe: "size", Field: "len", Rows: 17, Min: &lo, Max: &hi}, Options{Step: 50 * time.Millisecond})
	if m.Total() != inRange || m.Total()+m.Below+m.Above != n {
		t.Errorf("linear: cells hold %d, below %d, above %d; want %d in range of %d", m.Total(), m.Below, m.Above, inRange, n)
	}
	// A window: only its events, on an axis that spans it.
	f := &replay.RowFilter{From: 100 * time.Millisecond, To: 900 * time.Millisecond}
	m = build(t, path, f, Spec{Probe: "size", Field: "len"}, Options{Step: 100 * time.Millisecond})
	var want uint64
	for _, e := range evs {
		if e.probe == 0 && e.lost == 0 && e.t >= int64(f.From) && e.t < int64(f.To) {
			want++
		}
	}
	if m.Cols != 8 || m.Start != base+int64(f.From) || m.Total() != want {
		t.Errorf("window: %d columns from %d holding %d; want 8 from %d holding %d", m.Cols, m.Start-base, m.Total(), f.From, want)
	}
}

// TestLatency pairs entries and returns per thread, nested ones included.
func TestLatency(t *testing.T) {
	us := int64(time.Microsecond)
	evs := []ev{
		{probe: 2, tid: 9, t: 1 * us},                                  // return without entry
		{probe: 1, tid: 1, t: 10 * us}, {probe: 1, tid: 1, t: 11 * us}, // nested
		{probe: 1, tid: 2, t: 12 * us},
		{probe: 2, tid: 1, t: 13 * us},   // 2us
		{probe: 2, tid: 2, t: 112 * us},  // 100us
		{probe: 2, tid: 1, t: 1010 * us}, // 1000us
		{probe: 1, tid: 3, t: 1500 * us}, // never returns
	}
	m := build(t, write(t, evs), nil, Spec{Entry: "entry", Return: "ret"}, Options{Step: time.Millisecond})
	if m.Total() != 3 || !m.Durations {
		t.Fatalf("%d latencies, want 3", m.Total())
	}
	for _, c := range []struct {
		col int
		ns  int64
	}{{0, 2 * us}, {0, 100 * us}, {1, 1000 * us}} {
		r, _ := m.Rows.Row(c.ns)
		if m.Count(c.col, r) != 1 {
			t.Errorf("latency %dns: not in column %d row %d", c.ns, c.col, r)
		}
	}
	if len(m.Notes) != 1 || !strings.Contains(m.Notes[0], "1 returns without entry, 1 entries without return") {
		t.Errorf("notes %q", m.Notes)
	}
}

func TestAxis(t *testing.T) {
	for _, c := range []struct {
		first, last, step int64
		maxCols           int
		wantStep          int64
		wantCols          int
	}{
		{base, base + 999, 0, 100, 10, 100},
		{base + 5, base + 5, 0, 100, 1, 1},
		{base + 150, base + 10_000_000_150, 0, 100, 200_000_000, 51},
		{base + 1, base + 59e9, int64(time.Second), 100, 1e9, 60},
	} {
		a, err := NewAxis(base, c.first, c.last, c.step, c.maxCols)
		if err != nil {
			t.Fatal(err)
		}
		if a.Step != c.wantStep || a.Cols != c.wantCols || a.Start > c.first || a.Start+int64(a.Cols)*a.Step <= c.last {
			t.Errorf("NewAxis(%d, %d, %d): %+v, want step %d, %d columns covering both ends", c.first-base, c.last-base, c.step, a, c.wantStep, c.wantCols)
		}
	}
	if _, err := NewAxis(base, base, base+int64(time.Hour), int64(time.Microsecond), 0); err == nil {
		t.Error("a billion columns were accepted")
	}
}

func TestLinearRows(t *testing.T) {
	r, err := LinearRows(-10, 9, 4)
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[int64]int{-10: 0, -6: 0, -5: 1, 0: 2, 9: 3} {
		if got, cmp := r.Row(v); got != want || cmp != 0 {
			t.Errorf("Row(%d) = %d, %d; want %d", v, got, cmp, want)
		}
	}
	if _, cmp := r.Row(10); cmp != 1 {
		t.Error("10 is not above")
	}
	r, _ = LinearRows(0, 2, 10)
	if r.N != 3 {
		t.Errorf("3 values in %d rows, want 3", r.N)
	}
	r, _ = LinearRows(-1<<63, 1<<63-1, 8)
	if got, _ := r.Row(1<<63 - 1); got != 7 {
		t.Errorf("full range: max in row %d", got)
	}
}

// TestSVG checks that the SVG is well-formed XML with one titled cell per
// non-empty cell and labels in human units.
func TestSVG(t *testing.T) {
	m := New(Axis{Start: base, Step: int64(time.Millisecond), Cols: 3}, Log2Rows())
	m.Base, m.Title, m.YLabel, m.Durations = base, "t <&> \"x\"", "latency", true
	m.Add(base, 1500)
	m.Add(base, 1500)
	m.Add(base, 3000)
	m.Add(base+2_500_000, 1<<20)
	var b bytes.Buffer
	if err := m.WriteSVG(&b, SVGOptions{Color: ColorLinear}); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	d := xml.NewDecoder(strings.NewReader(svg))
	cells := 0
	var inRect bool
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("SVG is not XML: %v\n%s", err, b.String())
			}
			break
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if e.Name.Local == "rect" {
				inRect = true
			}
			if e.Name.Local == "title" && inRect {
				cells++
			}
		case xml.EndElement:
			if e.Name.Local == "rect" {
				inRect = false
			}
		}
	}
	if cells != 3 {
		t.Errorf("%d titled cells, want 3", cells)
	}
	for _, want := range []string{"1.02µs to 2.05µs", "66.7% of the column", "100.0% of the column at or below", "+2ms to +3ms", "1.05ms", "t &lt;&amp;&gt;"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}

// TestSVGHostileNames draws rows named as a capture may name its probes:
// the SVG is well-formed XML, a tooltip keeps its two lines, and a name's
// own newline, bytes that are not UTF-8, noncharacters and format
// characters show as visible escapes.
func TestSVGHostileNames(t *testing.T) {
	labels := []string{"evil\nforged: 9 events", "bad\xff\ufffe", "\u202egnp.exe", `back\slash <&>`}
	m := New(Axis{Start: base, Step: int64(time.Millisecond), Cols: 2}, CategoryRows(labels))
	m.Base, m.Title, m.YLabel = base, "t\x1b[31m", "probe"
	for r := range labels {
		m.Add(base, int64(r))
	}
	var b bytes.Buffer
	if err := m.WriteSVG(&b, SVGOptions{}); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(&b)
	var titles, texts []string
	var in string
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("SVG is not XML: %v", err)
			}
			break
		}
		switch e := tok.(type) {
		case xml.StartElement:
			in = e.Name.Local
		case xml.CharData:
			switch in {
			case "title":
				titles = append(titles, string(e))
			case "text":
				texts = append(texts, string(e))
			}
		case xml.EndElement:
			in = ""
		}
	}
	want := []string{`evil\nforged: 9 events`, `bad\xff\ufffe`, `\u202egnp.exe`, `back\\slash <&>`}
	for _, w := range want {
		if !slices.Contains(texts, w) {
			t.Errorf("no row label %q in %q", w, texts)
		}
	}
	if !slices.Contains(texts, `t\x1b[31m`) {
		t.Errorf("no title %q in %q", `t\x1b[31m`, texts)
	}
	cells := 0
	for _, tt := range titles {
		lines := strings.Split(tt, "\n")
		if len(lines) == 1 {
			continue // the drawing's own title
		}
		cells++
		if len(lines) != 2 || !strings.HasSuffix(lines[1], "1 events, 25.0% of the column") {
			t.Errorf("tooltip %q: want 2 lines, the second a row's count", tt)
		}
	}
	if cells != len(labels) {
		t.Errorf("%d tooltips, want %d", cells, len(labels))
	}
}

func TestNiceCols(t *testing.T) {
	for _, c := range []struct{ n, want int }{{1, 1}, {2, 2}, {3, 5}, {6, 10}, {11, 20}, {101, 200}, {201, 500}} {
		if got := niceCols(c.n); got != c.want {
			t.Errorf("niceCols(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// TestColumnCache: AddN and addLog2 (a stretch at a time, the cache living
// on from one to the next), which keep the last sample's column at hand,
// count as a division of each sample's time does, on times in
// order and not, before, inside and after the axis (a sample outside must
// not change the column the next one inside finds), at the ends of int64.
func TestColumnCache(t *testing.T) {
	rng := rand.New(rand.NewSource(89))
	for round := 0; round < 200; round++ {
		a := Axis{Start: rng.Int63n(1e6) - 5e5, Step: 1 + rng.Int63n(1000), Cols: 1 + rng.Intn(50)}
		if round%10 == 0 {
			a.Start = math.MaxInt64 - a.Step*int64(a.Cols) + rng.Int63n(a.Step)
		}
		viaAdd, viaLog2 := New(a, Log2Rows()), New(a, Log2Rows())
		want := make([]uint64, a.Cols*Log2Rows().N)
		var outside uint64
		span := a.Step * int64(a.Cols)
		tm := a.Start
		var times, vals []int64
		for k := 0; k < 500; k++ {
			switch rng.Intn(8) {
			case 0:
				tm = a.Start - 1 - rng.Int63n(100) // before the axis
			case 1:
				tm = a.Start + span + rng.Int63n(100) // after it (or wrapped, at the end of int64)
			case 2:
				tm = a.Start + rng.Int63n(span) // anywhere on it
			default:
				tm += rng.Int63n(a.Step) // onwards
			}
			v := rng.Uint64() >> rng.Intn(64)
			viaAdd.AddN(tm, int64(v), 1)
			times, vals = append(times, tm), append(vals, int64(v))
			if tm < a.Start || (uint64(tm)-uint64(a.Start))/uint64(a.Step) >= uint64(a.Cols) {
				outside++
				continue
			}
			c := int((uint64(tm) - uint64(a.Start)) / uint64(a.Step))
			want[c*Log2Rows().N+hist.Log2Slot(v)-1]++
		}
		// addLog2 a stretch at a time, the stretches of random lengths,
		// their rows in order but for gaps.
		for lo := 0; lo < len(times); {
			hi := min(lo+1+rng.Intn(40), len(times))
			var rows []int32
			var vs []int64
			for i := lo; i < hi; i++ {
				rows, vs = append(rows, int32(i)), append(vs, vals[i])
			}
			viaLog2.addLog2(times, rows, vs)
			lo = hi
		}
		for _, m := range []*Map{viaAdd, viaLog2} {
			if !slices.Equal(m.counts, want) || m.Outside != outside {
				t.Fatalf("round %d, axis %+v: counts differ from the division's (outside %d, want %d)", round, a, m.Outside, outside)
			}
		}
	}
}

// TestFeedLatency checks that a latency map fed the calls a
// replay.Latencies pairs (FeedLatency, as the report feeds its maps) is
// the map Build draws pairing them itself: its cells and its notes
// (returns without entry, entries without return, entries past
// replay.MaxDepth), over several batches, fed row by row and by stretches.
func TestFeedLatency(t *testing.T) {
	us := int64(time.Microsecond)
	var evs []ev
	tm := int64(0)
	for i := range 3000 {
		tid := uint32(1 + i%3)
		tm += us
		evs = append(evs, ev{probe: 1, tid: tid, t: tm})
		if i%7 == 0 { // nested
			tm += us
			evs = append(evs, ev{probe: 1, tid: tid, t: tm}, ev{probe: 2, tid: tid, t: tm + us})
		}
		tm += int64(1+i%13) * us
		evs = append(evs, ev{probe: 2, tid: tid, t: tm})
		if i%500 == 0 {
			evs = append(evs, ev{probe: 2, tid: 9, t: tm}) // a return without entry
		}
		if i%1000 == 999 {
			// A thread that never returns, past the depth pairing keeps.
			for range replay.MaxDepth/2 + 3 {
				evs = append(evs, ev{probe: 1, tid: 4, t: tm})
			}
		}
	}
	path := write(t, evs)
	s := Spec{Entry: "entry", Return: "ret"}
	o := Options{Step: time.Millisecond}
	want := build(t, path, nil, s, o)
	if len(want.Notes) != 1 || !strings.Contains(want.Notes[0], "6 returns without entry") ||
		!strings.Contains(want.Notes[0], "entries beyond depth") {
		t.Fatalf("notes %q: the capture does not test them all", want.Notes)
	}
	for _, spans := range []bool{false, true} {
		c, err := replay.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		b, err := NewBuilder(c, []Spec{s}, o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ScanColumns(b.Columns(), nil, b.Measure); err != nil {
			t.Fatal(err)
		}
		if err := b.Plan(nil); err != nil {
			t.Fatal(err)
		}
		la, err := replay.NewLatencies(c, replay.LatencyOptions{Entry: s.Entry, Return: s.Return})
		if err != nil {
			t.Fatal(err)
		}
		la.Calls = b.FeedLatency(0, func() (unmatched, open, overflows uint64) {
			res := la.Result()
			return res.UnmatchedReturns, res.UnmatchedEntries, res.Overflows
		})
		cols := append(b.Columns(), la.Columns()...)
		if spans {
			_, err = c.ScanSpansWhere(cols, nil, func(bt *format.Batch, lo, hi int) error {
				la.AddSpan(bt, lo, hi)
				b.FillSpan(bt, lo, hi)
				return nil
			})
		} else {
			_, err = c.ScanColumns(cols, nil, func(bt *format.Batch, i int) {
				la.Add(bt, i)
				b.Fill(bt, i)
			})
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Maps()[0]; !reflect.DeepEqual(got, want) {
			t.Errorf("by stretches %v: the map fed the calls:\n%+v\nthe map that paired them:\n%+v", spans, got, want)
		}
	}
}

// TestAddCategories checks AddCategories against AddN on category rows
// and on log2 rows: times before, in and after the axis, categories of
// every row and past the last.
func TestAddCategories(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	axis, err := NewAxis(base, base+1000, base+99_999, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	times := make([]int64, 5000)
	cats := make([]uint16, len(times))
	for i := range times {
		times[i] = base + r.Int63n(120_000)
		cats[i] = uint16(r.Intn(6)) // rows 0-4, and one past them
	}
	for _, rows := range []Rows{CategoryRows([]string{"a", "b", "c", "d", "e"}), Log2Rows()} {
		want, got := New(axis, rows), New(axis, rows)
		for i, tm := range times {
			want.AddN(tm, int64(cats[i]), 1)
		}
		for lo := 0; lo < len(times); lo += 777 {
			hi := min(lo+777, len(times))
			got.AddCategories(times[lo:hi], cats[lo:hi])
		}
		if got.Outside == 0 || (rows.Labels != nil && got.Above == 0) {
			t.Fatalf("outside %d, above %d: the samples do not test them", got.Outside, got.Above)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("rows %+v: AddCategories:\n%+v\nAddN:\n%+v", rows, got, want)
		}
	}
}
