package export

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
	"github.com/apache/arrow/go/v15/parquet/schema"
)

// pagesColumn is a column of the pqFile test: its schema and how to fill
// a row group of it.
type pagesColumn struct {
	name     string
	dt       arrow.DataType
	nullable bool
	kind     pqKind
	fill     func(r *rand.Rand, c *pqColumn, n int)
}

// pagesColumns are columns of every kind pqFile writes, with values at the
// edges of their encodings: times whose deltas wrap, unsigned values
// past the signed types' range (their statistics compare unsigned), nulls
// in runs, alone and everywhere, dictionaries of one value and of more
// than 256, empty and repeated strings.
func pagesColumns() []pagesColumn {
	ints32 := func(gen func(r *rand.Rand, i int) uint32) func(*rand.Rand, *pqColumn, int) {
		return func(r *rand.Rand, c *pqColumn, n int) {
			for i := range n {
				c.int(uint64(gen(r, i)))
			}
		}
	}
	nullable := func(null func(r *rand.Rand, i int) bool, gen func(r *rand.Rand, i int) uint64) func(*rand.Rand, *pqColumn, int) {
		return func(r *rand.Rand, c *pqColumn, n int) {
			for i := range n {
				if null(r, i) {
					c.null()
				} else {
					c.int(gen(r, i))
				}
			}
		}
	}
	strs := func(null func(r *rand.Rand, i int) bool, gen func(r *rand.Rand, i int) string) func(*rand.Rand, *pqColumn, int) {
		return func(r *rand.Rand, c *pqColumn, n int) {
			for i := range n {
				if null(r, i) {
					c.null()
				} else {
					c.str(gen(r, i))
				}
			}
		}
	}
	never := func(*rand.Rand, int) bool { return false }
	return []pagesColumn{
		{name: "time", dt: arrow.PrimitiveTypes.Int64, kind: pqTime, fill: func(r *rand.Rand, c *pqColumn, n int) {
			t := int64(1e12)
			for i := range n {
				switch x := r.Intn(100); {
				case x == 0:
					t = math.MinInt64 + int64(r.Intn(3))
				case x == 1:
					t = math.MaxInt64 - int64(r.Intn(3))
				case x < 5:
					t -= int64(r.Intn(1 << 20))
				case x < 10: // the same time
				default:
					t += int64(r.ExpFloat64() * float64(int64(1)<<(i%40)))
				}
				c.i64 = append(c.i64, t)
			}
		}},
		{name: "cpu", dt: arrow.PrimitiveTypes.Uint16, kind: pqCPU, fill: ints32(func(r *rand.Rand, i int) uint32 { return uint32(i / 50 % 3) })},
		{name: "pid", dt: arrow.PrimitiveTypes.Uint32, kind: pqPID, fill: ints32(func(r *rand.Rand, i int) uint32 { return math.MaxUint32 - uint32(r.Intn(5)) })},
		{name: "tid", dt: arrow.PrimitiveTypes.Uint32, kind: pqTID, fill: ints32(func(r *rand.Rand, i int) uint32 { return uint32(r.Int63()) })},
		{name: "i8", dt: arrow.PrimitiveTypes.Int8, nullable: true, kind: pqInt, fill: nullable(
			func(r *rand.Rand, i int) bool { return r.Intn(3) == 0 },
			func(r *rand.Rand, i int) uint64 { return uint64(int64(int8(r.Intn(256)))) })},
		{name: "u64", dt: arrow.PrimitiveTypes.Uint64, nullable: true, kind: pqInt, fill: nullable(
			func(r *rand.Rand, i int) bool { return i/37%2 == 0 },
			func(r *rand.Rand, i int) uint64 { return 1<<63 + uint64(r.Intn(1000)) - 500 })},
		{name: "allnull", dt: arrow.PrimitiveTypes.Uint64, nullable: true, kind: pqLost, fill: nullable(
			func(*rand.Rand, int) bool { return true }, nil)},
		{name: "onenull", dt: arrow.PrimitiveTypes.Int64, nullable: true, kind: pqInt, fill: nullable(
			func(r *rand.Rand, i int) bool { return i == 1000 },
			func(r *rand.Rand, i int) uint64 { return uint64(-int64(i)) })},
		{name: "probe", dt: arrow.BinaryTypes.String, kind: pqProbe, fill: func(r *rand.Rand, c *pqColumn, n int) {
			for range n {
				c.probe(uint16(r.Intn(3)))
			}
		}},
		{name: "comm", dt: arrow.BinaryTypes.String, kind: pqComm, fill: func(r *rand.Rand, c *pqColumn, n int) {
			for i := range n {
				c.comm(fmt.Sprintf("worker-%d", i/1000+r.Intn(300)))
			}
		}},
		{name: "onecomm", dt: arrow.BinaryTypes.String, kind: pqComm, fill: func(r *rand.Rand, c *pqColumn, n int) {
			for range n {
				c.comm("only")
			}
		}},
		{name: "s", dt: arrow.BinaryTypes.String, nullable: true, kind: pqStr, fill: strs(
			func(r *rand.Rand, i int) bool { return r.Intn(4) == 0 },
			func(r *rand.Rand, i int) string {
				return []string{"", "a", "\xff not utf-8", strings.Repeat("long ", 20)}[r.Intn(4)]
			})},
		{name: "unique", dt: arrow.BinaryTypes.String, nullable: true, kind: pqStr, fill: strs(never,
			func(r *rand.Rand, i int) string { return fmt.Sprintf("row %d", i) })},
	}
}

