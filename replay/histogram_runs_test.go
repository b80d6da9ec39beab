package replay

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
	"github.com/bpftape/bpftape/replay/hist"
)

// widthProbes has a field of every integer type, shared columns (retval of
// two probes) and a probe without fields, so that every column is null on
// most rows.
var widthProbes = []format.Probe{
	{Name: "a", Kind: "uprobe", Fields: []format.Field{{Name: "s8", Type: format.Int8}, {Name: "u8", Type: format.Uint8},
		{Name: "s16", Type: format.Int16}, {Name: "u16", Type: format.Uint16}}},
	{Name: "b", Kind: "uprobe", Fields: []format.Field{{Name: "s32", Type: format.Int32}, {Name: "u32", Type: format.Uint32},
		{Name: "s64", Type: format.Int64}, {Name: "u64", Type: format.Uint64}, {Name: "name", Type: format.String}}},
	{Name: "c", Kind: "uretprobe", Fields: []format.Field{{Name: "retval", Type: format.Int64}}},
	{Name: "d", Kind: "uretprobe", Fields: []format.Field{{Name: "retval", Type: format.Int64}}},
	{Name: "e", Kind: "tracepoint"},
}

// writeWidths writes n rows of widthProbes: values of every magnitude and
// sign, in runs, with loss records every so often when lossy.
func writeWidths(tb testing.TB, path string, n int, comp format.Compression, batchRows int, lossy bool) {
	tb.Helper()
	m := &format.Meta{Host: "h", Tool: "t", StartBoot: 1_000_000, StartWall: time.Unix(1, 0), Probes: widthProbes}
	w, err := format.Create(path, m, format.WriterOptions{Compression: comp, BatchRows: batchRows})
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewSource(int64(n)))
	comms := [][]byte{[]byte("app"), []byte("worker-1"), []byte("worker-2")}
	var v uint64
	t := int64(1_000_000)
	for i := 0; i < n; i++ {
		t += 1 + rng.Int63n(50_000)
		if lossy && rng.Intn(97) == 0 {
			if err := w.Lost(uint16(rng.Intn(len(widthProbes))), uint16(rng.Intn(4)), t, uint64(1+rng.Intn(1000))); err != nil {
				tb.Fatal(err)
			}
			continue
		}
		if rng.Intn(4) == 0 { // a new run
			v = rng.Uint64() >> rng.Intn(64)
			if rng.Intn(3) == 0 {
				v = uint64(rng.Intn(5))
			}
		}
		tid := uint32(100 + rng.Intn(3))
		e := format.Event{Time: t, CPU: uint16(rng.Intn(4)), PID: 100 + uint32(rng.Intn(2)), TID: tid, Comm: comms[tid-100],
			Probe: uint16(rng.Intn(len(widthProbes)))}
		nf := len(widthProbes[e.Probe].Fields)
		e.Ints, e.Strs = make([]uint64, nf), make([][]byte, nf)
		for j := range e.Ints {
			e.Ints[j] = v + uint64(j)
		}
		if e.Probe == 1 {
			e.Strs[4] = []byte(fmt.Sprint("n", v%7))
		}
		if err := w.Append(&e); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}

// writeStream writes n events of formattest's realistic stream, and a loss
// record after every lossEvery events (none if 0).
func writeStream(tb testing.TB, path string, n int, comp format.Compression, lossEvery int) {
	tb.Helper()
	if err := formattest.WriteFile(path, int64(n), nil, format.WriterOptions{Compression: comp}, int64(lossEvery)); err != nil {
		tb.Fatal(err)
	}
}

