package arrowipc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/bpftape/bpftape/format/internal/zstdframe"
	"github.com/bpftape/bpftape/internal/testutil"
	"github.com/klauspost/compress/zstd"
)

// The benchmark batches are what format.Writer builds for a realistic
// stream (the generator of format/bench_test.go): three probes of a
// virtio-net RX/TX path on a handful of threads, in bursts of packets whose
// sizes repeat, 64Ki rows per batch.

var benchComms = [][]byte{[]byte("qemu-system-x86"), []byte("CPU 0/KVM"), []byte("CPU 1/KVM"), []byte("vhost-4242")}

var benchDict = []string{"rx", "rx_ret", "tx_ret"}

func benchSchema() *arrow.Schema {
	md := arrow.NewMetadata([]string{"bpftape"}, []string{`{"schema_version":1,"tool":"bench"}`})
	return arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: arrow.PrimitiveTypes.Int64},
		{Name: "cpu", Type: arrow.PrimitiveTypes.Uint16},
		{Name: "pid", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "tid", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "comm", Type: arrow.BinaryTypes.StringView},
		{Name: "probe", Type: probeType},
		{Name: "lost", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "arg2", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "retval", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, &md)
}

// benchCol is a trimmed copy of format's colBuf.
type benchCol struct {
	width    int
	nullable bool
	data     []byte
	long     []byte
	valid    []byte
	nulls    int
}

func (c *benchCol) mark(i int, ok bool) {
	if !c.nullable {
		return
	}
	if i&7 == 0 {
		c.valid = append(c.valid, 0)
	}
	if ok {
		c.valid[i>>3] |= 1 << (i & 7)
	} else {
		c.nulls++
	}
}

func (c *benchCol) put(v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	c.data = append(c.data, b[:c.width]...)
}

// repeat appends the last value again, or zero.
func (c *benchCol) repeat() {
	if len(c.data) == 0 {
		c.put(0)
		return
	}
	c.data = append(c.data, c.data[len(c.data)-c.width:]...)
}

func (c *benchCol) putString(s []byte) {
	var v [16]byte
	binary.LittleEndian.PutUint32(v[0:], uint32(len(s)))
	if len(s) <= 12 {
		copy(v[4:], s)
	} else {
		copy(v[4:8], s)
		off := bytes.Index(c.long, s)
		if off < 0 {
			off = len(c.long)
			c.long = append(c.long, s...)
		}
		binary.LittleEndian.PutUint32(v[12:], uint32(off))
	}
	c.data = append(c.data, v[:]...)
}

type benchBatch struct {
	rows int
	cols []ColumnData
}

// realisticBatches generates n batches of rows events each.
func realisticBatches(n, rows int) []benchBatch {
	rng := rand.New(rand.NewSource(7))
	t := int64(1e9)
	burst, tid := 0, 0
	var size uint64
	var out []benchBatch
	for bi := 0; bi < n; bi++ {
		c := []benchCol{{width: 8}, {width: 2}, {width: 4}, {width: 4}, {width: 16}, {width: 2},
			{width: 8, nullable: true}, {width: 8, nullable: true}, {width: 8, nullable: true}}
		for i := 0; i < rows; i++ {
			if burst == 0 {
				burst = 1 + rng.Intn(64)
				t += 20_000 + rng.Int63n(500_000)
				tid = rng.Intn(len(benchComms))
				switch x := rng.Intn(10); {
				case x < 6:
					size = 1514
				case x < 8:
					size = 66
				case x < 9:
					size = 9014
				default:
					size = 64 + uint64(rng.Intn(16384))
				}
			}
			burst--
			t += 500 + rng.Int63n(3000)
			probe := rng.Intn(3)
			v := size
			if rng.Intn(20) == 0 {
				v = 64 + uint64(rng.Intn(1500))
			}
			if probe == 2 {
				v = uint64(1 + rng.Intn(3))
			}
			c[0].put(uint64(t))
			c[1].put(uint64(tid % 2))
			c[2].put(4242)
			c[3].put(uint64(4242 + tid))
			c[4].putString(benchComms[tid])
			c[5].put(uint64(probe))
			c[6].put(0)
			c[6].mark(i, false)
			// A null row holds the row before's value, as format writes it.
			if probe == 0 {
				c[7].put(v)
				c[7].mark(i, true)
				c[8].repeat()
				c[8].mark(i, false)
			} else {
				c[7].repeat()
				c[7].mark(i, false)
				c[8].put(v)
				c[8].mark(i, true)
			}
		}
		b := benchBatch{rows: rows}
		for i := range c {
			d := ColumnData{Buffers: [][]byte{c[i].valid, c[i].data}, NullCount: c[i].nulls}
			if c[i].long != nil {
				d.Buffers = append(d.Buffers, c[i].long)
			}
			b.cols = append(b.cols, d)
		}
		out = append(out, b)
	}
	return out
}

