package arrowipc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/pierrec/lz4/v4"

	"github.com/bpftape/bpftape/format/internal/zstdframe"
)

var probeType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Uint16, ValueType: arrow.BinaryTypes.String}

var testDict = []string{"rx", "rx_ret", "tx_ret", "a probe with a rather long name", ""}

// testSchema has every column type the writer supports, in the order of a
// bpftape capture's fixed columns followed by field columns.
func testSchema() *arrow.Schema {
	md := arrow.NewMetadata([]string{"bpftape", "other"}, []string{`{"schema_version":1,"probes":["rx"]}`, "x"})
	return arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: arrow.PrimitiveTypes.Int64},
		{Name: "cpu", Type: arrow.PrimitiveTypes.Uint16},
		{Name: "pid", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "tid", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "comm", Type: arrow.BinaryTypes.StringView},
		{Name: "probe", Type: probeType},
		{Name: "lost", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
		{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
		{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true,
			Metadata: arrow.NewMetadata([]string{"unit"}, []string{"bytes"})},
		{Name: "s", Type: arrow.BinaryTypes.StringView, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.BinaryView, Nullable: true},
	}, &md)
}

// model is the logical content of one column of a batch.
type model struct {
	valid []bool // nil: no nulls
	ints  []uint64
	strs  []string
}

type testBatch struct {
	rows int
	cols []model
	data []ColumnData
}

func isView(dt arrow.DataType) bool {
	return dt.ID() == arrow.STRING_VIEW || dt.ID() == arrow.BINARY_VIEW
}

func width(dt arrow.DataType) int {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		dt = d.IndexType
	}
	return dt.(arrow.FixedWidthDataType).BitWidth() / 8
}

var words = []string{"", "a", "qemu-system-x86", "CPU 0/KVM", "twelve bytes", "thirteen byte", "vhost-4242",
	"a much longer string that certainly does not fit in a view", "é ü 漢字 and more unicode text"}

// genBatch makes a random batch; incompressible adds random noise that
// neither codec can shrink.
func genBatch(rng *rand.Rand, schema *arrow.Schema, rows int, incompressible bool) *testBatch {
	b := &testBatch{rows: rows}
	for _, f := range schema.Fields() {
		var m model
		if f.Nullable && (rng.Intn(4) != 0 || f.Name == "lost") {
			m.valid = make([]bool, rows)
			p := rng.Intn(101)
			if f.Name == "lost" { // loss records are rare
				p = 5
			}
			for i := range m.valid {
				m.valid[i] = rng.Intn(100) < p
			}
		}
		if isView(f.Type) {
			m.strs = make([]string, rows)
			for i := range m.strs {
				if incompressible {
					n := rng.Intn(40)
					buf := make([]byte, n)
					for j := range buf {
						buf[j] = byte('a' + rng.Intn(26))
					}
					m.strs[i] = string(buf)
				} else {
					m.strs[i] = words[rng.Intn(len(words))]
				}
			}
		} else {
			m.ints = make([]uint64, rows)
			w := width(f.Type)
			for i := range m.ints {
				var v uint64
				switch {
				case f.Type.ID() == arrow.DICTIONARY:
					v = uint64(rng.Intn(len(testDict)))
				case f.Name == "lost":
					v = uint64(rng.Intn(1000))
				case incompressible:
					v = rng.Uint64()
				default:
					v = uint64(rng.Intn(3)) * uint64(rng.Intn(1<<uint(4*w)))
					if rng.Intn(2) == 0 {
						v = -v
					}
				}
				if w < 8 {
					v &= 1<<(8*w) - 1
				}
				m.ints[i] = v
			}
		}
		b.cols = append(b.cols, m)
	}
	b.encode(rng, schema)
	return b
}

func (m *model) isValid(i int) bool { return m.valid == nil || m.valid[i] }

