package export

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/parquet/file"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/replay"
)

// probesCapture describes a capture writeProbes wrote: event i is of probe
// i%probes, with pid 100+i%2, arg0 i and a path of strLen bytes, and
// after every 1000th event a loss record of the same probe.
type probesCapture struct {
	probes, events, strLen int
}

func (pc probesCapture) probe(p int) string { return fmt.Sprintf("vfs_%03d", p) }

func (pc probesCapture) lossAfter(i int) bool { return i%1000 == 999 }

// writeProbes writes pc to path, as a recording of k:vfs_* would.
func writeProbes(tb testing.TB, path string, pc probesCapture) {
	tb.Helper()
	m := testMeta("h1")
	m.Probes = nil
	for p := 0; p < pc.probes; p++ {
		name := pc.probe(p)
		m.Probes = append(m.Probes, format.Probe{Name: name, Kind: "kprobe", Spec: name + "=k:" + name,
			Fields: []format.Field{{Name: "arg0", Type: format.Uint64}, {Name: "path", Type: format.String}}})
	}
	w, err := format.Create(path, m, format.WriterOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	str := bytes.Repeat([]byte("/var/lib/"), pc.strLen/9+1)[:pc.strLen]
	for i := 0; i < pc.events; i++ {
		p := uint16(i % pc.probes)
		e := &format.Event{Time: base + int64(i)*1000, PID: uint32(100 + i%2), TID: 7, Comm: []byte("worker"), Probe: p,
			Ints: []uint64{uint64(i), 0}, Strs: [][]byte{nil, str}}
		if err := w.Append(e); err != nil {
			tb.Fatal(err)
		}
		if pc.lossAfter(i) {
			if err := w.Lost(p, 0, base+int64(i)*1000+1, 5); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}

// filesUnder lists the files under dir, relative to it, sorted.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// TestPartitionedManyProbes exports captures of more probes than
// MaxOpenParts, their events round-robin: each partition is one part file
// holding exactly its probe's rows in file order, however many passes it
// takes, and the Result and Pass count the capture once.
func TestPartitionedManyProbes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		probes int
		o      Options
		again  bool // export into the same folder again
	}{
		{"65", 65, Options{Format: Parquet}, true},
		{"200", 200, Options{Format: Parquet}, false},
		{"200-lost-keep-pid", 200, Options{Format: Parquet, Lost: LostKeep, Rows: replay.RowFilter{PIDs: []uint32{100}}}, false},
		{"130-lost-only", 130, Options{Format: Parquet, Lost: LostOnly}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pc := probesCapture{probes: tc.probes, events: 20000, strLen: 20}
			in := filepath.Join(dir, "vfs.arrow")
			writeProbes(t, in, pc)
			c := open(t, in)

			// What each partition should hold: the arg0 of its events, and
			// its loss records.
			keep := func(i int) bool {
				return tc.o.Lost != LostOnly && (len(tc.o.Rows.PIDs) == 0 || uint32(100+i%2) == tc.o.Rows.PIDs[0])
			}
			wantArgs := make([][]uint64, pc.probes)
			wantLosses := make([]int, pc.probes)
			var events, losses uint64
			for i := 0; i < pc.events; i++ {
				p := i % pc.probes
				if keep(i) {
					wantArgs[p] = append(wantArgs[p], uint64(i))
					events++
				}
				if pc.lossAfter(i) && tc.o.Lost != "" && tc.o.Lost != LostDrop {
					wantLosses[p]++
					losses++
				}
			}
			parts := 0
			for p := range wantArgs {
				if len(wantArgs[p])+wantLosses[p] > 0 {
					parts++
				}
			}

			out := filepath.Join(dir, "out")
			res, pass, err := WritePartitioned(c, out, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Events != events || res.LossRecords != losses {
				t.Errorf("result: %d events and %d loss records, want %d and %d", res.Events, res.LossRecords, events, losses)
			}
			if res.OpenParts < 1 || res.OpenParts > MaxOpenParts {
				t.Errorf("%d parts open at once, want 1 to %d", res.OpenParts, MaxOpenParts)
			}
			// The pass is one pass's: as a walk over the capture counts it.
			one, err := c.Walk(&tc.o.Rows, func(*format.Batch, int, bool) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			if pass.Events != one.Events || pass.Batches != one.Batches || pass.RawBytes != one.RawBytes || pass.Losses.Total != one.Losses.Total {
				t.Errorf("pass: %d events, %d batches, %d bytes, %d lost; a walk: %d, %d, %d, %d",
					pass.Events, pass.Batches, pass.RawBytes, pass.Losses.Total, one.Events, one.Batches, one.RawBytes, one.Losses.Total)
			}

			files := filesUnder(t, out)
			if len(files) != parts || len(res.Files) != parts {
				t.Fatalf("%d files under %s (%d in the result), want one per partition: %d", len(files), out, len(res.Files), parts)
			}
			var rows int64
			for p := range wantArgs {
				if len(wantArgs[p])+wantLosses[p] == 0 {
					continue
				}
				name := filepath.Join("host=h1", "probe="+pc.probe(p), "part-0.parquet")
				if k := sort.SearchStrings(files, name); k == len(files) || files[k] != name {
					t.Fatalf("no %s among %d files", name, len(files))
				}
				tbl := readParquet(t, filepath.Join(out, name))
				rows += tbl.NumRows()
				if tbl.NumRows() != int64(len(wantArgs[p])+wantLosses[p]) {
					t.Errorf("%s: %d rows, want %d events and %d loss records", name, tbl.NumRows(), len(wantArgs[p]), wantLosses[p])
					continue
				}
				idx := tbl.Schema().FieldIndices(pc.probe(p) + ".arg0")
				if len(idx) != 1 {
					t.Fatalf("%s: no column %s.arg0: %v", name, pc.probe(p), tbl.Schema())
				}
				var args []uint64
				for _, ch := range tbl.Column(idx[0]).Data().Chunks() {
					a := ch.(*array.Uint64)
					for k := 0; k < a.Len(); k++ {
						if a.IsValid(k) {
							args = append(args, a.Value(k))
						}
					}
				}
				if fmt.Sprint(args) != fmt.Sprint(wantArgs[p]) {
					t.Errorf("%s: arg0 %v, want %v", name, args, wantArgs[p])
				}
			}
			if rows != int64(events+losses) {
				t.Errorf("%d rows in all, want %d", rows, events+losses)
			}

			if !tc.again {
				return
			}
			// The same rows again are refused: a query of out would count
			// them twice. Nothing is added.
			if _, _, err := WritePartitioned(c, out, tc.o); !errors.Is(err, ErrExported) ||
				!strings.Contains(err.Error(), fmt.Sprintf("in %d part files (", parts)) || !strings.Contains(err.Error(), fmt.Sprintf(" and %d more", parts-3)) {
				t.Errorf("the same export again: %v", err)
			}
			if again := filesUnder(t, out); len(again) != parts {
				t.Errorf("a refused export left %d files, want %d", len(again), parts)
			}
			// Other rows of the capture into out add one part-1 file per
			// partition.
			o := tc.o
			o.Rows.From = time.Nanosecond
			if _, _, err := WritePartitioned(c, out, o); err != nil {
				t.Fatal(err)
			}
			again := filesUnder(t, out)
			n1 := 0
			for _, f := range again {
				if strings.HasSuffix(f, "/part-1.parquet") {
					n1++
				}
			}
			if len(again) != 2*parts || n1 != parts {
				t.Errorf("after a second export: %d files, %d of them part-1, want %d and %d", len(again), n1, 2*parts, parts)
			}
		})
	}
}

// TestPartitionedFailure exports into a folder where one partition's
// folder cannot be made, in the second pass: the run fails and leaves no
// part file, also none of the first pass's.
func TestPartitionedFailure(t *testing.T) {
	dir := t.TempDir()
	pc := probesCapture{probes: 70, events: 700, strLen: 8}
	in := filepath.Join(dir, "vfs.arrow")
	writeProbes(t, in, pc)
	out := filepath.Join(dir, "out")
	// The 70th probe is in the second pass; a file where its folder goes.
	if err := os.MkdirAll(filepath.Join(out, "host=h1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "host=h1", "probe="+pc.probe(69)), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	res, _, err := WritePartitioned(open(t, in), out, Options{Format: Parquet})
	if err == nil {
		t.Fatal("export into a folder that is a file succeeded")
	}
	if len(res.Files) != 0 {
		t.Errorf("a failed export lists files: %v", res.Files)
	}
	if files := filesUnder(t, out); len(files) != 1 {
		t.Errorf("a failed export left files: %v", files)
	}
}

// TestPartLimit checks the memory bound of a part writer: a row group is
// written once its rows take the limit, and lowering the limit below what
// the buffers hold writes them out and lets them go.
func TestPartLimit(t *testing.T) {
	dir := t.TempDir()
	pc := probesCapture{probes: 1, events: 1000, strLen: 10 << 10}
	in := filepath.Join(dir, "wide.arrow")
	writeProbes(t, in, pc)
	c := open(t, in)
	o := Options{Format: Parquet, Lost: LostDrop}
	var buf bytes.Buffer
	pw, err := newPQWriter(&buf, columns(c, &o), c, &o)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 1 << 20
	i := 0
	_, err = walk(c, &o, func(b *format.Batch, k int, _ bool) error {
		if i++; i == 500 {
			// Half way: hold everything, then lower the limit.
			if err := pw.limit(PartsMemory); err != nil || pw.n != 499 {
				t.Errorf("a limit above what the rows take: %d rows gathered, want 499 (%v)", pw.n, err)
			}
			if err := pw.limit(limit); err != nil || pw.n != 0 {
				t.Errorf("a lower limit: %d rows still gathered (%v)", pw.n, err)
			}
			held := 0
			for _, col := range pw.cols {
				held += col.held()
			}
			if held != 0 {
				t.Errorf("a lower limit: the buffers hold %d bytes", held)
			}
		}
		return pw.add(b, k)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := pw.close(); err != nil {
		t.Fatal(err)
	}
	r, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	perRow := int64(10<<10 + len("worker"))
	for g := 0; g < r.NumRowGroups(); g++ {
		n := r.MetaData().RowGroup(g).NumRows()
		rows += n
		if g > 0 && g < r.NumRowGroups()-1 && (n*perRow > limit+perRow*2 || n*perRow < limit/2) {
			t.Errorf("row group %d: %d rows of %d bytes, want about %d bytes", g, n, perRow, limit)
		}
	}
	if first := r.MetaData().RowGroup(0).NumRows(); rows != 1000 || first != 499 {
		t.Errorf("%d rows, the first row group %d, want 1000 and 499", rows, first)
	}
}

// BenchmarkPartitionedProbes exports 65 probes' 20,000 interleaved events
// and reports the peaks of the heap and of its live part (as the last
// garbage collection found it), sampled every millisecond.
func BenchmarkPartitionedProbes(b *testing.B) {
	dir := b.TempDir()
	in := filepath.Join(dir, "vfs.arrow")
	writeProbes(b, in, probesCapture{probes: 65, events: 20000, strLen: 20})
	c, err := replay.Open(in)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	runtime.GC()
	peak := peakHeap()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		res, _, err := WritePartitioned(c, filepath.Join(dir, fmt.Sprint("out", n)), Options{Format: Parquet})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(res.Files)), "files/op")
	}
	b.StopTimer()
	heap, live := peak()
	b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(live)/(1<<20), "peak-live-MiB")
}

// peakHeap samples the heap's size, and its live part, until the function
// it returns is called, which returns the largest of each.
func peakHeap() func() (heap, live uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	var heap, live uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			heap = max(heap, s[0].Value.Uint64())
			live = max(live, s[1].Value.Uint64())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() (uint64, uint64) {
		close(done)
		wg.Wait()
		return heap, live
	}
}

// TestPartitionedSameRows: an export into a folder that holds some of the
// same rows of the same capture is refused, whatever the --lost mode or
// the order of a filter's lists; one of other rows is added.
func TestPartitionedSameRows(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "vfs.arrow")
	writeProbes(t, in, probesCapture{probes: 3, events: 3000, strLen: 8})
	c := open(t, in)
	pids := func(p ...uint32) replay.RowFilter { return replay.RowFilter{PIDs: p} }
	for _, tc := range []struct {
		name  string
		steps []Options // exported in turn into one folder; the last refused or not
		ok    bool
	}{
		{"drop then keep: the events twice", []Options{{Lost: LostDrop}, {Lost: LostKeep}}, false},
		{"keep then only: the loss records twice", []Options{{Lost: LostKeep}, {Lost: LostOnly}}, false},
		{"drop then only: events, then loss records", []Options{{Lost: LostDrop}, {Lost: LostOnly}}, true},
		{"a pid list in another order", []Options{{Rows: pids(100, 101)}, {Rows: pids(101, 100, 101)}}, false},
		{"another pid", []Options{{Rows: pids(100)}, {Rows: pids(101)}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			var err error
			for _, o := range tc.steps {
				o.Format = Parquet
				if _, _, err = WritePartitioned(c, out, o); err != nil {
					break
				}
			}
			if tc.ok && err != nil || !tc.ok && !errors.Is(err, ErrExported) {
				t.Errorf("error %v, want refused: %v", err, !tc.ok)
			}
		})
	}
}