// cutFooter writes a copy of in without its footer (a killed recorder), or
// cut in the middle of its last batch.
func cutFooter(tb testing.TB, in, out string, midBatch bool) {
	tb.Helper()
	data, err := os.ReadFile(in)
	if err != nil {
		tb.Fatal(err)
	}
	n := int(binary.LittleEndian.Uint32(data[len(data)-10:]))
	data = data[:len(data)-10-n]
	if midBatch {
		data = data[:len(data)-100]
	}
	if err := os.WriteFile(out, data, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// runHist runs Hist on path a stretch of rows at a time where it can
// (runs; with workers goroutines decoding ahead, default one per CPU) or
// row by row, and returns what it printed, its notes, and whether it read
// by stretches.
func runHist(t *testing.T, path string, o HistOptions, runs bool, workers ...int) (out, notes string, spans bool, err error) {
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.perRow = !runs
	if len(workers) > 0 {
		c.r.ReadAhead = workers[0]
	}
	var ob, nb bytes.Buffer
	p, err := Hist(c, o, &ob)
	p.Notes(&nb)
	if p != nil {
		fmt.Fprintf(&nb, "events %d losses %+v\n", p.Events, p.Losses)
		spans = p.spans
	}
	return ob.String(), nb.String(), spans, err
}

// TestHistRunsSameAsRows runs hist on several captures both ways — a
// stretch of rows at a time and row by row — and wants the same bytes
// out, the same notes and the same event and loss counts.
func TestHistRunsSameAsRows(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	writeWidths(t, p("widths-zstd"), 5000, format.Zstd, 300, true)
	writeWidths(t, p("widths-lz4"), 3000, format.LZ4, 256, true)
	writeWidths(t, p("widths-none"), 3000, format.None, 1000, true)
	writeWidths(t, p("widths-clean"), 4000, format.Zstd, 4096, false)
	writeWidths(t, p("widths-tiny"), 40, format.Zstd, 1, true) // batches of one row: all-loss batches
	writeWidths(t, p("empty"), 0, format.Zstd, 100, false)
	writeStream(t, p("stream"), 300_000, format.Zstd, 50_000)
	cutFooter(t, p("widths-zstd"), p("recovered"), false)
	cutFooter(t, p("widths-zstd"), p("recovered-cut"), true)
	if _, err := format.Repair(p("recovered-cut"), p("repaired")); err != nil { // written by Arrow Go
		t.Fatal(err)
	}
	if _, err := format.Repair(p("widths-lz4"), p("repaired-lz4")); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1700000000, 0)
	type tc struct {
		name       string
		probe, fld string
		o          HistOptions
	}
	var cases []tc
	for _, f := range []string{"s8", "u8", "s16", "u16"} {
		cases = append(cases, tc{name: f, probe: "a", fld: f})
	}
	for _, f := range []string{"s32", "u32", "s64", "u64"} {
		cases = append(cases, tc{name: f, probe: "b", fld: f})
	}
	more := []tc{
		{name: "retval", probe: "c", fld: "retval"},
		{name: "bpftrace", probe: "b", fld: "s64", o: HistOptions{Style: "bpftrace"}},
		{name: "bpftrace-u8", probe: "a", fld: "u8", o: HistOptions{Style: "bpftrace", Bpftrace: hist.BpftraceVersion{Major: 0, Minor: 14}}},
		{name: "linear", probe: "a", fld: "s16", o: HistOptions{Linear: &Linear{0, 1000, 100}}},
		{name: "linear-bpftrace", probe: "b", fld: "u32", o: HistOptions{Linear: &Linear{0, 4000, 250}, Style: "bpftrace"}},
		{name: "stats", probe: "b", fld: "s32", o: HistOptions{Stats: true}},
		{name: "json", probe: "b", fld: "u64", o: HistOptions{JSON: true}},
		{name: "json-stats", probe: "a", fld: "s8", o: HistOptions{JSON: true, Stats: true}},
		{name: "json-linear", probe: "a", fld: "u16", o: HistOptions{JSON: true, Linear: &Linear{0, 100, 10}}},
		{name: "cast-s8", probe: "b", fld: "u64", o: HistOptions{Cast: Cast{8, true}}},
		{name: "cast-u16", probe: "b", fld: "s32", o: HistOptions{Cast: Cast{16, false}, Stats: true}},
		{name: "by-pid", probe: "b", fld: "s64", o: HistOptions{By: "pid"}},
		{name: "by-tid-bpftrace", probe: "a", fld: "u8", o: HistOptions{By: "tid", Style: "bpftrace", Stats: true}},
		{name: "by-field", probe: "b", fld: "u32", o: HistOptions{By: "s32"}},
		{name: "filter-pid", probe: "b", fld: "s64", o: HistOptions{Rows: RowFilter{PIDs: []uint32{100}}}},
		{name: "filter-tid", probe: "a", fld: "s16", o: HistOptions{Rows: RowFilter{TIDs: []uint32{101, 102}}, Stats: true}},
		{name: "filter-time", probe: "b", fld: "u32", o: HistOptions{Rows: RowFilter{From: 20 * time.Millisecond, To: 60 * time.Millisecond}}},
		{name: "filter-from", probe: "c", fld: "retval", o: HistOptions{Rows: RowFilter{From: 10 * time.Millisecond}, By: "tid"}},
		{name: "filter-comm", probe: "b", fld: "s64", o: HistOptions{Rows: RowFilter{Comms: []string{"worker-1"}}}},
		{name: "filter-matches-none", probe: "b", fld: "s64", o: HistOptions{Rows: RowFilter{Comms: []string{"nosuch"}, PIDs: []uint32{100, 7}}}},
		{name: "filter-pid-by-comm", probe: "a", fld: "u16", o: HistOptions{Rows: RowFilter{PIDs: []uint32{100}}, By: "comm", Stats: true}},
		{name: "by-comm", probe: "a", fld: "u16", o: HistOptions{By: "comm"}},
		{name: "by-string", probe: "b", fld: "u32", o: HistOptions{By: "name"}},
	}
	cases = append(cases, more...)
	for _, name := range []string{"widths-zstd", "widths-lz4", "widths-none", "widths-clean", "widths-tiny", "empty",
		"recovered", "recovered-cut", "repaired", "repaired-lz4"} {
		for _, c := range cases {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				o := c.o
				o.Probe, o.Field, o.Now = c.probe, c.fld, now
				want, wantNotes, _, wantErr := runHist(t, p(name), o, false)
				if wantErr != nil {
					t.Fatalf("row by row: %v", wantErr)
				}
				var spans bool
				for _, workers := range []int{1, 3} {
					got, gotNotes, pr, gotErr := runHist(t, p(name), o, true, workers)
					spans = pr
					if gotErr != nil {
						t.Fatalf("%d workers: %v", workers, gotErr)
					}
					if got != want {
						t.Errorf("output by stretches (%d workers) differs from row by row:\n%s\nrow by row:\n%s", workers, got, want)
					}
					if gotNotes != wantNotes {
						t.Errorf("notes by stretches (%d workers) differ from row by row:\n%s\nrow by row:\n%s", workers, gotNotes, wantNotes)
					}
				}
				// A hist by nothing or by comm, pid or tid (not a field),
				// with or without a row filter, adds whole stretches.
				byKey := c.o.By == "" || c.o.By == "comm" || c.o.By == "pid" || c.o.By == "tid"
				if wantSpans := byKey; spans != wantSpans {
					t.Errorf("read by stretches: %v, want %v", spans, wantSpans)
				}
				if c.name == "filter-matches-none" {
					if want != "" {
						t.Errorf("a filter that matches nothing printed %q", want)
					}
				} else if name != "empty" && name != "widths-tiny" && len(want) < 50 && !c.o.JSON {
					t.Errorf("suspiciously short output %q", want)
				}
			})
		}
	}
	for _, o := range []HistOptions{{}, {Style: "bpftrace", Stats: true}, {By: "tid"}, {Rows: RowFilter{PIDs: []uint32{4242}}, JSON: true}} {
		o.Probe, o.Field, o.Now = "rx", "arg2", now
		want, wantNotes, _, err := runHist(t, p("stream"), o, false)
		if err != nil {
			t.Fatal(err)
		}
		got, gotNotes, _, _ := runHist(t, p("stream"), o, true)
		if got != want || gotNotes != wantNotes {
			t.Errorf("stream %+v: output by stretches:\n%s%s\nrow by row:\n%s%s", o, got, gotNotes, want, wantNotes)
		}
		if !bytes.Contains([]byte(wantNotes), []byte("WARNING")) {
			t.Errorf("stream: no loss warning in %q", wantNotes)
		}
	}
}