// TestPQFile writes row groups of every kind of column with pqFile and
// with Arrow Go's column writers (file.Writer, WriteBatch), and reads both
// files back with Arrow Go's reader: the values and each column chunk's
// statistics (minimum, maximum, nulls, values) must be the same.
func TestPQFile(t *testing.T) {
	defs := pagesColumns()
	var nodes schema.FieldList
	cols := make([]*pqColumn, len(defs))
	for k, d := range defs {
		n, err := pqNode(d.name, d.dt, d.nullable)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
		cols[k] = &pqColumn{kind: d.kind, nullable: d.nullable, phys: n.PhysicalType(), slots: map[string]int32{},
			probes: []parquet.ByteArray{parquet.ByteArray("rx"), parquet.ByteArray("tx"), parquet.ByteArray("")}, probeIdx: make([]int32, 4)}
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, nodes, -1)
	if err != nil {
		t.Fatal(err)
	}
	for _, codec := range []compress.Compression{compress.Codecs.Zstd, compress.Codecs.Uncompressed} {
		props := parquet.NewWriterProperties(parquet.WithCompression(codec), parquet.WithCreatedBy("bpftape"),
			parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithDictionaryDefault(false),
			parquet.WithDictionaryPageSizeLimit(dictPageLimit),
			parquet.WithEncodingFor("time", parquet.Encodings.DeltaBinaryPacked))
		// Row groups of sizes at the encodings' edges: none, one row,
		// within a group of 8, a miniblock, a block.
		sizes := []int{0, 1, 7, 33, 129, 4099, 20000}
		var mine, theirs bytes.Buffer
		pf, err := newPQFile(&mine, root, props, nil, codec)
		if err != nil {
			t.Fatal(err)
		}
		fw := file.NewParquetWriter(&theirs, root, file.WithWriterProps(props))
		r := rand.New(rand.NewSource(1))
		for _, n := range sizes {
			for k, d := range defs {
				cols[k].reset()
				d.fill(r, cols[k], n)
			}
			rg := fw.AppendRowGroup()
			for _, c := range cols {
				cw, err := rg.NextColumn()
				if err != nil {
					t.Fatal(err)
				}
				if err := writeBatch(cw, c); err != nil {
					t.Fatal(err)
				}
				if err := cw.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if err := rg.Close(); err != nil {
				t.Fatal(err)
			}
			if err := pf.writeRowGroup(cols, n); err != nil {
				t.Fatal(err)
			}
		}
		if err := fw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := pf.close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes, Arrow Go's column writers %d", codec, mine.Len(), theirs.Len())
		comparePQ(t, codec.String(), mine.Bytes(), theirs.Bytes())
	}
}

// writeBatch writes c's rows with Arrow Go's column writer.
func writeBatch(cw file.ColumnChunkWriter, c *pqColumn) error {
	var defs []int16
	if c.nullable {
		defs = c.defs
	}
	var err error
	switch w := cw.(type) {
	case *file.Int32ColumnChunkWriter:
		_, err = w.WriteBatch(c.i32, defs, nil)
	case *file.Int64ColumnChunkWriter:
		_, err = w.WriteBatch(c.i64, defs, nil)
	case *file.ByteArrayColumnChunkWriter:
		vals := c.bytes
		if c.dictKind() {
			vals = nil
			for _, k := range c.idx {
				vals = append(vals, c.dict[k])
			}
		}
		_, err = w.WriteBatch(vals, defs, nil)
	default:
		err = fmt.Errorf("writer %T", cw)
	}
	return err
}

// comparePQ reads two Parquet files and fails the test where their values
// or column chunk statistics differ.
func comparePQ(t *testing.T, what string, mine, theirs []byte) {
	t.Helper()
	open := func(b []byte) *file.Reader {
		r, err := file.NewParquetReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return r
	}
	a, b := open(mine), open(theirs)
	if a.NumRowGroups() != b.NumRowGroups() || a.NumRows() != b.NumRows() {
		t.Fatalf("%s: %d row groups of %d rows, want %d of %d", what, a.NumRowGroups(), a.NumRows(), b.NumRowGroups(), b.NumRows())
	}
	for g := range a.NumRowGroups() {
		ra, rb := a.MetaData().RowGroup(g), b.MetaData().RowGroup(g)
		if ra.NumRows() != rb.NumRows() {
			t.Errorf("%s: row group %d: %d rows, want %d", what, g, ra.NumRows(), rb.NumRows())
		}
		for k := range ra.NumColumns() {
			ca, err := ra.ColumnChunk(k)
			if err != nil {
				t.Fatal(err)
			}
			cb, err := rb.ColumnChunk(k)
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%s: row group %d, column %s", what, g, ca.PathInSchema())
			if ca.NumValues() != cb.NumValues() {
				t.Errorf("%s: %d values, want %d", name, ca.NumValues(), cb.NumValues())
			}
			sa, erra := ca.Statistics()
			sb, errb := cb.Statistics()
			if erra != nil || errb != nil {
				t.Fatalf("%s: statistics: %v, %v", name, erra, errb)
			}
			if (sa == nil) != (sb == nil) {
				t.Errorf("%s: statistics %v, want %v", name, sa != nil, sb != nil)
				continue
			}
			if sa == nil {
				continue
			}
			if sa.HasMinMax() != sb.HasMinMax() || sa.NullCount() != sb.NullCount() || sa.HasNullCount() != sb.HasNullCount() ||
				sa.HasMinMax() && (!bytes.Equal(sa.EncodeMin(), sb.EncodeMin()) || !bytes.Equal(sa.EncodeMax(), sb.EncodeMax())) {
				t.Errorf("%s: statistics min %q max %q nulls %d (%v), want min %q max %q nulls %d (%v)", name,
					sa.EncodeMin(), sa.EncodeMax(), sa.NullCount(), sa.HasMinMax(), sb.EncodeMin(), sb.EncodeMax(), sb.NullCount(), sb.HasMinMax())
			}
		}
	}
	ta, tb := readPQTable(t, a), readPQTable(t, b)
	if !array.TableApproxEqual(ta, tb) {
		for k := range int(ta.NumCols()) {
			ca, cb := ta.Column(k).Data(), tb.Column(k).Data()
			if !array.ChunkedEqual(ca, cb) {
				t.Errorf("%s: column %s reads differently", what, ta.Schema().Field(k).Name)
			}
		}
		t.Fatalf("%s: the files read differently", what)
	}
}

func readPQTable(t *testing.T, r *file.Reader) arrow.Table {
	t.Helper()
	fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tbl.Release)
	return tbl
}