// encode lays the model out as Arrow buffers, the way format's colBuf does,
// with long strings spread over several data buffers.
func (b *testBatch) encode(rng *rand.Rand, schema *arrow.Schema) {
	b.data = make([]ColumnData, len(b.cols))
	for ci, f := range schema.Fields() {
		m := &b.cols[ci]
		d := &b.data[ci]
		var valid []byte
		if m.valid != nil {
			valid = make([]byte, (b.rows+7)/8)
			for i, ok := range m.valid {
				if ok {
					valid[i/8] |= 1 << (i % 8)
				} else {
					d.NullCount++
				}
			}
		}
		if rng.Intn(2) == 0 || d.NullCount > 0 {
			d.Buffers = append(d.Buffers, valid)
		} else {
			d.Buffers = append(d.Buffers, nil)
		}
		if !isView(f.Type) {
			w := width(f.Type)
			var vals []byte
			for i, v := range m.ints {
				if !m.isValid(i) {
					v = uint64(rng.Intn(1 << 8)) // garbage under a null
					if f.Type.ID() == arrow.DICTIONARY {
						v = 0
					}
				}
				var x [8]byte
				binary.LittleEndian.PutUint64(x[:], v)
				vals = append(vals, x[:w]...)
			}
			vals = append(vals, make([]byte, rng.Intn(3)*w)...) // longer than needed
			d.Buffers = append(d.Buffers, vals)
			continue
		}
		nbuf := rng.Intn(4)
		data := make([][]byte, nbuf)
		views := make([]byte, 0, 16*b.rows)
		for i, s := range m.strs {
			var v [16]byte
			if m.isValid(i) {
				binary.LittleEndian.PutUint32(v[:], uint32(len(s)))
				if len(s) <= 12 || nbuf == 0 {
					if len(s) > 12 {
						s = s[:12]
						m.strs[i] = s
						binary.LittleEndian.PutUint32(v[:], 12)
					}
					copy(v[4:], s)
				} else {
					k := rng.Intn(nbuf)
					off := bytes.Index(data[k], []byte(s))
					if off < 0 || rng.Intn(2) == 0 {
						off = len(data[k])
						data[k] = append(data[k], s...)
					}
					copy(v[4:8], s)
					binary.LittleEndian.PutUint32(v[8:], uint32(k))
					binary.LittleEndian.PutUint32(v[12:], uint32(off))
				}
			}
			views = append(views, v[:]...)
		}
		d.Buffers = append(d.Buffers, views)
		d.Buffers = append(d.Buffers, data...)
	}
}

func intAt(a arrow.Array, i int) uint64 {
	switch a := a.(type) {
	case *array.Int8:
		return uint64(uint8(a.Value(i)))
	case *array.Int16:
		return uint64(uint16(a.Value(i)))
	case *array.Int32:
		return uint64(uint32(a.Value(i)))
	case *array.Int64:
		return uint64(a.Value(i))
	case *array.Uint8:
		return uint64(a.Value(i))
	case *array.Uint16:
		return uint64(a.Value(i))
	case *array.Uint32:
		return uint64(a.Value(i))
	case *array.Uint64:
		return a.Value(i)
	}
	panic(fmt.Sprintf("not an integer array: %T", a))
}

// check compares a record read back with the batch's model, value by value.
func (b *testBatch) check(what string, schema *arrow.Schema, rec arrow.Record) error {
	if int(rec.NumRows()) != b.rows {
		return fmt.Errorf("%s: %d rows, want %d", what, rec.NumRows(), b.rows)
	}
	for ci, f := range schema.Fields() {
		m := &b.cols[ci]
		a := rec.Column(ci)
		if a.Len() != b.rows {
			return fmt.Errorf("%s: column %s: %d rows, want %d", what, f.Name, a.Len(), b.rows)
		}
		if a.NullN() != b.data[ci].NullCount {
			return fmt.Errorf("%s: column %s: %d nulls, want %d", what, f.Name, a.NullN(), b.data[ci].NullCount)
		}
		for i := 0; i < b.rows; i++ {
			if a.IsValid(i) != m.isValid(i) {
				return fmt.Errorf("%s: column %s row %d: valid %v, want %v", what, f.Name, i, a.IsValid(i), m.isValid(i))
			}
			if !m.isValid(i) {
				continue
			}
			switch a := a.(type) {
			case *array.StringView:
				if a.Value(i) != m.strs[i] {
					return fmt.Errorf("%s: column %s row %d: %q, want %q", what, f.Name, i, a.Value(i), m.strs[i])
				}
			case *array.BinaryView:
				if string(a.Value(i)) != m.strs[i] {
					return fmt.Errorf("%s: column %s row %d: %q, want %q", what, f.Name, i, a.Value(i), m.strs[i])
				}
			case *array.Dictionary:
				got := a.Dictionary().(*array.String).Value(a.GetValueIndex(i))
				if want := testDict[m.ints[i]]; got != want {
					return fmt.Errorf("%s: column %s row %d: %q, want %q", what, f.Name, i, got, want)
				}
			default:
				if intAt(a, i) != m.ints[i] {
					return fmt.Errorf("%s: column %s row %d: %d, want %d", what, f.Name, i, intAt(a, i), m.ints[i])
				}
			}
		}
	}
	return nil
}

