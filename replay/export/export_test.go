package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/parquet/file"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/testutil/hostile"
	"github.com/bpftape/bpftape/replay"
)

type row struct {
	probe uint16
	pid   uint32
	t     int64
	v     uint64
	s     string
	lost  uint64
}

const base = int64(1_000_000_000)

func testMeta(host string) *format.Meta {
	return &format.Meta{Host: host, Kernel: "6.1", StartBoot: base, StartWall: time.Unix(1700000000, 0), Probes: []format.Probe{
		{Name: "a", Kind: "usdt", Spec: "a=U:/bin/x:p:a", Fields: []format.Field{{Name: "v", Type: format.Int32}, {Name: "s", Type: format.String}}},
		{Name: "b", Kind: "uprobe", Spec: "b=u:/bin/x:f(arg0)", Fields: []format.Field{{Name: "v", Type: format.Uint64}}},
		{Name: "c/d", Kind: "tracepoint", Spec: "c/d=t:x:y"},
	}}
}

func testRows() []row {
	var rs []row
	for i := 0; i < 1000; i++ {
		r := row{probe: uint16(i % 3), pid: uint32(10 + i%2), t: int64(i) * 1_000_000}
		switch r.probe {
		case 0:
			r.v, r.s = uint64(int64(-i)), []string{"hello", "with,comma", "quote\"d\n", "long string past twelve bytes"}[i%4]
		case 1:
			r.v = 1<<63 + uint64(i)
		}
		if i%100 == 7 {
			r.lost = uint64(i)
		}
		rs = append(rs, r)
	}
	return rs
}

