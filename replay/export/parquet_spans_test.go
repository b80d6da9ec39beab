package export

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/bpftape/bpftape/format"
)

// TestParquetSpans: an export without a row filter, which takes a stretch
// of events at a time, writes the bytes that the same export row by row
// writes (a capture made to hand its rows one by one, DecodeAll), with
// row groups that end inside a stretch, loss records kept and dropped,
// integer fields of every width, null and not, a string field, and stacks
// written as frames and as ids.
func TestParquetSpans(t *testing.T) {
	dir := t.TempDir()
	fields := filepath.Join(dir, "fields.arrow")
	m := &format.Meta{Host: "h1", Kernel: "6.1", StartBoot: base, Probes: []format.Probe{
		{Name: "narrow", Kind: "uprobe", Fields: []format.Field{
			{Name: "a", Type: format.Int8}, {Name: "b", Type: format.Uint8}, {Name: "c", Type: format.Int16}, {Name: "d", Type: format.Uint16}}},
		{Name: "wide", Kind: "uprobe", Fields: []format.Field{
			{Name: "e", Type: format.Int32}, {Name: "f", Type: format.Uint32}, {Name: "g", Type: format.Int64},
			{Name: "h", Type: format.Uint64}, {Name: "s", Type: format.String}}},
		{Name: "bare", Kind: "tracepoint"},
	}}
	w, err := format.Create(fields, m, format.WriterOptions{BatchRows: 50000})
	if err != nil {
		t.Fatal(err)
	}
	n := RowGroupRows*2 + 5000
	comms := []string{"qemu-system-x86", "vhost-4242", "CPU 0/KVM"}
	strs := []string{"", "short", "a string of more than twelve bytes", "bad\xffutf8"}
	for i := 0; i < n; i++ {
		if i%9973 == 5 {
			if err := w.Lost(uint16(i%3), 1, base+int64(i)*1000, uint64(i)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		v := uint64(int64(-i)) // negative in the signed types, large in the unsigned
		if i%2 == 0 {
			v = uint64(i) * 977
		}
		e := format.Event{Time: base + int64(i)*1000, CPU: uint16(i % 4), PID: uint32(100 + i%5), TID: uint32(1000 + i%7),
			Probe: uint16(i % 7 % 3), Comm: []byte(comms[i/11%3])}
		switch e.Probe {
		case 0:
			e.Ints, e.Strs = []uint64{v, v, v, v}, make([][]byte, 4)
		case 1:
			e.Ints, e.Strs = []uint64{v, v, v, v, 0}, [][]byte{nil, nil, nil, nil, []byte(strs[i/3%4])}
		}
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	stacks := filepath.Join(dir, "stacks.arrow")
	if err := synthStacks(stacks, RowGroupRows+3000); err != nil {
		t.Fatal(err)
	}

	for _, run := range []struct {
		name, path string
		o          Options
	}{
		{"fields", fields, Options{}},
		{"fields lost kept", fields, Options{Lost: LostKeep}},
		{"stacks", stacks, Options{}},
		{"stack ids", stacks, Options{StackIDs: true}},
	} {
		t.Run(run.name, func(t *testing.T) {
			export := func(rowByRow bool) ([]byte, *Result) {
				c := open(t, run.path)
				if rowByRow {
					c.DecodeAll()
				}
				var out bytes.Buffer
				res, _, err := WriteParquet(c, &out, run.o)
				if err != nil {
					t.Fatal(err)
				}
				return out.Bytes(), res
			}
			spans, res := export(false)
			rows, resRows := export(true)
			if !reflect.DeepEqual(res, resRows) {
				t.Errorf("by stretches %+v, row by row %+v", *res, *resRows)
			}
			if !bytes.Equal(spans, rows) {
				t.Fatalf("by stretches: %d bytes; row by row: %d bytes, not the same", len(spans), len(rows))
			}
			out := filepath.Join(t.TempDir(), "x.parquet")
			if err := os.WriteFile(out, spans, 0o600); err != nil {
				t.Fatal(err)
			}
			tbl := readParquet(t, out)
			if want := int64(res.Events + res.LossRecords); tbl.NumRows() != want || res.Events < RowGroupRows {
				t.Errorf("%d rows read back, want %d (%d events)", tbl.NumRows(), want, res.Events)
			}
		})
	}
}