// writeFile writes batches with the given codec and returns the file and the
// end offset of every record batch message.
func writeFile(t testing.TB, schema *arrow.Schema, batches []*testBatch, codec Codec, opts ...Option) ([]byte, []int64) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, schema, testDict, codec, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var ends []int64
	for _, b := range batches {
		if err := w.WriteBatch(b.rows, b.data); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, int64(buf.Len()))
		if w.Size() != int64(buf.Len()) {
			t.Fatalf("Size %d, wrote %d", w.Size(), buf.Len())
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteBatch(0, nil); err == nil {
		t.Fatal("WriteBatch after Close did not fail")
	}
	return buf.Bytes(), ends
}

func testBatches(seed int64) []*testBatch {
	rng := rand.New(rand.NewSource(seed))
	schema := testSchema()
	var bs []*testBatch
	for _, rows := range []int{0, 1, 7, 8, 9, 100, 0, 1000, 20000, 3} {
		bs = append(bs, genBatch(rng, schema, rows, false))
	}
	bs = append(bs, genBatch(rng, schema, 5000, true), genBatch(rng, schema, 0, true))
	return append(bs, repeatingBatch(rng, schema, 20000), repeatingBatch(rng, schema, 300))
}

// repeatingBatch is a batch whose columns repeat, as one thread's calls
// and returns make them: each integer column constant (even columns) or
// alternating between two values (odd ones: the probe's), a nullable
// one valid every other row, every string one word. The writer stores
// what repeats every 64 bytes in zstdframe's frames (TestRepeatFrames).
func repeatingBatch(rng *rand.Rand, schema *arrow.Schema, rows int) *testBatch {
	b := genBatch(rng, schema, rows, false)
	for ci := range b.cols {
		m := &b.cols[ci]
		for i := range m.valid {
			m.valid[i] = i%2 == 0
		}
		for i := range m.ints {
			m.ints[i] = m.ints[i%(1+ci%2)]
		}
		for i := range m.strs {
			m.strs[i] = m.strs[0]
		}
	}
	b.encode(rng, schema)
	return b
}

// TestRepeatFrames checks that a zstd file holds the buffers of a
// repeating batch that repeat every 64 bytes as zstdframe writes them
// (klauspost's decoder reads them six times faster than klauspost's
// encoder's); TestRoundTrip and TestPolars read them back.
func TestRepeatFrames(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	schema := testSchema()
	b := repeatingBatch(rng, schema, 20000)
	file, _ := writeFile(t, schema, []*testBatch{b}, Zstd)
	found := 0
	for ci, f := range schema.Fields() {
		d := &b.data[ci]
		var bufs [][]byte
		if d.NullCount > 0 {
			bufs = append(bufs, d.Buffers[0][:(b.rows+7)/8])
		}
		if !isView(f.Type) {
			bufs = append(bufs, d.Buffers[1][:b.rows*width(f.Type)])
		}
		for _, buf := range bufs {
			frame, ok := zstdframe.AppendRepeat(nil, buf)
			if !ok {
				continue
			}
			if !bytes.Contains(file, frame) {
				t.Errorf("column %s: a buffer that repeats, not written as zstdframe's frame", f.Name)
			}
			found++
		}
	}
	// time, cpu, pid, tid and probe, the validity of each nullable
	// column, and the values of those without garbage under their nulls.
	if found < 15 {
		t.Errorf("%d buffers repeat: the batch does not test what it should", found)
	}
	readAll(t, "repeating", file, []*testBatch{b})
}