// countWriter discards what it is given and counts it; it is also the
// io.WriteSeeker Arrow's file writer wants.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

func (w *countWriter) Seek(off int64, whence int) (int64, error) {
	if off != 0 || whence != io.SeekCurrent {
		return 0, errors.New("append only")
	}
	return w.n, nil
}

// writeFunc writes batch b; close finishes the file.
type benchWriter interface {
	write(b *benchBatch) error
	close() error
}

type ourWriter struct{ w *Writer }

func (o ourWriter) write(b *benchBatch) error { return o.w.WriteBatch(b.rows, b.cols) }
func (o ourWriter) close() error              { return o.w.Close() }

// arrowWriter is what format.Writer does today: wrap the buffers as Arrow
// arrays and write them with Arrow Go's file writer.
type arrowWriter struct {
	schema *arrow.Schema
	dict   arrow.Array
	fw     *ipc.FileWriter
}

func newArrowWriter(out io.WriteSeeker, schema *arrow.Schema, codec Codec) (*arrowWriter, error) {
	db := array.NewStringBuilder(memory.DefaultAllocator)
	db.AppendValues(benchDict, nil)
	a := &arrowWriter{schema: schema, dict: db.NewArray()}
	opts := []ipc.Option{ipc.WithSchema(schema)}
	switch codec {
	case Zstd:
		opts = append(opts, ipc.WithZstd())
	case LZ4:
		opts = append(opts, ipc.WithLZ4())
	}
	var err error
	a.fw, err = ipc.NewFileWriter(out, opts...)
	return a, err
}

func (a *arrowWriter) write(b *benchBatch) error {
	arrs := make([]arrow.Array, len(b.cols))
	for i, f := range a.schema.Fields() {
		d := &b.cols[i]
		var validity *memory.Buffer
		if d.NullCount > 0 {
			validity = memory.NewBufferBytes(d.Buffers[0])
		}
		bufs := []*memory.Buffer{validity}
		for _, x := range d.Buffers[1:] {
			bufs = append(bufs, memory.NewBufferBytes(x))
		}
		dt := f.Type
		if dict, ok := dt.(*arrow.DictionaryType); ok {
			dt = dict.IndexType
		}
		data := array.NewData(dt, b.rows, bufs, nil, d.NullCount, 0)
		arrs[i] = array.MakeFromData(data)
		data.Release()
		if dict, ok := f.Type.(*arrow.DictionaryType); ok {
			idx := arrs[i]
			arrs[i] = array.NewDictionaryArray(dict, idx, a.dict)
			idx.Release()
		}
	}
	rec := array.NewRecord(a.schema, arrs, int64(b.rows))
	for _, x := range arrs {
		x.Release()
	}
	defer rec.Release()
	return a.fw.Write(rec)
}

func (a *arrowWriter) close() error { return a.fw.Close() }