// TestHistRunsDamaged damages a capture here and there and wants the
// same output, error and notes with batches decoded on the analysis's
// goroutine and ahead of it on three: the read ahead stops where a batch
// fails, as one decoder does.
func TestHistRunsDamaged(t *testing.T) {
	dir := t.TempDir()
	clean := filepath.Join(dir, "clean")
	writeWidths(t, clean, 5000, format.Zstd, 300, true)
	data, err := os.ReadFile(clean)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(3))
	errs := 0
	for k := 0; k < 40; k++ {
		d := bytes.Clone(data)
		at := 8 + rng.Intn(len(d)*9/10)
		for j := 0; j < 1+rng.Intn(8); j++ {
			d[at+j] ^= byte(1 + rng.Intn(255))
		}
		path := filepath.Join(dir, fmt.Sprint("damaged-", k))
		if err := os.WriteFile(path, d, 0o600); err != nil {
			t.Fatal(err)
		}
		o := HistOptions{Probe: "b", Field: "s64", Stats: true, Now: time.Unix(1, 0)}
		want, wantNotes, _, wantErr := runHist(t, path, o, true, 1)
		got, gotNotes, _, gotErr := runHist(t, path, o, true, 3)
		if got != want || gotNotes != wantNotes || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("damage at %d: 3 workers: %v\n%s%s\n1 worker: %v\n%s%s", at, gotErr, got, gotNotes, wantErr, want, wantNotes)
		}
		if wantErr != nil {
			errs++
		}
	}
	t.Logf("%d of 40 damaged captures failed to read", errs)
	if errs == 0 {
		t.Error("no damage was noticed")
	}
}