var codecs = []Codec{None, Zstd, LZ4}

func readAll(t *testing.T, what string, file []byte, batches []*testBatch) {
	t.Helper()
	schema := testSchema()
	fr, err := ipc.NewFileReader(bytes.NewReader(file), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		t.Fatalf("%s: file reader: %v", what, err)
	}
	if !fr.Schema().Equal(schema) || !fr.Schema().Metadata().Equal(schema.Metadata()) {
		t.Fatalf("%s: schema %v, want %v", what, fr.Schema(), schema)
	}
	if fr.NumRecords() != len(batches) {
		t.Fatalf("%s: %d records, want %d", what, fr.NumRecords(), len(batches))
	}
	for i, b := range batches {
		rec, err := fr.Record(i)
		if err != nil {
			t.Fatalf("%s: record %d: %v", what, i, err)
		}
		if err := b.check(fmt.Sprintf("%s file record %d", what, i), schema, rec); err != nil {
			t.Fatal(err)
		}
	}
	fr.Close()

	sr, err := ipc.NewReader(bytes.NewReader(file[8:]))
	if err != nil {
		t.Fatalf("%s: stream reader: %v", what, err)
	}
	if !sr.Schema().Equal(schema) {
		t.Fatalf("%s: stream schema %v", what, sr.Schema())
	}
	n := 0
	for sr.Next() {
		if n >= len(batches) {
			t.Fatalf("%s: stream has more than %d records", what, len(batches))
		}
		if err := batches[n].check(fmt.Sprintf("%s stream record %d", what, n), schema, sr.Record()); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if sr.Err() != nil || n != len(batches) {
		t.Fatalf("%s: stream: %d records, err %v", what, n, sr.Err())
	}
	sr.Release()
}

func TestRoundTrip(t *testing.T) {
	batches := testBatches(1)
	for _, codec := range codecs {
		file, _ := writeFile(t, testSchema(), batches, codec)
		t.Logf("%v: %d bytes", codec, len(file))
		readAll(t, codec.String(), file, batches)
	}
}

func TestNoBatches(t *testing.T) {
	for _, codec := range codecs {
		file, _ := writeFile(t, testSchema(), nil, codec)
		readAll(t, codec.String(), file, nil)
	}
}

// TestUncompressedMarker checks that buffers compression cannot shrink are
// stored with the -1 length prefix, and compressible ones are compressed.
func TestUncompressedMarker(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Uint64}}, nil)
	noise := make([]byte, 8*50000)
	rng.Read(noise)
	zero := make([]byte, 8*50000)
	for _, codec := range []Codec{Zstd, LZ4} {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, schema, nil, codec)
		if err != nil {
			t.Fatal(err)
		}
		for _, vals := range [][]byte{noise, zero, noise[:8]} {
			start := buf.Len()
			if err := w.WriteBatch(len(vals)/8, []ColumnData{{Buffers: [][]byte{nil, vals}}}); err != nil {
				t.Fatal(err)
			}
			msg := buf.Bytes()[start:]
			metaLen := int(binary.LittleEndian.Uint32(msg[4:]))
			body := msg[8+metaLen:]
			prefix := int64(binary.LittleEndian.Uint64(body))
			if compressible := &vals[0] == &zero[0]; compressible {
				if prefix != int64(len(vals)) || len(body) > len(vals)/10 {
					t.Errorf("%v: zeros: prefix %d, body %d bytes", codec, prefix, len(body))
				}
			} else if prefix != -1 || !bytes.Equal(body[8:8+len(vals)], vals) || len(body) != 8+len(vals) {
				t.Errorf("%v: noise of %d bytes: prefix %d, body %d bytes", codec, len(vals), prefix, len(body))
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		fr, err := ipc.NewFileReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		for i, vals := range [][]byte{noise, zero, noise[:8]} {
			rec, err := fr.Record(i)
			if err != nil {
				t.Fatal(err)
			}
			got := rec.Column(0).(*array.Uint64).Uint64Values()
			for j := range got {
				if got[j] != binary.LittleEndian.Uint64(vals[8*j:]) {
					t.Fatalf("%v: batch %d row %d differs", codec, i, j)
				}
			}
		}
		fr.Close()
	}
}

