package export

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/metadata"

	"github.com/bpftape/bpftape/format"
)

// TestParquetDictionaryColumns: the probe and comm columns, which the
// writer hands Arrow's column writers as a dictionary and indices, read
// back row for row over several row groups, and each row group's
// statistics are exactly those of its rows. The comms include two that are
// not valid UTF-8 and read the same once fixed (one dictionary value), an
// empty one, and one only in the last row group; one probe is never used
// and another only in the first row group.
func TestParquetDictionaryColumns(t *testing.T) {
	comms := []string{"qemu-system-x86", "CPU 0/KVM", "", "bad\xffone", "bad\xfeone", "vhost-4242"}
	m := &format.Meta{Host: "h", Kernel: "6.1", StartBoot: base, Probes: []format.Probe{
		{Name: "rx", Kind: "uprobe"}, {Name: "never", Kind: "uprobe"}, {Name: "early", Kind: "uprobe"}, {Name: "tx", Kind: "uprobe"},
	}}
	n := RowGroupRows*2 + 1000
	type ev struct {
		probe uint16
		comm  string
	}
	evs := make([]ev, n)
	for i := range evs {
		e := ev{probe: []uint16{0, 3}[i%7%2], comm: comms[(i/5)%5]}
		if i < 1000 && i%3 == 0 {
			e.probe = 2
		}
		if i >= n-100 {
			e.comm = comms[5]
		}
		evs[i] = e
	}
	in := filepath.Join(t.TempDir(), "c.arrow")
	w, err := format.Create(in, m, format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range evs {
		if err := w.Append(&format.Event{Time: base + int64(i), PID: 1, TID: 1, Probe: e.probe, Comm: []byte(e.comm)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "c.parquet")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := WriteParquet(open(t, in), f, Options{Format: Parquet}); err != nil {
		t.Fatal(err)
	}
	f.Close()

	// Row for row, through pqarrow.
	fixed := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
	tbl := readParquet(t, out)
	if tbl.NumRows() != int64(n) {
		t.Fatalf("%d rows, want %d", tbl.NumRows(), n)
	}
	s := tbl.Schema()
	tr := array.NewTableReader(tbl, 0)
	defer tr.Release()
	i := 0
	for tr.Next() {
		rec := tr.Record()
		probe := rec.Column(s.FieldIndices("probe")[0]).(*array.Dictionary)
		probeNames := probe.Dictionary().(*array.String)
		comm := rec.Column(s.FieldIndices("comm")[0]).(*array.String)
		for k := 0; k < int(rec.NumRows()); k, i = k+1, i+1 {
			if got, want := probeNames.Value(probe.GetValueIndex(k)), m.Probes[evs[i].probe].Name; got != want {
				t.Fatalf("row %d: probe %q, want %q", i, got, want)
			}
			if got, want := comm.Value(k), fixed(evs[i].comm); got != want {
				t.Fatalf("row %d: comm %q, want %q", i, got, want)
			}
		}
	}

	// Each row group's statistics, against its rows.
	pf, err := file.OpenParquetFile(out, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if pf.NumRowGroups() != 3 {
		t.Fatalf("%d row groups, want 3", pf.NumRowGroups())
	}
	first := 0
	for g := 0; g < pf.NumRowGroups(); g++ {
		rg := pf.MetaData().RowGroup(g)
		rows := evs[first : first+int(rg.NumRows())]
		first += len(rows)
		for _, col := range []string{"probe", "comm"} {
			lo, hi := "", ""
			for j, e := range rows {
				v := fixed(e.comm)
				if col == "probe" {
					v = m.Probes[e.probe].Name
				}
				if j == 0 || v < lo {
					lo = v
				}
				if j == 0 || v > hi {
					hi = v
				}
			}
			cc, err := rg.ColumnChunk(pf.MetaData().Schema.ColumnIndexByName(col))
			if err != nil {
				t.Fatal(err)
			}
			st, err := cc.Statistics()
			if err != nil || st == nil || !st.HasMinMax() {
				t.Fatalf("row group %d, %s: no statistics (%v)", g, col, err)
			}
			bs := st.(*metadata.ByteArrayStatistics)
			if string(bs.Min()) != lo || string(bs.Max()) != hi || bs.NullCount() != 0 || bs.NumValues() != int64(len(rows)) {
				t.Errorf("row group %d, %s: min %q max %q nulls %d values %d, want %q %q 0 %d",
					g, col, bs.Min(), bs.Max(), bs.NullCount(), bs.NumValues(), lo, hi, len(rows))
			}
			dict := false
			for _, e := range cc.Encodings() {
				dict = dict || e == parquet.Encodings.RLEDict || e == parquet.Encodings.PlainDict
			}
			if !dict {
				t.Errorf("row group %d, %s: encodings %v, want a dictionary", g, col, cc.Encodings())
			}
		}
	}
}
