package replay

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay/hist"
)

// bioProbes are the block tracepoints biolatency pairs, as bpftape records
// them, and a probe of neither.
var bioProbes = []format.Probe{
	{Name: "issue", Kind: "tracepoint", Fields: []format.Field{{Name: "dev", Type: format.Uint32}, {Name: "sector", Type: format.Uint64}, {Name: "nr_sector", Type: format.Uint32}}},
	{Name: "complete", Kind: "tracepoint", Fields: []format.Field{{Name: "dev", Type: format.Uint32}, {Name: "sector", Type: format.Uint64}, {Name: "error", Type: format.Int32}}},
	{Name: "other", Kind: "tracepoint", Fields: []format.Field{{Name: "dev", Type: format.String}}},
}

// writeCaptureMeta writes rows as writeCapture does, with meta m, and
// closes the window at windowEnd (if not 0) as the recorder does.
func writeCaptureMeta(t *testing.T, m *format.Meta, rows []row, windowEnd int64) *Capture {
	t.Helper()
	return openCapture(t, writeRows(t, m, rows, 7, windowEnd))
}

// writeRows writes the events rows (comm "app" where they have none) in
// batches of batchRows to a capture of m in a temporary folder, its
// window ending at windowEnd if not 0, and returns its path.
func writeRows(tb testing.TB, m *format.Meta, rows []row, batchRows int, windowEnd int64) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "c.arrow")
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: batchRows})
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range rows {
		comm := r.comm
		if comm == "" {
			comm = "app"
		}
		nf := len(m.Probes[r.probe].Fields)
		e := format.Event{Time: r.t, PID: 7, TID: r.tid, Probe: r.probe, Comm: []byte(comm), Ints: make([]uint64, nf), Strs: make([][]byte, nf)}
		copy(e.Ints, r.ints)
		for i, s := range r.strs {
			e.Strs[i] = []byte(s)
		}
		if err := w.Append(&e); err != nil {
			tb.Fatal(err)
		}
	}
	if windowEnd != 0 {
		w.Meta().Window.End = windowEnd
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// openCapture opens the capture at path, to be closed when tb ends.
func openCapture(tb testing.TB, path string) *Capture {
	tb.Helper()
	c, err := Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// bioRequests makes n block requests issued and completed on different
// threads, each key (dev, sector) reused only after its previous request
// completed, so that the pairs are known: it returns the rows, in time
// order, and each request's duration.
func bioRequests(n int, seed int64) (rows []row, durs []int64) {
	rng := rand.New(rand.NewSource(seed))
	for i := 0; i < n; i++ {
		start := int64(10_000 + i*100)
		d := 10 + rng.Int63n(1_500) // < 16 × 100: done before the key's next request
		dev, sector := uint64(1+(i/8)%2), uint64(i%8)*8
		rows = append(rows,
			row{probe: 0, tid: uint32(100 + i%3), t: start, ints: []uint64{dev, sector, 8}},
			row{probe: 1, tid: uint32(200 + i%5), t: start + d, ints: []uint64{dev, sector, 0}})
		durs = append(durs, d)
	}
	sort.SliceStable(rows, func(a, b int) bool { return rows[a].t < rows[b].t })
	return rows, durs
}

// TestLatencyKey: biolatency's pairing. Requests issued and completed on
// different threads pair by dev and sector, exactly: the histogram is the
// one of the durations the requests were made with. A completion before
// any issue, an issue never completed and a key issued twice are counted
// as such; thread pairing of the same capture pairs none of them right.
func TestLatencyKey(t *testing.T) {
	rows, durs := bioRequests(500, 1)
	rows = append([]row{{probe: 1, tid: 1, t: 5_000, ints: []uint64{9, 9, 0}}}, rows...) // completes before the capture
	end := rows[len(rows)-1].t
	rows = append(rows,
		row{probe: 0, tid: 1, t: end + 10, ints: []uint64{7, 7, 8}}, // restarted by the next
		row{probe: 2, tid: 1, t: end + 20, strs: []string{"x"}},
		row{probe: 0, tid: 2, t: end + 50, ints: []uint64{7, 7, 8}},
		row{probe: 1, tid: 3, t: end + 80, ints: []uint64{7, 7, 0}},  // 30 ns
		row{probe: 0, tid: 1, t: end + 90, ints: []uint64{9, 10, 8}}) // never completes
	durs = append(durs, 30)
	c := writeCapture(t, bioProbes, rows)
	var want hist.Log2
	for _, d := range durs {
		want.Add(uint64(d))
	}
	var out bytes.Buffer
	res, _, err := Latency(c, LatencyOptions{Entry: "issue", Return: "complete", Key: []string{"dev", "sector"}}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Calls != uint64(len(durs)) || res.UnmatchedReturns != 1 || res.UnmatchedEntries != 1 || res.Restarted != 1 {
		t.Errorf("calls %d, unmatched returns %d, entries %d, restarted %d; want %d, 1, 1, 1",
			res.Calls, res.UnmatchedReturns, res.UnmatchedEntries, res.Restarted, len(durs))
	}
	if res.Hist.Slots() != want.Slots() || res.Stats.Min() != int64(slices.Min(durs)) || res.Stats.Max() != int64(slices.Max(durs)) {
		t.Errorf("slots %v, want %v", res.Hist.Slots(), want.Slots())
	}
	var wantOut bytes.Buffer
	want.WriteBCC(&wantOut, "nsecs")
	if !strings.HasPrefix(out.String(), wantOut.String()) ||
		!strings.Contains(out.String(), "unmatched: 1 returns without entry, 1 entries without return, 1 entries restarted before a return (the later kept)\n") {
		t.Errorf("output:\n%s\nwant the histogram\n%s", out.String(), wantOut.String())
	}
	// By thread, the same events pair wrongly or not at all.
	tres, _, err := Latency(c, LatencyOptions{Entry: "issue", Return: "complete"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if tres.Calls != 0 {
		t.Errorf("thread pairing paired %d calls across threads", tres.Calls)
	}
}

// TestLatencyKeyEncoding: keys of more integers than a pairKey holds
// inline, and of strings, pair only when every value is equal: "ab","c"
// is not "a","bc".
func TestLatencyKeyEncoding(t *testing.T) {
	var fields []format.Field
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		fields = append(fields, format.Field{Name: n, Type: format.Int64})
	}
	fields = append(fields, format.Field{Name: "s", Type: format.String}, format.Field{Name: "u", Type: format.String})
	probes := []format.Probe{{Name: "start", Fields: fields}, {Name: "end", Fields: slices.Clone(fields)}}
	key := []string{"a", "b", "c", "d", "e", "f", "s", "u"}
	ints := []uint64{1, 2, 3, 4, 5, 6}
	other := []uint64{1, 2, 3, 4, 5, 7} // differs in the sixth, beyond the inline four
	strs := func(s, u string) []string { return []string{"", "", "", "", "", "", s, u} }
	c := writeCapture(t, probes, []row{
		{probe: 0, tid: 1, t: 1000, ints: ints, strs: strs("ab", "c")},
		{probe: 1, tid: 2, t: 1100, ints: ints, strs: strs("a", "bc")},  // not the same key
		{probe: 1, tid: 2, t: 1200, ints: other, strs: strs("ab", "c")}, // nor this
		{probe: 1, tid: 2, t: 1300, ints: ints, strs: strs("ab", "c")},  // 300 ns
	})
	res, _, err := Latency(c, LatencyOptions{Entry: "start", Return: "end", Key: key}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Calls != 1 || res.Stats.Max() != 300 || res.UnmatchedReturns != 2 || res.UnmatchedEntries != 0 {
		t.Errorf("calls %d (max %d), unmatched returns %d, entries %d; want 1 (300), 2, 0", res.Calls, res.Stats.Max(), res.UnmatchedReturns, res.UnmatchedEntries)
	}
}

// TestKeyErrors: a key field one of the probes lacks, or that is an
// integer in one and a string in the other, is a one-line usage error
// naming the probe and field; a bad --key list is ErrKeyFields.
func TestKeyErrors(t *testing.T) {
	probes := append(slices.Clone(bioProbes), format.Probe{Name: "other_end", Fields: []format.Field{{Name: "dev", Type: format.Uint32}}})
	c := writeCapture(t, probes, nil)
	for _, tc := range []struct {
		entry, ret string
		key        []string
		want       []string
	}{
		{"issue", "complete", []string{"dev", "nr_sector"}, []string{"--key dev,nr_sector", "probe complete has no field \"nr_sector\"", "its fields: dev, sector, error"}},
		{"issue", "complete", []string{"sectr"}, []string{"probe issue has no field \"sectr\""}},
		{"other", "other_end", []string{"dev"}, []string{"dev is a string in probe other but an integer in probe other_end"}},
	} {
		_, _, err := Latency(c, LatencyOptions{Entry: tc.entry, Return: tc.ret, Key: tc.key}, &bytes.Buffer{})
		if err == nil || !usage.Is(err) || strings.Contains(err.Error(), "\n") {
			t.Errorf("latency --key %v: %v, want a one-line usage error", tc.key, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("latency --key %v: %q does not say %q", tc.key, err, w)
			}
		}
		if tc.entry != "issue" {
			continue // other's dev is no item to sum
		}
		_, _, err = Requests(c, RequestsOptions{ItemProbe: tc.entry, ItemField: "dev", EndProbe: tc.ret, EndField: "dev", Key: tc.key}, &bytes.Buffer{})
		if err == nil || !usage.Is(err) || !strings.Contains(err.Error(), tc.want[0]) {
			t.Errorf("requests --key %v: %v", tc.key, err)
		}
	}
	if _, _, err := Requests(c, RequestsOptions{ItemProbe: "issue", ItemField: "nr_sector", EndProbe: "complete", EndField: "error", Key: []string{"dev"}, Global: true}, &bytes.Buffer{}); !usage.Is(err) {
		t.Errorf("--key with --global: %v", err)
	}
	for _, s := range []string{"", " ", ",", "dev,,sector", "dev,dev", "a,b,c,d,e,f,g,h,i"} {
		if names, err := ParseKeyFields(s); !errors.Is(err, ErrKeyFields) || !usage.Is(err) {
			t.Errorf("ParseKeyFields(%q) = %v, %v; want ErrKeyFields", s, names, err)
		}
	}
	if names, err := ParseKeyFields(" dev, sector"); err != nil || !slices.Equal(names, []string{"dev", "sector"}) {
		t.Errorf("ParseKeyFields: %v, %v", names, err)
	}
}

// FuzzKeyFields: ParseKeyFields never panics, and what it accepts is
// 1 to MaxKeyFields distinct non-empty names that parse back to themselves.
func FuzzKeyFields(f *testing.F) {
	for _, s := range []string{"dev,sector", "sk", " a , b ", "a,,b", "a,a", ",", "", "a,b,c,d,e,f,g,h,i"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := ParseKeyFields(s)
		if err != nil {
			if !errors.Is(err, ErrKeyFields) {
				t.Fatalf("%q: %v is not ErrKeyFields", s, err)
			}
			return
		}
		if len(names) == 0 || len(names) > MaxKeyFields {
			t.Fatalf("%q: %d names", s, len(names))
		}
		seen := map[string]bool{}
		for _, n := range names {
			if n == "" || n != strings.TrimSpace(n) || strings.Contains(n, ",") || seen[n] {
				t.Fatalf("%q: bad name %q in %q", s, n, names)
			}
			seen[n] = true
		}
		again, err := ParseKeyFields(strings.Join(names, ","))
		if err != nil || !slices.Equal(again, names) {
			t.Fatalf("%q: %q parses back as %q, %v", s, names, again, err)
		}
	})
}

// TestRequestsKey: items and ends of a request handed between threads
// make one request when keyed by its id; each total is the sum of its
// items, computed here as the requests were made.
func TestRequestsKey(t *testing.T) {
	probes := []format.Probe{
		{Name: "chunk", Fields: []format.Field{{Name: "id", Type: format.Uint64}, {Name: "len", Type: format.Int64}}},
		{Name: "done", Fields: []format.Field{{Name: "id", Type: format.Uint64}, {Name: "status", Type: format.Int32}}},
	}
	rng := rand.New(rand.NewSource(3))
	var rows []row
	var want hist.Log2
	tm := int64(1000)
	for id := uint64(1); id <= 200; id++ {
		var sum uint64
		for j := 0; j < 1+rng.Intn(5); j++ {
			n := uint64(1 + rng.Intn(5000))
			sum += n
			rows = append(rows, row{probe: 0, tid: uint32(rng.Intn(4)), t: tm, ints: []uint64{id, n}})
			tm++
		}
		// Another request's chunk comes between this one's items and end.
		rows = append(rows, row{probe: 0, tid: 9, t: tm, ints: []uint64{id + 1000, 1}}, row{probe: 1, tid: 9, t: tm + 1, ints: []uint64{id + 1000, 0}})
		want.Add(1)
		rows = append(rows, row{probe: 1, tid: uint32(10 + rng.Intn(4)), t: tm + 2, ints: []uint64{id, 0}})
		want.Add(sum)
		tm += 3
	}
	rows = append(rows, row{probe: 1, tid: 1, t: tm, ints: []uint64{5000, 0}}, row{probe: 0, tid: 1, t: tm + 1, ints: []uint64{6000, 3}})
	c := writeCapture(t, probes, rows)
	res, _, err := Requests(c, RequestsOptions{ItemProbe: "chunk", ItemField: "len", EndProbe: "done", EndField: "status", Key: []string{"id"}}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 400 || res.EndsWithoutItems != 1 || res.Incomplete != 1 || res.IncompleteItems != 1 || res.Total.Slots() != want.Slots() {
		t.Errorf("requests %d, ends without items %d, incomplete %d (%d items), totals %v; want 400, 1, 1 (1), %v",
			res.Requests, res.EndsWithoutItems, res.Incomplete, res.IncompleteItems, res.Total.Slots(), want.Slots())
	}
}

// benchKeyCapture is a capture of n block requests for the pairing benchmarks.
func benchKeyCapture(b *testing.B, n int) *Capture {
	rows, _ := bioRequests(n, 2)
	m := &format.Meta{Host: "h", StartBoot: 1000, StartWall: time.Unix(0, 0), Probes: bioProbes}
	return openCapture(b, writeRows(b, m, rows, 0, 0))
}

// BenchmarkLatencyPairing compares pairing by thread with pairing by a
// key of two integer fields, on the same events.
func BenchmarkLatencyPairing(b *testing.B) {
	c := benchKeyCapture(b, 200_000)
	for _, tc := range []struct {
		name string
		key  []string
	}{{"thread", nil}, {"key", []string{"dev", "sector"}}} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, _, err := Latency(c, LatencyOptions{Entry: "issue", Return: "complete", Key: tc.key}, &bytes.Buffer{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/400_000, "ns/event")
		})
	}
}

// TestRecordedHostField: a field a probe recorded under the name host (a
// parameter called host) is not a merged capture's host: events pair by
// thread as in any capture, and nothing treats it as a host name.
func TestRecordedHostField(t *testing.T) {
	const sb = 1_000_000
	m := &format.Meta{Host: "h", StartBoot: sb, StartWall: time.Unix(0, 0), Window: &format.Window{Start: sb},
		Probes: []format.Probe{
			{Name: "in", Fields: []format.Field{{Name: "host", Type: format.Uint64}, {Name: "port", Type: format.Uint64}}},
			{Name: "out"},
		}}
	var rows []row
	for i := range 5 {
		ts := int64(sb + 1000*(i+1))
		rows = append(rows, row{probe: 0, tid: 7, t: ts, ints: []uint64{uint64(100 + i), 80}}, row{probe: 1, tid: 7, t: ts + 10})
	}
	c := writeCaptureMeta(t, m, rows, sb+10_000)
	res, _, err := Latency(c, LatencyOptions{Entry: "in", Return: "out"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.Calls != 5 || res.UnmatchedReturns != 0 || res.UnmatchedEntries != 0 {
		t.Errorf("calls %d, unmatched returns %d, entries %d; want 5, 0, 0", res.Calls, res.UnmatchedReturns, res.UnmatchedEntries)
	}
	if fi := c.Meta().HostFieldIndex(&c.Meta().Probes[0]); fi != -1 {
		t.Errorf("HostFieldIndex = %d in a capture that was not merged", fi)
	}
}