// TestLZ4Frame checks that the hand-made LZ4 frames are the very bytes
// pierrec/lz4's frame writer produces with the options Arrow Go uses.
func TestLZ4Frame(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	w := &Writer{}
	if _, ok := w.lz4Frame(nil, make([]byte, 15)); ok {
		t.Error("15 bytes: frame not longer")
	}
	for _, n := range []int{100, 65535, 65536, 65537, 200000, 1 << 20} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(rng.Intn(4)) // compressible, but not trivially
		}
		copy(src[n/2:], bytes.Repeat([]byte{0xAA}, n/4))
		got, ok := w.lz4Frame(nil, src)
		if !ok {
			t.Fatalf("%d bytes: not compressed", n)
		}
		var want bytes.Buffer
		zw := lz4.NewWriter(&want)
		zw.Apply(lz4.ChecksumOption(false), lz4.BlockSizeOption(lz4.Block64Kb))
		zw.Write(src)
		zw.Close()
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%d bytes: frame of %d bytes differs from pierrec's %d", n, len(got), want.Len())
		}
		back, err := io.ReadAll(lz4.NewReader(bytes.NewReader(got)))
		if err != nil || !bytes.Equal(back, src) {
			t.Errorf("%d bytes: decoding: %v", n, err)
		}
	}
}

// TestTruncated cuts a file everywhere: a stream reader from offset 8 must
// return exactly the batches that are complete before the cut.
func TestTruncated(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	schema := testSchema()
	var batches []*testBatch
	for _, rows := range []int{3, 0, 50, 1, 200} {
		batches = append(batches, genBatch(rng, schema, rows, false))
	}
	for _, codec := range codecs {
		file, ends := writeFile(t, schema, batches, codec)
		step := 1 // every cut without compression, every third with
		if codec != None {
			step = 3
		}
		if testing.Short() {
			step = 7
		}
		for cut := 0; cut < len(file); cut += step {
			complete := 0
			for complete < len(ends) && ends[complete] <= int64(cut) {
				complete++
			}
			n, err := readStream(schema, file[:cut], batches)
			if err != nil {
				t.Fatalf("%v: cut at %d: %v", codec, cut, err)
			}
			if n != complete {
				t.Fatalf("%v: cut at %d of %d: read %d batches, want %d", codec, cut, len(file), n, complete)
			}
		}
	}
}