func write(t *testing.T, path string, m *format.Meta, rs []row) {
	t.Helper()
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.lost > 0 {
			if err := w.Lost(r.probe, 1, base+r.t, r.lost); err != nil {
				t.Fatal(err)
			}
			continue
		}
		e := format.Event{Time: base + r.t, PID: r.pid, TID: r.pid, Probe: r.probe, Comm: []byte("app")}
		switch r.probe {
		case 0:
			e.Ints, e.Strs = []uint64{r.v, 0}, [][]byte{nil, []byte(r.s)}
		case 1:
			e.Ints, e.Strs = []uint64{r.v}, [][]byte{nil}
		}
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func open(t *testing.T, path string) *replay.Capture {
	t.Helper()
	c, err := replay.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func capture(t *testing.T) (string, []row) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	rs := testRows()
	write(t, path, testMeta("h1"), rs)
	return path, rs
}

// want lists the rows a mode and filter select.
func want(rs []row, mode LostMode, f replay.RowFilter) []row {
	var out []row
	for _, r := range rs {
		inWin := time.Duration(r.t) >= f.From && (f.To == 0 || time.Duration(r.t) < f.To)
		switch {
		case r.lost > 0 && mode != LostDrop && inWin:
			out = append(out, r)
		case r.lost == 0 && mode != LostOnly && inWin && (len(f.PIDs) == 0 || f.PIDs[0] == r.pid):
			out = append(out, r)
		}
	}
	return out
}

func TestCSV(t *testing.T) {
	path, rs := capture(t)
	for _, mode := range []LostMode{LostDrop, LostKeep, LostOnly} {
		f := replay.RowFilter{}
		if mode == LostDrop {
			f = replay.RowFilter{PIDs: []uint32{11}, From: 100 * time.Millisecond, To: 900 * time.Millisecond}
		}
		var b bytes.Buffer
		c := open(t, path)
		res, pass, err := WriteCSV(c, &b, Options{Format: CSV, Lost: mode, Rows: f})
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(&b).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		header := "time,cpu,pid,tid,comm,probe,a.v,a.s,b.v"
		if mode != LostDrop {
			header = "time,cpu,pid,tid,comm,probe,lost,a.v,a.s,b.v"
		}
		if got := strings.Join(recs[0], ","); got != header {
			t.Fatalf("%s: header %q, want %q", mode, got, header)
		}
		ws := want(rs, mode, f)
		if len(recs)-1 != len(ws) || res.Events+res.LossRecords != uint64(len(ws)) {
			t.Fatalf("%s: %d rows (%+v), want %d", mode, len(recs)-1, res, len(ws))
		}
		col := map[string]int{}
		for i, n := range recs[0] {
			col[n] = i
		}
		for i, w := range ws {
			rec := recs[i+1]
			get := func(n string) string { return rec[col[n]] }
			if get("time") != strconv.FormatInt(base+w.t, 10) || get("probe") != testMeta("").Probes[w.probe].Name {
				t.Fatalf("%s row %d: %v, want %+v", mode, i, rec, w)
			}
			if w.lost > 0 {
				if get("lost") != strconv.FormatUint(w.lost, 10) || get("a.v") != "" || get("comm") != "" {
					t.Fatalf("%s loss row %d: %v", mode, i, rec)
				}
				continue
			}
			if mode == LostKeep && get("lost") != "" {
				t.Fatalf("event row %d has lost %q", i, get("lost"))
			}
			var v, s, bv string
			switch w.probe {
			case 0:
				v, s = strconv.FormatInt(int64(int32(w.v)), 10), w.s
			case 1:
				bv = strconv.FormatUint(w.v, 10)
			}
			if get("a.v") != v || get("a.s") != s || get("b.v") != bv || get("comm") != "app" || get("pid") != strconv.Itoa(int(w.pid)) {
				t.Fatalf("%s row %d: %v, want %+v", mode, i, rec, w)
			}
		}
		if pass.Losses.Total == 0 || pass.Events != 990 {
			t.Errorf("%s: capture tally %d events, %d lost", mode, pass.Events, pass.Losses.Total)
		}
	}
}

func TestJSONL(t *testing.T) {
	path, rs := capture(t)
	var b bytes.Buffer
	res, _, err := WriteJSONL(open(t, path), &b, Options{Format: JSONL, Lost: LostKeep})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	ws := want(rs, LostKeep, replay.RowFilter{})
	if len(lines) != len(ws) || res.LossRecords != 10 {
		t.Fatalf("%d lines, %d loss records; want %d, 10", len(lines), res.LossRecords, len(ws))
	}
	for i, w := range ws {
		d := json.NewDecoder(strings.NewReader(lines[i]))
		d.UseNumber()
		var obj map[string]any
		if err := d.Decode(&obj); err != nil {
			t.Fatalf("line %d %q: %v", i, lines[i], err)
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		wantKeys := "comm cpu lost pid probe tid time"
		switch {
		case w.lost == 0 && w.probe == 0:
			wantKeys = "a.s a.v comm cpu lost pid probe tid time"
		case w.lost == 0 && w.probe == 1:
			wantKeys = "b.v comm cpu lost pid probe tid time"
		}
		if strings.Join(keys, " ") != wantKeys {
			t.Fatalf("line %d keys %v, want %s", i, keys, wantKeys)
		}
		switch {
		case w.lost > 0:
			if obj["lost"].(json.Number).String() != strconv.FormatUint(w.lost, 10) {
				t.Fatalf("line %d: %s", i, lines[i])
			}
		case w.probe == 0:
			if obj["a.v"].(json.Number).String() != strconv.Itoa(int(int32(w.v))) || obj["a.s"] != w.s || obj["lost"] != nil {
				t.Fatalf("line %d: %s", i, lines[i])
			}
		case w.probe == 1:
			if obj["b.v"].(json.Number).String() != strconv.FormatUint(w.v, 10) {
				t.Fatalf("line %d: %s, want b.v %d", i, lines[i], w.v)
			}
		}
	}
}

// readParquet reads a Parquet file back with pqarrow.
func readParquet(t *testing.T, path string) arrow.Table {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pf.Close() })
	return readPQTable(t, pf)
}

