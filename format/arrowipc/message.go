package arrowipc

// Checking the messages of a file: Message, Schema and RecordBatch tables.

import (
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
)

// parseMessage checks a Message table and returns its header, header type
// and body length.
func parseMessage(meta []byte) (hdr fbTable, typ int, bodyLen int64, err error) {
	m, err := fbRoot(meta)
	if err != nil {
		return hdr, 0, 0, err
	}
	// MetadataVersion V4 (3) or V5 (4): what Arrow 1.0 and later write.
	if v, err := m.int(0, 2); err != nil || (v != 3 && v != 4) {
		return hdr, 0, 0, corruptf("message metadata version %d", v)
	}
	ht, err := m.int(1, 1)
	if err != nil {
		return hdr, 0, 0, err
	}
	typ = int(uint8(ht))
	hdr, ok, err := m.table(2)
	if err != nil {
		return hdr, 0, 0, err
	}
	if !ok || typ < msgSchema || typ > msgRecordBatch {
		return hdr, 0, 0, corruptf("message of type %d", typ)
	}
	if bodyLen, err = m.int(3, 8); err != nil {
		return hdr, 0, 0, err
	}
	if bodyLen < 0 {
		return hdr, 0, 0, corruptf("message body of %d bytes", bodyLen)
	}
	if _, err := readKeyValues(m, 4, false); err != nil {
		return hdr, 0, 0, err
	}
	return hdr, typ, bodyLen, nil
}

// layout is what the batches of a schema hold, one kind per column: a
// batch must list exactly the field nodes, buffers and variadic buffer
// counts its columns take.
type layout []byte

// Column layouts: an integer or dictionary indices (2 buffers), utf8 (3:
// validity, offsets, data), a view (2 and its variadic data buffers).
const (
	layInt  = 'i'
	layDict = 'd'
	layUtf8 = 's'
	layView = 'v'
)

// dictLayout is the layout of a dictionary batch: the values of the one
// dictionary column, utf8.
var dictLayout = layout{layUtf8}

// readKeyValues checks a [KeyValue] vector (key:string, value:string) and,
// with keep, returns it as metadata.
func readKeyValues(t fbTable, i int, keep bool) (arrow.Metadata, error) {
	start, n, err := t.vector(i, 4)
	if err != nil {
		return arrow.Metadata{}, err
	}
	if n > maxKeyValues {
		return arrow.Metadata{}, corruptf("%d metadata entries", n)
	}
	var keys, vals []string
	for j := 0; j < n; j++ {
		kv, err := t.elemTable(start, j)
		if err != nil {
			return arrow.Metadata{}, err
		}
		k, err := kv.str(0)
		if err != nil {
			return arrow.Metadata{}, err
		}
		v, err := kv.str(1)
		if err != nil {
			return arrow.Metadata{}, err
		}
		// A JSON value decodes into structures; bound how many.
		if n := strings.Count(v, "{"); n > maxMetaObjects {
			return arrow.Metadata{}, limitErr(fmt.Sprintf("metadata with %d JSON objects", n), int64(len(v)), maxMetaObjects)
		}
		if keep {
			keys, vals = append(keys, k), append(vals, v)
		}
	}
	if len(keys) == 0 {
		return arrow.Metadata{}, nil
	}
	return arrow.NewMetadata(keys, vals), nil
}

// readSchema checks a Schema table — endianness:short, fields:[Field],
// custom_metadata:[KeyValue], features:[long] — and returns it with its
// layout. Only the column types of a capture are accepted, without
// children: integers, utf8 (as dictionary values), string and binary views,
// and at most one dictionary-encoded column.
func readSchema(s fbTable) (*arrow.Schema, layout, error) {
	if e, err := s.int(0, 2); err != nil || e != 0 {
		return nil, nil, corruptf("schema is not little-endian")
	}
	start, n, err := s.vector(1, 4)
	if err != nil {
		return nil, nil, err
	}
	if n == 0 || n > maxColumns {
		return nil, nil, corruptf("%d columns", n)
	}
	lay := make(layout, n)
	fields := make([]arrow.Field, n)
	dicts := 0
	for j := 0; j < n; j++ {
		f, err := s.elemTable(start, j)
		if err != nil {
			return nil, nil, err
		}
		if fields[j], lay[j], err = readField(f); err != nil {
			return nil, nil, fmt.Errorf("column %d: %w", j, err)
		}
		if lay[j] == layDict {
			if dicts++; dicts > 1 {
				return nil, nil, corruptf("more than one dictionary column")
			}
		}
	}
	md, err := readKeyValues(s, 2, true)
	if err != nil {
		return nil, nil, err
	}
	if _, _, err = s.vector(3, 8); err != nil {
		return nil, nil, err
	}
	return arrow.NewSchema(fields, &md), lay, nil
}