// TestHistRunsRecovered cuts a footerless capture at many places and
// wants what a read row by row prints and notes: the same complete
// batches read and the same cut reported.
func TestHistRunsRecovered(t *testing.T) {
	dir := t.TempDir()
	clean := filepath.Join(dir, "clean")
	writeWidths(t, clean, 3000, format.Zstd, 200, true)
	data, err := os.ReadFile(clean)
	if err != nil {
		t.Fatal(err)
	}
	n := int(binary.LittleEndian.Uint32(data[len(data)-10:]))
	stream := data[:len(data)-10-n-8] // no footer, no end-of-stream marker
	for k := 0; k <= 20; k++ {
		cut := len(stream) * k / 20
		if k == 20 {
			cut = len(stream)
		}
		path := filepath.Join(dir, fmt.Sprint("cut-", k))
		if err := os.WriteFile(path, stream[:max(cut, 8)], 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(path); err != nil {
			continue // cut inside the schema: not a capture either way
		}
		for _, o := range []HistOptions{{Probe: "b", Field: "u32"}, {Probe: "a", Field: "s8", By: "tid", Stats: true}} {
			o.Now = time.Unix(1, 0)
			want, wantNotes, _, wantErr := runHist(t, path, o, false)
			got, gotNotes, spans, gotErr := runHist(t, path, o, true)
			if got != want || gotNotes != wantNotes || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Errorf("cut at %d: by stretches (%v): %v\n%s%s\nrow by row: %v\n%s%s", cut, spans, gotErr, got, gotNotes, wantErr, want, wantNotes)
			}
			if !spans {
				t.Errorf("cut at %d: read row by row, want by stretches", cut)
			}
		}
	}
}

// TestHistFilteredAllProbes: in a capture of 65,536 probes, the last one
// has the id a filter gives the rows it leaves out in a pass by stretches
// (maskedProbe), so a filtered hist of it goes row by row, and counts only
// the rows the filter keeps.
func TestHistFilteredAllProbes(t *testing.T) {
	probes := make([]format.Probe, format.MaxProbes)
	for i := range probes {
		probes[i] = format.Probe{Name: fmt.Sprint("p", i), Kind: "usdt", Spec: fmt.Sprintf("p%d=U:/bin/x:p:%d", i, i)}
	}
	probes[len(probes)-1].Fields = []format.Field{{Name: "v", Type: format.Uint64}}
	m := &format.Meta{Host: "h", StartBoot: 1, StartWall: time.Unix(1700000000, 0), Probes: probes}
	path := filepath.Join(t.TempDir(), "c.arrow")
	w, err := format.Create(path, m, format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	last := uint16(len(probes) - 1)
	for i := range 1000 {
		e := format.Event{Time: int64(10 + i), PID: uint32(1 + i%2), TID: 1, Comm: []byte("c"), Probe: last, Ints: []uint64{uint64(1 << (i % 10))}}
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	o := HistOptions{Probe: fmt.Sprint("p", last), Field: "v", Rows: RowFilter{PIDs: []uint32{1}}, JSON: true, Now: time.Unix(1, 0)}
	want, _, _, err := runHist(t, path, o, false)
	if err != nil {
		t.Fatal(err)
	}
	got, _, spans, err := runHist(t, path, o, true)
	if err != nil {
		t.Fatal(err)
	}
	if got != want || spans {
		t.Errorf("read by stretches %v:\n%s\nrow by row:\n%s", spans, got, want)
	}
	// pid 1's values are 1, 4, 16, 64 and 256, a hundred each; pid 2's
	// (2, 8, ... 512) are left out.
	for _, s := range []string{`"interval-start": 256, "interval-end": 511, "count": 100}`, `"interval-start": 2, "interval-end": 3, "count": 0}`} {
		if !strings.Contains(want, s) {
			t.Errorf("want %s:\n%s", s, want)
		}
	}
	if strings.Contains(want, "512") {
		t.Errorf("pid 2's 512 counted:\n%s", want)
	}
}