// readStream reads the stream part of a (truncated) file and returns how
// many batches it read; an error is a wrong value or a panic, not the cut.
func readStream(schema *arrow.Schema, file []byte, batches []*testBatch) (n int, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	if len(file) < 8 {
		return 0, nil
	}
	sr, err := ipc.NewReader(bytes.NewReader(file[8:]))
	if err != nil {
		return 0, nil
	}
	defer sr.Release()
	for sr.Next() {
		if n >= len(batches) {
			return n, fmt.Errorf("more than %d batches", len(batches))
		}
		if err := batches[n].check(fmt.Sprint("batch ", n), schema, sr.Record()); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func TestBadInput(t *testing.T) {
	schema := testSchema()
	rng := rand.New(rand.NewSource(6))
	var buf bytes.Buffer
	w, err := NewWriter(&buf, schema, testDict, Zstd)
	if err != nil {
		t.Fatal(err)
	}
	good := genBatch(rng, schema, 10, false)
	size := buf.Len()
	try := func(what string, rows int, mutate func(d []ColumnData)) {
		d := append([]ColumnData(nil), good.data...)
		for i := range d {
			d[i].Buffers = append([][]byte(nil), d[i].Buffers...)
		}
		mutate(d)
		if err := w.WriteBatch(rows, d); err == nil {
			t.Errorf("%s: no error", what)
		} else {
			t.Logf("%s: %v", what, err)
		}
		if buf.Len() != size {
			t.Fatalf("%s: wrote %d bytes", what, buf.Len()-size)
		}
	}
	try("rows", -1, func(d []ColumnData) {})
	try("short values", 11, func(d []ColumnData) { d[0].Buffers[1] = d[0].Buffers[1][:80] })
	try("nulls in non-nullable", 10, func(d []ColumnData) { d[0].NullCount = 1; d[0].Buffers[0] = []byte{0, 0} })
	try("short validity", 10, func(d []ColumnData) { d[6].NullCount = 1; d[6].Buffers[0] = []byte{0} })
	try("buffers", 10, func(d []ColumnData) { d[1].Buffers = append(d[1].Buffers, nil) })
	try("dictionary index", 10, func(d []ColumnData) {
		d[5].Buffers[1] = append([]byte(nil), d[5].Buffers[1]...)
		d[5].Buffers[1][6] = byte(len(testDict))
	})
	if err := w.WriteBatch(good.rows, good.data[:len(good.data)-1]); err == nil {
		t.Error("short column list accepted")
	}
	if err := w.WriteBatch(good.rows, good.data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	readAll(t, "after bad input", buf.Bytes(), []*testBatch{good})

	for _, s := range []*arrow.Schema{
		arrow.NewSchema([]arrow.Field{{Name: "f", Type: arrow.PrimitiveTypes.Float64}}, nil),
		arrow.NewSchema([]arrow.Field{{Name: "a", Type: probeType}, {Name: "b", Type: probeType}}, nil),
		arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil),
	} {
		if _, err := NewWriter(io.Discard, s, nil, None); err == nil {
			t.Errorf("schema %v accepted", s)
		}
	}
	if _, err := NewWriter(io.Discard, schema, []string{"ok", "\xff"}, None); err == nil {
		t.Error("dictionary value that is not UTF-8 accepted")
	}
	if _, err := NewWriter(io.Discard, schema, nil, Codec(9)); err == nil {
		t.Error("unknown codec accepted")
	}
}

// TestNoAllocs checks that writing a batch allocates nothing once the
// writer's scratch buffers have grown.
func TestNoAllocs(t *testing.T) {
	if runtime.GOARCH == "wasm" {
		t.Skip()
	}
	rng := rand.New(rand.NewSource(7))
	schema := testSchema()
	b := genBatch(rng, schema, 4096, false)
	for _, codec := range codecs {
		w, err := NewWriter(io.Discard, schema, testDict, codec)
		if err != nil {
			t.Fatal(err)
		}
		// The footer's block list grows with the batches: give it room.
		w.recs = make([]block, 0, 1000)
		allocs := testing.AllocsPerRun(100, func() {
			if err := w.WriteBatch(b.rows, b.data); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per batch", codec, allocs)
		}
	}
}

// TestPolars reads the files with nodejs-polars (testdata/interop), if it is
// installed: run sh testdata/interop/install.sh first.
func TestPolars(t *testing.T) {
	root, _ := filepath.Abs("../..")
	script := filepath.Join(root, "testdata/interop/read.js")
	if _, err := os.Stat(filepath.Join(root, "testdata/interop/node_modules/nodejs-polars")); err != nil {
		t.Skip("nodejs-polars not installed (sh testdata/interop/install.sh)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node")
	}
	// nodejs-polars reads BinaryView columns but cannot convert their dtype
	// for JavaScript ("not yet implemented"): leave "bin" out.
	schema := dropColumn(testSchema(), "bin")
	type result struct {
		Rows     int                       `json:"rows"`
		Columns  []string                  `json:"columns"`
		Dtypes   map[string]string         `json:"dtypes"`
		PerProbe map[string]int            `json:"per_probe"`
		Hist     map[string]map[string]int `json:"hist"`
		Lost     int                       `json:"lost"`
	}
	for _, tc := range []struct {
		name    string
		batches []*testBatch
	}{{"batches", dropBatchColumn(testBatches(8), 16)}, {"empty", nil}} {
		// What read.js should print, from the model.
		var want result
		want.PerProbe, want.Hist = map[string]int{}, map[string]map[string]int{}
		for _, b := range tc.batches {
			want.Rows += b.rows
			lost, probe, u64 := &b.cols[6], &b.cols[5], &b.cols[14]
			for i := 0; i < b.rows; i++ {
				if lost.isValid(i) {
					want.Lost += int(lost.ints[i])
					continue
				}
				p := testDict[probe.ints[i]]
				want.PerProbe[p]++
				if u64.isValid(i) {
					slot := max(1, bits.Len64(u64.ints[i]))
					if want.Hist[p] == nil {
						want.Hist[p] = map[string]int{}
					}
					want.Hist[p][fmt.Sprint(slot)]++
				}
			}
		}
		for _, codec := range codecs {
			file, _ := writeFile(t, schema, tc.batches, codec)
			path := filepath.Join(t.TempDir(), "t.arrow")
			if err := os.WriteFile(path, file, 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("node", script, path, "u64").Output()
			if err != nil {
				if ee, ok := err.(*exec.ExitError); ok {
					err = fmt.Errorf("%v: %s", err, ee.Stderr)
				}
				t.Errorf("%s %v: read.js: %v", tc.name, codec, err)
				continue
			}
			var got result
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%s %v: %v: %s", tc.name, codec, err, out)
			}
			t.Logf("%s %v: %s", tc.name, codec, out)
			if got.Rows != want.Rows || got.Lost != want.Lost || fmt.Sprint(got.PerProbe) != fmt.Sprint(want.PerProbe) ||
				fmt.Sprint(got.Hist) != fmt.Sprint(want.Hist) || len(got.Columns) != schema.NumFields() {
				t.Errorf("%s %v: polars read\n%+v\nwant\n%+v", tc.name, codec, got, want)
			}
		}
	}
}

func dropColumn(s *arrow.Schema, name string) *arrow.Schema {
	var fs []arrow.Field
	for _, f := range s.Fields() {
		if f.Name != name {
			fs = append(fs, f)
		}
	}
	md := s.Metadata()
	return arrow.NewSchema(fs, &md)
}

func dropBatchColumn(bs []*testBatch, ci int) []*testBatch {
	for _, b := range bs {
		b.cols = append(b.cols[:ci:ci], b.cols[ci+1:]...)
		b.data = append(b.data[:ci:ci], b.data[ci+1:]...)
	}
	return bs
}

// polarsDump prints every column of an IPC file as JSON arrays, integers
// as decimal strings.
const polarsDump = `
const fs = require("node:fs");
const pl = require("nodejs-polars");
const df = pl.readIPC(fs.readFileSync(process.argv[1]));
const out = {};
for (const c of df.columns) {
  out[c] = df.getColumn(c).cast(pl.String).toArray().map(v => v === null || v === undefined ? null : String(v));
}
process.stdout.write(JSON.stringify(out));
`

// TestPolarsValues compares every value polars reads with the model.
func TestPolarsValues(t *testing.T) {
	dir, _ := filepath.Abs("../../testdata/interop")
	if _, err := os.Stat(filepath.Join(dir, "node_modules/nodejs-polars")); err != nil {
		t.Skip("nodejs-polars not installed (sh testdata/interop/install.sh)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node")
	}
	schema := dropColumn(testSchema(), "bin")
	rng := rand.New(rand.NewSource(9))
	var batches []*testBatch
	for _, rows := range []int{0, 5, 300, 0, 1000} {
		batches = append(batches, genBatch(rng, testSchema(), rows, rows == 300))
	}
	batches = dropBatchColumn(batches, 16)
	empty := 0 // empty string view data buffers, which polars once choked on
	for _, b := range batches {
		for ci, f := range schema.Fields() {
			if isView(f.Type) {
				for _, x := range b.data[ci].Buffers[2:] {
					if len(x) == 0 {
						empty++
					}
				}
			}
		}
	}
	if empty == 0 {
		t.Fatal("no empty string view data buffer in the test data")
	}
	for _, codec := range codecs {
		file, _ := writeFile(t, schema, batches, codec)
		path := filepath.Join(t.TempDir(), "t.arrow")
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("node", "-e", polarsDump, path)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				err = fmt.Errorf("%v: %s", err, ee.Stderr)
			}
			t.Errorf("%v: %v", codec, err)
			continue
		}
		var got map[string][]*string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		for ci, f := range schema.Fields() {
			var want []*string
			for _, b := range batches {
				m := &b.cols[ci]
				for i := 0; i < b.rows; i++ {
					if !m.isValid(i) {
						want = append(want, nil)
						continue
					}
					var s string
					switch {
					case m.strs != nil:
						s = m.strs[i]
					case f.Type.ID() == arrow.DICTIONARY:
						s = testDict[m.ints[i]]
					default:
						s = fmt.Sprint(m.ints[i])
						if w := width(f.Type); arrow.IsSignedInteger(f.Type.ID()) {
							s = fmt.Sprint(int64(m.ints[i]<<(64-8*w)) >> (64 - 8*w))
						}
					}
					want = append(want, &s)
				}
			}
			g := got[f.Name]
			if len(g) != len(want) {
				t.Fatalf("%v: column %s: %d values, want %d", codec, f.Name, len(g), len(want))
			}
			for i := range want {
				if (g[i] == nil) != (want[i] == nil) || (g[i] != nil && *g[i] != *want[i]) {
					t.Fatalf("%v: column %s row %d: %v, want %v", codec, f.Name, i, str(g[i]), str(want[i]))
				}
			}
		}
	}
}

func str(p *string) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *p)
}