// readField checks a Field table — name:string, nullable:bool,
// type_type:ubyte, type:union, dictionary:DictionaryEncoding,
// children:[Field], custom_metadata:[KeyValue] — and returns it with its
// column's layout.
func readField(f fbTable) (arrow.Field, byte, error) {
	var fd arrow.Field
	var err error
	if fd.Name, err = f.str(0); err != nil {
		return fd, 0, err
	}
	nullable, err := f.int(1, 1)
	if err != nil {
		return fd, 0, err
	}
	fd.Nullable = nullable != 0
	tag, err := f.int(2, 1)
	if err != nil {
		return fd, 0, err
	}
	typ, ok, err := f.table(3)
	if err != nil {
		return fd, 0, err
	}
	if !ok {
		return fd, 0, corruptf("column without a type")
	}
	var kind byte
	switch uint8(tag) {
	case typeInt:
		if fd.Type, err = readInt(typ); err != nil {
			return fd, 0, err
		}
		kind = layInt
	case typeUtf8:
		fd.Type, kind = arrow.BinaryTypes.String, layUtf8
	case typeUtf8View:
		fd.Type, kind = arrow.BinaryTypes.StringView, layView
	case typeBinaryView:
		fd.Type, kind = arrow.BinaryTypes.BinaryView, layView
	default:
		return fd, 0, corruptf("column type %d is not one of a capture's", uint8(tag))
	}
	// DictionaryEncoding: id:long, indexType:Int, isOrdered:bool,
	// dictionaryKind:short. The column holds the indices; the one
	// dictionary holds utf8 values (dictLayout).
	if d, ok, err := f.table(4); err != nil {
		return fd, 0, err
	} else if ok {
		if kind != layUtf8 {
			return fd, 0, corruptf("dictionary of type %d values", uint8(tag))
		}
		dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: fd.Type}
		it, ok, err := d.table(1)
		if err != nil {
			return fd, 0, err
		}
		if ok {
			if dt.IndexType, err = readInt(it); err != nil {
				return fd, 0, err
			}
		}
		ordered, err := d.int(2, 1)
		if err != nil {
			return fd, 0, err
		}
		dt.Ordered = ordered != 0
		fd.Type, kind = dt, layDict
	}
	if _, n, err := f.vector(5, 4); err != nil {
		return fd, 0, err
	} else if n != 0 {
		return fd, 0, corruptf("column with %d children", n)
	}
	if fd.Metadata, err = readKeyValues(f, 6, true); err != nil {
		return fd, 0, err
	}
	return fd, kind, nil
}

// readInt checks an Int table (bitWidth:int, is_signed:bool) and returns
// its type.
func readInt(t fbTable) (arrow.DataType, error) {
	w, err := t.int(0, 4)
	if err != nil {
		return nil, err
	}
	signed, err := t.int(1, 1)
	if err != nil {
		return nil, err
	}
	types := map[int64][2]arrow.DataType{
		8:  {arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Int8},
		16: {arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Int16},
		32: {arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Int32},
		64: {arrow.PrimitiveTypes.Uint64, arrow.PrimitiveTypes.Int64},
	}
	ts, ok := types[w]
	if !ok {
		return nil, corruptf("integer of %d bits", w)
	}
	if signed != 0 {
		return ts[1], nil
	}
	return ts[0], nil
}

// batchShape is a checked RecordBatch table: where its field nodes and
// buffers are, and each column's first buffer.
type batchShape struct {
	msg       []byte
	rows      int
	nodeStart int    // field nodes: 16 bytes each
	bufStart  int    // buffers: 16 bytes each, every one inside the body
	nbuf      int    // buffers
	firstBuf  []int  // per column: the index of its first (validity) buffer, then nbuf
	codec     int64  // -1 none, 0 lz4 frame, 1 zstd
	body      int64  // file offset of the body
	gen       uint64 // tells the buffers decoded for this batch from others
	raw       int64  // bytes of the buffers decoded so far, decompressed
}