// TestAppendHybrid checks the run-length and bit-packed runs that
// appendHybrid writes, decoded by the test, on values of every width.
func TestAppendHybrid(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for _, width := range []int{1, 2, 5, 9, 17, 31} {
		for _, n := range []int{0, 1, 7, 8, 9, 63, 504, 505, 5000} {
			vals := make([]int32, n)
			v := int32(0)
			for i := range vals {
				if r.Intn(4) == 0 || i%100 > 80 {
					v = int32(r.Int63n(1 << width))
				}
				vals[i] = v
			}
			enc := appendHybrid(nil, vals, width)
			got, err := decodeHybrid(enc, width, n)
			if err != nil || fmt.Sprint(got) != fmt.Sprint(vals) {
				t.Fatalf("width %d, %d values: %v\n got  %v\n want %v", width, n, err, got, vals)
			}
		}
	}
}

// decodeHybrid reads n values of width bits from the hybrid encoding, as
// Parquet's encodings document says.
func decodeHybrid(b []byte, width, n int) ([]int32, error) {
	var out []int32
	for len(out) < n {
		h, k := uvarint(b)
		if k <= 0 {
			return out, fmt.Errorf("bad header at %d values", len(out))
		}
		b = b[k:]
		if h&1 == 0 { // RLE
			nb := (width + 7) / 8
			var v int32
			for i := range nb {
				v |= int32(b[i]) << (8 * i)
			}
			b = b[nb:]
			for range h >> 1 {
				out = append(out, v)
			}
			continue
		}
		count := int(h>>1) * 8
		if count > 8*hybridMaxGroups {
			return out, fmt.Errorf("%d values in one bit-packed run", count)
		}
		bitsAt := 0
		for range count {
			var v int32
			for j := range width {
				bit := b[(bitsAt+j)/8] >> ((bitsAt + j) % 8) & 1
				v |= int32(bit) << j
			}
			bitsAt += width
			out = append(out, v)
		}
		b = b[count*width/8:]
	}
	if len(b) != 0 {
		return out, fmt.Errorf("%d bytes left over", len(b))
	}
	return out[:n], nil
}

func uvarint(b []byte) (uint64, int) {
	var v uint64
	for i, c := range b {
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}