func TestParquet(t *testing.T) {
	path, rs := capture(t)
	out := filepath.Join(t.TempDir(), "c.parquet")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	c := open(t, path)
	res, _, err := WriteParquet(c, f, Options{Format: Parquet, Lost: LostKeep})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	tbl := readParquet(t, out)
	ws := want(rs, LostKeep, replay.RowFilter{})
	if tbl.NumRows() != int64(len(ws)) || res.Events != 990 {
		t.Fatalf("%d rows, want %d", tbl.NumRows(), len(ws))
	}
	s := tbl.Schema()
	types := map[string]string{}
	for _, f := range s.Fields() {
		types[f.Name] = f.Type.String()
	}
	wantTypes := map[string]string{"time": "int64", "cpu": "uint16", "pid": "uint32", "tid": "uint32", "comm": "utf8",
		"probe": "dictionary<values=utf8, indices=int32, ordered=false>", "lost": "uint64", "a.v": "int32", "a.s": "utf8", "b.v": "uint64"}
	for n, w := range wantTypes {
		if types[n] != w {
			t.Errorf("column %s: %s, want %s", n, types[n], w)
		}
	}
	pf, err := file.OpenParquetFile(out, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	kv := pf.MetaData().KeyValueMetadata()
	cm := c.Schema().Metadata()
	if v := kv.FindValue(format.MetadataKey); v == nil || *v != cm.Values()[cm.FindKey(format.MetadataKey)] {
		t.Error("the capture's metadata is not kept under \"bpftape\"")
	}
	// Spot-check the uint64 column and the lost column.
	tr := array.NewTableReader(tbl, 0)
	defer tr.Release()
	i := 0
	for tr.Next() {
		rec := tr.Record()
		bv := rec.Column(s.FieldIndices("b.v")[0]).(*array.Uint64)
		lost := rec.Column(s.FieldIndices("lost")[0]).(*array.Uint64)
		for k := 0; k < int(rec.NumRows()); k, i = k+1, i+1 {
			w := ws[i]
			if w.lost > 0 != lost.IsValid(k) || (w.lost > 0 && lost.Value(k) != w.lost) {
				t.Fatalf("row %d: lost %v, want %d", i, lost.IsValid(k), w.lost)
			}
			if w.lost == 0 && w.probe == 1 && bv.Value(k) != w.v {
				t.Fatalf("row %d: b.v %d, want %d", i, bv.Value(k), w.v)
			}
		}
	}
}

// TestParquetLostColumn: every Parquet export has the lost column, so that
// one query runs on all of them: null on every row with --lost drop (no
// loss rows), set on the loss rows of --lost keep and only.
func TestParquetLostColumn(t *testing.T) {
	path, rs := capture(t)
	c := open(t, path)
	for _, mode := range []LostMode{LostDrop, LostKeep, LostOnly} {
		out := filepath.Join(t.TempDir(), "c.parquet")
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := WriteParquet(c, f, Options{Lost: mode}); err != nil {
			t.Fatal(err)
		}
		f.Close()
		tbl := readParquet(t, out)
		ws := want(rs, mode, replay.RowFilter{})
		losses := 0
		for _, w := range ws {
			if w.lost > 0 {
				losses++
			}
		}
		k := tbl.Schema().FieldIndices("lost")
		if len(k) != 1 || tbl.NumRows() != int64(len(ws)) {
			t.Errorf("%s: lost column at %v, %d rows, want %d", mode, k, tbl.NumRows(), len(ws))
			continue
		}
		if col := tbl.Column(k[0]); int(tbl.NumRows())-col.NullN() != losses {
			t.Errorf("%s: %d lost values set, want %d loss records", mode, int(tbl.NumRows())-col.NullN(), losses)
		}
	}
}

func TestPartitioned(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.arrow"), filepath.Join(dir, "b.arrow")
	rs := testRows()
	write(t, a, testMeta("h1"), rs)
	write(t, b, testMeta("h/2"), rs[:500])
	out := filepath.Join(dir, "fleet")
	// a twice: the second time from its first nanosecond on (the same
	// rows twice are refused: TestPartitionedManyProbes).
	for k, in := range []string{a, b, a} {
		o := Options{Format: Parquet}
		if k == 2 {
			o.Rows.From = time.Nanosecond
		}
		if _, _, err := WritePartitioned(open(t, in), out, o); err != nil {
			t.Fatal(err)
		}
	}
	var files []string
	filepath.Walk(out, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(out, p)
			files = append(files, rel)
		}
		return nil
	})
	sort.Strings(files)
	wantFiles := []string{
		"host=h%2F2/probe=a/part-0.parquet", "host=h%2F2/probe=b/part-0.parquet", "host=h%2F2/probe=c%2Fd/part-0.parquet",
		"host=h1/probe=a/part-0.parquet", "host=h1/probe=a/part-1.parquet", "host=h1/probe=b/part-0.parquet",
		"host=h1/probe=b/part-1.parquet", "host=h1/probe=c%2Fd/part-0.parquet", "host=h1/probe=c%2Fd/part-1.parquet",
	}
	if strings.Join(files, "\n") != strings.Join(wantFiles, "\n") {
		t.Fatalf("files:\n%s\nwant:\n%s", strings.Join(files, "\n"), strings.Join(wantFiles, "\n"))
	}
	tbl := readParquet(t, filepath.Join(out, "host=h1/probe=a/part-0.parquet"))
	var names []string
	for _, f := range tbl.Schema().Fields() {
		names = append(names, f.Name)
	}
	nA := 0
	for _, r := range rs {
		if r.probe == 0 && r.lost == 0 {
			nA++
		}
	}
	// --lost drop: no loss rows, but the lost column, all null, that a
	// query over the folder names (WHERE lost IS NULL).
	if strings.Join(names, ",") != "time,cpu,pid,tid,comm,lost,a.v,a.s" || tbl.NumRows() != int64(nA) {
		t.Errorf("probe a part: columns %v, %d rows", names, tbl.NumRows())
	}
	if k := tbl.Schema().FieldIndices("lost"); len(k) == 1 {
		if col := tbl.Column(k[0]); col.DataType().String() != "uint64" || int64(col.NullN()) != tbl.NumRows() {
			t.Errorf("lost column of a --lost drop part: %s, %d nulls in %d rows", col.DataType(), col.NullN(), tbl.NumRows())
		}
	}

	// A merged capture: hosts from its host column, loss records under Hive's null.
	m := filepath.Join(dir, "m.arrow")
	if _, err := format.Merge(m, []string{a, b}, format.MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	out2 := filepath.Join(dir, "merged")
	res, _, err := WritePartitioned(open(t, m), out2, Options{Format: Parquet, Lost: LostKeep})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(res.Files)
	for _, f := range res.Files {
		rel, _ := filepath.Rel(out2, f)
		if !strings.HasPrefix(rel, "host=h1/") && !strings.HasPrefix(rel, "host=h%2F2/") && !strings.HasPrefix(rel, "host="+HiveNull+"/") {
			t.Errorf("unexpected file %s", rel)
		}
	}
	tbl = readParquet(t, filepath.Join(out2, "host="+HiveNull+"/probe=a/part-0.parquet"))
	if tbl.NumRows() == 0 || tbl.Schema().FieldIndices("host") != nil {
		t.Errorf("loss records of a merged capture: %d rows, columns %v", tbl.NumRows(), tbl.Schema())
	}
}