// parseBatch checks RecordBatch table t — length:long, nodes:[FieldNode],
// buffers:[Buffer], compression:BodyCompression, variadicBufferCounts:[long]
// — against its layout and its body of bodyLen bytes at file offset body:
// a field node per column, each within the batch's rows (exactly its rows
// with sameLen), as many buffers and variadic counts as the columns take,
// every buffer inside the body, a known compression. The buffers themselves
// are checked as they are decoded. It reuses d's slices.
func (d *batchShape) parse(t fbTable, body, bodyLen int64, lay layout, sameLen bool) error {
	d.rows, d.msg, d.body, d.nbuf = 0, t.b, body, 0
	d.firstBuf = d.firstBuf[:0]
	if bodyLen > MaxBatchBytes {
		return limitErr("a batch body", bodyLen, MaxBatchBytes)
	}
	rows, err := t.int(0, 8)
	if err != nil {
		return err
	}
	if rows < 0 || rows > MaxBatchBytes {
		return corruptf("batch of %d rows", rows)
	}
	start, n, err := t.vector(1, 16)
	if err != nil {
		return err
	}
	if n != len(lay) {
		return corruptf("batch with %d field nodes for %d columns", n, len(lay))
	}
	for j := 0; j < n; j++ {
		length, nulls := i64At(t.b, start+16*j), i64At(t.b, start+16*j+8)
		if length < 0 || length > rows || nulls < 0 || nulls > length {
			return corruptf("field node %d: %d rows, %d nulls in a batch of %d rows", j, length, nulls, rows)
		}
		if sameLen && length != rows {
			return fmt.Errorf("columns of unequal length")
		}
	}
	bstart, nbuf, err := t.vector(2, 16)
	if err != nil {
		return err
	}
	if nbuf > maxBuffers {
		return corruptf("batch with %d buffers", nbuf)
	}
	vstart, nv, err := t.vector(4, 8)
	if err != nil {
		return err
	}
	need, views := 0, 0
	for _, k := range lay {
		d.firstBuf = append(d.firstBuf, need)
		switch k {
		case layInt, layDict:
			need += 2
		case layUtf8:
			need += 3
		case layView:
			if views >= nv {
				return corruptf("batch with %d variadic buffer counts for more view columns", nv)
			}
			c := i64At(t.b, vstart+8*views)
			if c < 0 || c > int64(nbuf) {
				return corruptf("variadic buffer count %d of a batch with %d buffers", c, nbuf)
			}
			need += 2 + int(c)
			views++
		}
	}
	if views != nv || need != nbuf {
		return corruptf("batch with %d buffers and %d variadic counts, its columns take %d and %d", nbuf, nv, need, views)
	}
	d.firstBuf = append(d.firstBuf, nbuf)
	d.codec = -1
	if c, ok, err := t.table(3); err != nil {
		return err
	} else if ok {
		// BodyCompression: codec:byte (0 LZ4_FRAME, 1 ZSTD), method:byte (0 BUFFER).
		codec, err := c.int(0, 1)
		if err != nil {
			return err
		}
		method, err := c.int(1, 1)
		if err != nil {
			return err
		}
		if (codec != 0 && codec != 1) || method != 0 {
			return corruptf("body compression codec %d method %d", codec, method)
		}
		d.codec = codec
	}
	for j := 0; j < nbuf; j++ {
		off, length := i64At(t.b, bstart+16*j), i64At(t.b, bstart+16*j+8)
		if off < 0 || length < 0 || off > bodyLen || length > bodyLen-off {
			return corruptf("buffer %d at %d+%d outside a body of %d bytes", j, off, length, bodyLen)
		}
	}
	d.rows, d.nodeStart, d.bufStart, d.nbuf = int(rows), start, bstart, nbuf
	return nil
}

// buffer returns where buffer j is in the body.
func (d *batchShape) buffer(j int) (off, length int64) {
	return i64At(d.msg, d.bufStart+16*j), i64At(d.msg, d.bufStart+16*j+8)
}

// node returns the length and null count of column ci's field node.
func (d *batchShape) node(ci int) (length, nulls int64) {
	return i64At(d.msg, d.nodeStart+16*ci), i64At(d.msg, d.nodeStart+16*ci+8)
}