// TestEmptyDictionaryData writes dictionaries whose data buffer is empty
// (no values, or only empty strings).
func TestEmptyDictionaryData(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "probe", Type: probeType},
		{Name: "lost", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	}, nil)
	for _, dict := range [][]string{nil, {""}, {"", ""}} {
		for _, codec := range codecs {
			var buf bytes.Buffer
			w, err := NewWriter(&buf, schema, dict, codec)
			if err != nil {
				t.Fatal(err)
			}
			rows := 0
			if len(dict) > 0 {
				rows = 3
			}
			idx := make([]byte, 2*rows)
			lost := make([]byte, 8*rows)
			valid := []byte{0}
			if err := w.WriteBatch(rows, []ColumnData{{Buffers: [][]byte{nil, idx}}, {Buffers: [][]byte{valid, lost}, NullCount: rows}}); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			fr, err := ipc.NewFileReader(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			rec, err := fr.Record(0)
			if err != nil {
				t.Fatalf("%v %q: %v", codec, dict, err)
			}
			d := rec.Column(0).(*array.Dictionary)
			if d.Len() != rows || d.Dictionary().Len() != len(dict) || rec.Column(1).NullN() != rows {
				t.Fatalf("%v %q: read %v", codec, dict, rec)
			}
			fr.Close()
			if out, err := readJS(t, buf.Bytes()); err != nil {
				t.Errorf("%v %q: polars: %v", codec, dict, err)
			} else if want := fmt.Sprintf(`"rows":%d`, rows); !bytes.Contains(out, []byte(want)) {
				t.Errorf("%v %q: polars: %s", codec, dict, out)
			}
		}
	}
}