func TestParse(t *testing.T) {
	if f, err := ParseFormat("json"); f != JSONL || err != nil {
		t.Error(f, err)
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Error("xml accepted")
	}
	if m, err := ParseLostMode(""); m != LostDrop || err != nil {
		t.Error(m, err)
	}
	if got := hiveEscape("a b/c=d%é"); got != "a b%2Fc%3Dd%25%C3%A9" {
		t.Errorf("hiveEscape: %q", got)
	}
}

// TestPartitionedBounded exports captures of thousands of hosts: at most
// MaxOpenParts part files are open at once (one open writer per host took
// 645 MB for 3,000 forged hosts), and every row lands in its partition's
// one part file, also when the hosts come round-robin.
func TestPartitionedBounded(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "many.arrow")
	if err := hostile.Named("many-hosts").Write(in); err != nil {
		t.Fatal(err)
	}
	res, _, err := WritePartitioned(open(t, in), filepath.Join(dir, "many"), Options{Format: Parquet})
	if err != nil {
		t.Fatal(err)
	}
	if res.OpenParts > MaxOpenParts || res.OpenParts == 0 || len(res.Files) != 2000 || res.Events != 2000 {
		t.Errorf("%d events in %d files, %d open at once (at most %d)", res.Events, len(res.Files), res.OpenParts, MaxOpenParts)
	}

	// 100 hosts, round-robin, 3 rounds: 2 passes, one part file per host.
	rr := filepath.Join(dir, "rr.arrow")
	m := testMeta("h")
	m.Probes = m.Probes[:1]
	m.Probes[0].Fields = append(m.Probes[0].Fields, format.Field{Name: "host", Type: format.String})
	m.Inputs = []format.Meta{{Host: "h0"}, {Host: "h1"}} // merged: the host field is the merge's
	w, err := format.Create(rr, m, format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nf := len(m.Probes[0].Fields)
	for round := 0; round < 3; round++ {
		for h := 0; h < 100; h++ {
			e := &format.Event{Time: int64(1e9 + round*1000 + h), PID: 1, TID: 1, Comm: []byte("c"),
				Ints: make([]uint64, nf), Strs: make([][]byte, nf)}
			e.Strs[nf-1] = []byte("host-" + strconv.Itoa(h))
			if err := w.Append(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	res, _, err = WritePartitioned(open(t, rr), filepath.Join(dir, "rr"), Options{Format: Parquet})
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, f := range res.Files {
		pf, err := file.OpenParquetFile(f, false)
		if err != nil {
			t.Fatal(err)
		}
		if pf.NumRows() != 3 {
			t.Errorf("%s: %d rows, want 3", f, pf.NumRows())
		}
		rows += pf.NumRows()
		pf.Close()
	}
	if rows != 300 || res.OpenParts > MaxOpenParts || len(res.Files) != 100 {
		t.Errorf("round-robin: %d rows in %d files, %d open at once", rows, len(res.Files), res.OpenParts)
	}
}
