package replay

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
)

// row is one event (or, with lost > 0, one loss record) of a test capture.
type row struct {
	probe uint16
	tid   uint32
	t     int64
	ints  []uint64
	strs  []string
	lost  uint64
	comm  string
}

func writeCapture(t *testing.T, probes []format.Probe, rows []row) *Capture {
	t.Helper()
	return writeCaptureStacks(t, probes, nil, rows)
}

// writeCaptureStacks is writeCapture with a stack table, when not nil.
func writeCaptureStacks(t *testing.T, probes []format.Probe, table *format.StackTable, rows []row) *Capture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.arrow")
	m := &format.Meta{Host: "h", StartBoot: 1000, StartWall: time.Unix(0, 0), Probes: probes}
	for _, p := range probes {
		if fi := p.Field(format.HostField); fi >= 0 && p.Fields[fi].Type == format.String {
			// A merged capture's host field: Merge lists its inputs.
			m.Inputs = []format.Meta{{Host: "a"}, {Host: "b"}}
		}
	}
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: 3})
	if err != nil {
		t.Fatal(err)
	}
	if table != nil {
		w.AddStacks(table)
	}
	for _, r := range rows {
		if r.lost > 0 {
			if err := w.Lost(r.probe, 1, r.t, r.lost); err != nil {
				t.Fatal(err)
			}
			continue
		}
		comm := r.comm
		if comm == "" {
			comm = "app"
		}
		e := format.Event{Time: r.t, PID: 7, TID: r.tid, Probe: r.probe, Comm: []byte(comm), Ints: make([]uint64, len(probes[r.probe].Fields)), Strs: make([][]byte, len(probes[r.probe].Fields))}
		copy(e.Ints, r.ints)
		for i, s := range r.strs {
			e.Strs[i] = []byte(s)
		}
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var reqProbes = []format.Probe{
	{Name: "item", Fields: []format.Field{{Name: "len", Type: format.Int64}}},
	{Name: "end", Fields: []format.Field{{Name: "retval", Type: format.Int32}}},
}

func TestRequests(t *testing.T) {
	for _, tc := range []struct {
		name     string
		global   bool
		rows     []row
		requests uint64
		noItems  uint64
		incompl  uint64
		incItems uint64
		totals   []uint64 // log2 slot counts of the totals, from slot 1
	}{
		{name: "per thread",
			rows: []row{
				{probe: 0, tid: 1, ints: []uint64{100}}, {probe: 0, tid: 2, ints: []uint64{5}},
				{probe: 0, tid: 1, ints: []uint64{100}}, {probe: 1, tid: 1, ints: []uint64{2}}, // 200 -> slot 8
				{probe: 1, tid: 2, ints: []uint64{1}}, // 5 -> slot 3
			},
			requests: 2, totals: []uint64{0, 0, 1, 0, 0, 0, 0, 1}},
		{name: "global mixes threads", global: true,
			rows: []row{
				{probe: 0, tid: 1, ints: []uint64{100}}, {probe: 0, tid: 2, ints: []uint64{5}},
				{probe: 0, tid: 1, ints: []uint64{100}}, {probe: 1, tid: 1, ints: []uint64{2}}, // 205 -> slot 8
				{probe: 1, tid: 2, ints: []uint64{1}}, // no items left: skipped
			},
			requests: 1, noItems: 1, totals: []uint64{0, 0, 0, 0, 0, 0, 0, 1}},
		{name: "end without items and incomplete items",
			rows: []row{
				{probe: 1, tid: 1, ints: []uint64{3}},
				{probe: 0, tid: 1, ints: []uint64{8}}, {probe: 1, tid: 1, ints: []uint64{1}},
				{probe: 0, tid: 1, ints: []uint64{1}}, {probe: 0, tid: 3, ints: []uint64{1}}, {probe: 0, tid: 3, ints: []uint64{1}},
			},
			requests: 1, noItems: 1, incompl: 2, incItems: 3, totals: []uint64{0, 0, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.rows {
				tc.rows[i].t = int64(1000 + i)
			}
			c := writeCapture(t, reqProbes, tc.rows)
			var out bytes.Buffer
			res, _, err := Requests(c, RequestsOptions{ItemProbe: "item", ItemField: "len", EndProbe: "end", EndField: "retval", Global: tc.global}, &out)
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests != tc.requests || res.EndsWithoutItems != tc.noItems || res.Incomplete != tc.incompl || res.IncompleteItems != tc.incItems {
				t.Errorf("got %d requests, %d ends without items, %d incomplete (%d items); want %d, %d, %d (%d)",
					res.Requests, res.EndsWithoutItems, res.Incomplete, res.IncompleteItems, tc.requests, tc.noItems, tc.incompl, tc.incItems)
			}
			slots := res.Total.Slots()
			for i, n := range tc.totals {
				if slots[i+1] != n {
					t.Errorf("totals slot %d = %d, want %d", i+1, slots[i+1], n)
				}
			}
		})
	}
}

func TestLatency(t *testing.T) {
	probes := []format.Probe{{Name: "f"}, {Name: "f_ret"}}
	rows := []row{
		{probe: 1, tid: 1, t: 1000},                              // return without entry
		{probe: 0, tid: 1, t: 2000}, {probe: 0, tid: 1, t: 2100}, // recursion
		{probe: 0, tid: 2, t: 2200},                              // other thread
		{probe: 1, tid: 1, t: 2110}, {probe: 1, tid: 1, t: 3000}, // 10ns inner, 1000ns outer
		{probe: 1, tid: 2, t: 2300}, // 100ns
		{probe: 0, tid: 3, t: 4000}, // never returns
		{probe: 0, tid: 1, lost: 5, t: 4100},
	}
	c := writeCapture(t, probes, rows)
	var out bytes.Buffer
	res, pass, err := Latency(c, LatencyOptions{Entry: "f", Return: "f_ret"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Calls != 3 || res.UnmatchedReturns != 1 || res.UnmatchedEntries != 1 {
		t.Errorf("calls %d, unmatched returns %d, entries %d; want 3, 1, 1", res.Calls, res.UnmatchedReturns, res.UnmatchedEntries)
	}
	s := res.Hist.Slots()
	if s[4] != 1 || s[7] != 1 || s[10] != 1 { // 10 -> 8..15, 100 -> 64..127, 1000 -> 512..1023
		t.Errorf("slots %v", s[:12])
	}
	if res.Stats.Min() != 10 || res.Stats.Max() != 1000 {
		t.Errorf("min %d max %d", res.Stats.Min(), res.Stats.Max())
	}
	if !strings.Contains(out.String(), "     nsecs               : count     distribution\n") {
		t.Errorf("no funclatency header:\n%s", out.String())
	}
	var notes bytes.Buffer
	pass.Notes(&notes)
	if !strings.Contains(notes.String(), "WARNING") || !strings.Contains(notes.String(), "5 events were lost") ||
		!strings.Contains(notes.String(), "its entry pairs with a later call's return") {
		t.Errorf("loss warnings missing: %q", notes.String())
	}
	// A count's pass says nothing of pairs.
	_, hpass, err := Count(c, CountOptions{By: "comm"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	notes.Reset()
	hpass.Notes(&notes)
	if !strings.Contains(notes.String(), "5 events were lost") || strings.Contains(notes.String(), "pairs") {
		t.Errorf("count's notes: %q", notes.String())
	}
}

// TestEventsSeedTrace reproduces the BCC trace output of seed 000's USDT example.
func TestEventsSeedTrace(t *testing.T) {
	probes := []format.Probe{
		{Name: "usdt1", Kind: "usdt", Fields: []format.Field{{Name: "arg0", Type: format.Int32}}},
		{Name: "usdt2", Kind: "usdt", Fields: []format.Field{{Name: "arg0", Type: format.Int32}, {Name: "arg1", Type: format.String}, {Name: "arg2", Type: format.Int32}}},
	}
	var rows []row
	for x := 100000; x <= 1000000; x += 100000 {
		rows = append(rows, row{probe: 0, tid: 15543, ints: []uint64{uint64(x)}, comm: "usdt_example"})
	}
	rows = append(rows, row{probe: 1, tid: 15543, ints: []uint64{1000000, 0, 5}, strs: []string{"", "Hello!", ""}, comm: "usdt_example"})
	for i := range rows {
		rows[i].t = int64(2000 + i)
	}
	c := writeCapture(t, probes, rows)
	f1, err := ParseEventFormat(`usdt1 "x=%d", arg0`)
	if err != nil {
		t.Fatal(err)
	}
	f2, err := ParseEventFormat(`usdt2 "x=%d, arg2=%s, arg3=%d", arg0, arg1, arg2`)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := Events(c, EventsOptions{Formats: []*EventFormat{f1, f2}, Time: "none"}, &out); err != nil {
		t.Fatal(err)
	}
	want := "PID     TID     COMM            FUNC             -\n"
	for x := 100000; x <= 1000000; x += 100000 {
		want += "7       15543   usdt_example    usdt1            x=" + strconv.Itoa(x) + "\n"
	}
	want += "7       15543   usdt_example    usdt2            x=1000000, arg2=Hello!, arg3=5\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestHistFiltersAndKeys(t *testing.T) {
	probes := []format.Probe{{Name: "p", Fields: []format.Field{{Name: "v", Type: format.Int64}}}}
	rows := []row{
		{tid: 1, t: 1000 + 1e9, ints: []uint64{1}, comm: "a"},
		{tid: 2, t: 1000 + 2e9, ints: []uint64{4}, comm: "b"},
		{tid: 2, t: 1000 + 3e9, ints: []uint64{5}, comm: "b"},
		{tid: 3, t: 1000 + 4e9, ints: []uint64{^uint64(0)}, comm: "a"}, // -1
	}
	c := writeCapture(t, probes, rows)
	var out bytes.Buffer
	_, err := Hist(c, HistOptions{Probe: "p", Field: "v", By: "comm", Rows: RowFilter{From: 1500 * time.Millisecond, To: 4 * time.Second}}, &out)
	if err != nil {
		t.Fatal(err)
	}
	want := "\ncomm = 'b'\n     v                   : count     distribution\n" +
		"         0 -> 1          : 0        |                                        |\n" +
		"         2 -> 3          : 0        |                                        |\n" +
		"         4 -> 7          : 2        |****************************************|\n"
	if out.String() != want {
		t.Errorf("got\n%q\nwant\n%q", out.String(), want)
	}
	// -1 cast to s8 stays -1; as u8 it is 255 (slot 8); BCC's log2 of -1 is slot 64.
	for _, tc := range []struct {
		cast string
		slot int
	}{{"", 64}, {"u8", 8}, {"s32", 64}} {
		c := writeCapture(t, probes, rows[3:])
		cast, _ := ParseCast(tc.cast)
		var out bytes.Buffer
		if _, err := Hist(c, HistOptions{Probe: "p", Field: "v", Cast: cast, JSON: true, Now: time.Unix(0, 0)}, &out); err != nil {
			t.Fatal(err)
		}
		n := strings.Count(out.String(), `"interval-start"`)
		if n != tc.slot {
			t.Errorf("cast %q: %d buckets printed, want %d: %s", tc.cast, n, tc.slot, out.String())
		}
	}
	if _, err := Hist(c, HistOptions{Probe: "nope", Field: "v"}, &out); err == nil || !strings.Contains(err.Error(), "the capture has: p") {
		t.Errorf("unknown probe error: %v", err)
	}
	if _, err := Hist(c, HistOptions{Probe: "p", Field: "x"}, &out); err == nil || !strings.Contains(err.Error(), "its fields: v") {
		t.Errorf("unknown field error: %v", err)
	}
}

func TestCompare(t *testing.T) {
	probes := []format.Probe{{Name: "a", Fields: []format.Field{{Name: "v", Type: format.Uint64}}}, {Name: "b", Fields: []format.Field{{Name: "v", Type: format.Uint64}}}}
	rows := []row{{probe: 0, ints: []uint64{10}}, {probe: 1, ints: []uint64{10}}, {probe: 0, ints: []uint64{100}}, {probe: 1, ints: []uint64{1000}}}
	c := writeCapture(t, probes, rows)
	a, b := &Side{Capture: c, Probe: "a", Field: "v"}, &Side{Capture: c, Probe: "b", Field: "v"}
	var out bytes.Buffer
	res, err := Compare(a, b, CompareOptions{}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Identical || res.KS != 0.5 {
		t.Errorf("identical %v, KS %v; want false, 0.5\n%s", res.Identical, res.KS, out.String())
	}
	if !strings.Contains(out.String(), "        64 -> 127        : 1          0          -1\n") {
		t.Errorf("no aligned delta row:\n%s", out.String())
	}
}

// TestPairingKeysHost checks that latency and requests pair events by host
// and tid in a merged capture: host a's thread 100 and host b's thread 100
// are different threads.
func TestPairingKeysHost(t *testing.T) {
	host := format.Field{Name: format.HostField, Type: format.String}
	probes := []format.Probe{
		{Name: "f", Fields: []format.Field{host}},
		{Name: "f_ret", Fields: []format.Field{host}},
	}
	c := writeCapture(t, probes, []row{
		{probe: 0, tid: 100, t: 1000, strs: []string{"a"}}, // never returns on a
		{probe: 1, tid: 100, t: 2000, strs: []string{"b"}}, // b's return without entry
		{probe: 0, tid: 100, t: 3000, strs: []string{"b"}},
		{probe: 1, tid: 100, t: 3050, strs: []string{"b"}}, // 50 ns
	})
	res, _, err := Latency(c, LatencyOptions{Entry: "f", Return: "f_ret"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Calls != 1 || res.UnmatchedEntries != 1 || res.UnmatchedReturns != 1 || res.Stats.Max() != 50 {
		t.Errorf("calls %d (max %d ns), unmatched entries %d, returns %d; want 1 (50), 1, 1",
			res.Calls, res.Stats.Max(), res.UnmatchedEntries, res.UnmatchedReturns)
	}

	probes = []format.Probe{
		{Name: "item", Fields: []format.Field{{Name: "len", Type: format.Int64}, host}},
		{Name: "end", Fields: []format.Field{{Name: "retval", Type: format.Int32}, host}},
	}
	c = writeCapture(t, probes, []row{
		{probe: 0, tid: 5, t: 1000, ints: []uint64{10}, strs: []string{"", "a"}},
		{probe: 0, tid: 5, t: 1100, ints: []uint64{20}, strs: []string{"", "b"}},
		{probe: 1, tid: 5, t: 1200, ints: []uint64{1}, strs: []string{"", "b"}},
	})
	rres, _, err := Requests(c, RequestsOptions{ItemProbe: "item", ItemField: "len", EndProbe: "end", EndField: "retval", Stats: true}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if rres.Requests != 1 || rres.TotalStats.Max() != 20 || rres.Incomplete != 1 || rres.IncompleteItems != 1 {
		t.Errorf("requests %d (largest %d), incomplete %d with %d items; want 1 of 20, and host a's item incomplete",
			rres.Requests, rres.TotalStats.Max(), rres.Incomplete, rres.IncompleteItems)
	}
}

// TestRepairedNote: a capture `bpftape repair` left batches out of says
// so in every analysis's notes, and for latency that a call may span the
// gap.
func TestRepairedNote(t *testing.T) {
	m := &format.Meta{Host: "h", StartBoot: 1000, StartWall: time.Unix(0, 0), Probes: []format.Probe{{Name: "f"}, {Name: "f_ret"}},
		Extra: map[string]string{format.ExtraRepaired: "bpftape repair left out 1 corrupt batch of 10 events (f 5, f_ret 5)"}}
	c := writeCaptureMeta(t, m, []row{{probe: 0, tid: 1, t: 2000}, {probe: 1, tid: 1, t: 2001}}, 0)
	_, lp, err := Latency(c, LatencyOptions{Entry: "f", Return: "f_ret"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	_, cp, err := Count(c, CountOptions{}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var ln, cn bytes.Buffer
	lp.Notes(&ln)
	cp.Notes(&cn)
	const left = "left out 1 corrupt batch of 10 events (f 5, f_ret 5): counts are low by those events"
	if !strings.Contains(ln.String(), left+", and a call may pair an entry before the gap with a return after it.") {
		t.Errorf("latency's notes: %q", ln.String())
	}
	if !strings.Contains(cn.String(), left+".") {
		t.Errorf("count's notes: %q", cn.String())
	}
}