// readJS runs testdata/interop/read.js on file, or skips the test when
// nodejs-polars is not installed.
func readJS(t *testing.T, file []byte) ([]byte, error) {
	t.Helper()
	root, _ := filepath.Abs("../..")
	if _, err := os.Stat(filepath.Join(root, "testdata/interop/node_modules/nodejs-polars")); err != nil {
		t.Skip("nodejs-polars not installed (sh testdata/interop/install.sh)")
	}
	path := filepath.Join(t.TempDir(), "t.arrow")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("node", filepath.Join(root, "testdata/interop/read.js"), path).Output()
	if ee, ok := err.(*exec.ExitError); ok {
		err = fmt.Errorf("%v: %s", err, ee.Stderr)
	}
	return out, err
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		n := f.n
		f.n = 0
		return n, errors.New("disk full")
	}
	f.n -= len(p)
	return len(p), nil
}

func TestWriteErrorSticks(t *testing.T) {
	schema := testSchema()
	b := genBatch(rand.New(rand.NewSource(10)), schema, 100, false)
	var ok bytes.Buffer
	w, _ := NewWriter(&ok, schema, testDict, Zstd)
	header := ok.Len()
	if _, err := NewWriter(&failWriter{n: header - 1}, schema, testDict, Zstd); err == nil {
		t.Fatal("NewWriter: no error")
	}
	w, err := NewWriter(&failWriter{n: header + 10}, schema, testDict, Zstd)
	if err != nil {
		t.Fatal(err)
	}
	err1 := w.WriteBatch(b.rows, b.data)
	err2 := w.WriteBatch(b.rows, b.data)
	err3 := w.Close()
	if err1 == nil || err2 != err1 || err3 != err1 {
		t.Fatalf("errors %v, %v, %v", err1, err2, err3)
	}
}