// BenchmarkWrite writes realistic 64Ki-row batches with this package and
// with Arrow Go's ipc.FileWriter; it reports process CPU per event (encode,
// compress, write; appending the events is not included) and bytes per
// event.
//
//	go test -run '^$' -bench Write -benchtime 200x ./format/arrowipc/
func BenchmarkWrite(b *testing.B) {
	const rows = 64 << 10
	batches := realisticBatches(8, rows)
	schema := benchSchema()
	raw := 0
	for _, c := range batches[0].cols {
		for _, x := range c.Buffers {
			raw += len(x)
		}
	}
	type tc struct {
		name  string
		codec Codec
		opts  []Option
		arrow bool
	}
	cases := []tc{
		{"arrowipc/none", None, nil, false},
		{"arrowipc/lz4", LZ4, nil, false},
		{"arrowipc/zstd-fastest", Zstd, nil, false},
		{"arrowipc/zstd-fastest-nocrc", Zstd, []Option{withZstdOptions(zstd.WithEncoderCRC(false))}, false},
		{"arrowipc/zstd-fastest-fullmem", Zstd, []Option{withZstdOptions(zstd.WithLowerEncoderMem(false))}, false},
		{"arrowipc/zstd-default", Zstd, []Option{WithZstdLevel(zstd.SpeedDefault)}, false},
		{"arrowipc/zstd-default-time-fastest", Zstd, []Option{WithZstdLevel(zstd.SpeedDefault), WithColumnZstdLevel(0, zstd.SpeedFastest)}, false},
		// what format writes: the time column's frames by zstdframe.TimeEncoder
		{"arrowipc/zstd-default-time-zstdtime", Zstd, []Option{WithZstdLevel(zstd.SpeedDefault), WithColumnZstdEncoder(0, new(zstdframe.TimeEncoder).Encode)}, false},
		{"arrowipc/zstd-better", Zstd, []Option{WithZstdLevel(zstd.SpeedBetterCompression)}, false},
		{"arrowipc/zstd-best", Zstd, []Option{WithZstdLevel(zstd.SpeedBestCompression)}, false},
		{"arrow-go/none", None, nil, true},
		{"arrow-go/lz4", LZ4, nil, true},
		{"arrow-go/zstd", Zstd, nil, true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			out := &countWriter{}
			var w benchWriter
			if c.arrow {
				aw, err := newArrowWriter(out, schema, c.codec)
				if err != nil {
					b.Fatal(err)
				}
				w = aw
			} else {
				ow, err := NewWriter(out, schema, benchDict, c.codec, c.opts...)
				if err != nil {
					b.Fatal(err)
				}
				w = ourWriter{ow}
			}
			// Warm up: the first batches grow the scratch buffers.
			for i := 0; i < 2; i++ {
				if err := w.write(&batches[i]); err != nil {
					b.Fatal(err)
				}
			}
			n0 := out.n
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := testutil.CPUTime()
			for i := 0; i < b.N; i++ {
				if err := w.write(&batches[i%len(batches)]); err != nil {
					b.Fatal(err)
				}
			}
			cpu := testutil.CPUTime() - cpu0
			b.StopTimer()
			n1 := out.n
			if err := w.close(); err != nil {
				b.Fatal(err)
			}
			events := float64(b.N) * rows
			b.ReportMetric(float64(cpu.Nanoseconds())/events, "cpu-ns/event")
			b.ReportMetric(float64(n1-n0)/events, "bytes/event")
			b.ReportMetric(float64(raw)/rows, "raw-bytes/event")
		})
	}
}

// TestBenchBatchesRoundTrip makes sure the benchmark writes readable files.
func TestBenchBatchesRoundTrip(t *testing.T) {
	batches := realisticBatches(2, 1000)
	for _, codec := range codecs {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, benchSchema(), benchDict, codec)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		aw, err := newArrowWriter(&seekBuffer{&want}, benchSchema(), codec)
		if err != nil {
			t.Fatal(err)
		}
		for i := range batches {
			if err := w.WriteBatch(batches[i].rows, batches[i].cols); err != nil {
				t.Fatal(err)
			}
			if err := aw.write(&batches[i]); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		aw.close()
		ours, theirs := readRecords(t, buf.Bytes()), readRecords(t, want.Bytes())
		if len(ours) != len(theirs) {
			t.Fatalf("%v: %d records vs %d", codec, len(ours), len(theirs))
		}
		for i := range ours {
			if !array.RecordEqual(ours[i], theirs[i]) {
				t.Fatalf("%v: record %d differs from Arrow Go's", codec, i)
			}
		}
		t.Logf("%v: %d bytes, Arrow Go %d", codec, buf.Len(), want.Len())
	}
}

type seekBuffer struct{ *bytes.Buffer }

func (s *seekBuffer) Seek(off int64, whence int) (int64, error) {
	if off != 0 || whence != io.SeekCurrent {
		return 0, fmt.Errorf("append only")
	}
	return int64(s.Len()), nil
}

func readRecords(t *testing.T, file []byte) []arrow.Record {
	fr, err := ipc.NewFileReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	var recs []arrow.Record
	for i := 0; i < fr.NumRecords(); i++ {
		r, err := fr.Record(i)
		if err != nil {
			t.Fatal(err)
		}
		r.Retain()
		recs = append(recs, r)
	}
	return recs
}
