package arrowipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/apache/arrow/go/v15/arrow"
	flatbuffers "github.com/google/flatbuffers/go"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/bpftape/bpftape/format/internal/zstdframe"
)

// Codec is the body compression of record and dictionary batches.
type Codec uint8

// Codecs.
const (
	None Codec = iota
	Zstd
	LZ4 // LZ4 frame format, 64 KiB independent blocks, no checksums
)

func (c Codec) String() string {
	switch c {
	case None:
		return "none"
	case Zstd:
		return "zstd"
	case LZ4:
		return "lz4"
	}
	return fmt.Sprintf("Codec(%d)", uint8(c))
}

// Option tunes a Writer.
type Option func(*config)

type config struct {
	zstdLevel zstd.EncoderLevel
	colLevel  map[int]zstd.EncoderLevel
	colFrame  map[int]FrameEncoder
	zstdMore  []zstd.EOption // for benchmarks
}

// FrameEncoder appends to dst one zstd frame whose content is src.
type FrameEncoder func(dst, src []byte) []byte

// WithZstdLevel sets the level of the zstd encoder (default zstd.SpeedFastest).
func WithZstdLevel(l zstd.EncoderLevel) Option { return func(c *config) { c.zstdLevel = l } }

// WithColumnZstdLevel sets the zstd level of column col's buffers, overriding
// WithZstdLevel: a column whose compressed size is all literals (the low
// bytes of timestamps) gains nothing from a level that searches harder for
// matches, and costs more time. Each level used gets its own encoder.
func WithColumnZstdLevel(col int, l zstd.EncoderLevel) Option {
	return func(c *config) {
		if c.colLevel == nil {
			c.colLevel = map[int]zstd.EncoderLevel{}
		}
		c.colLevel[col] = l
	}
}

// WithColumnZstdEncoder has enc write the zstd frames of column col's
// values (not its validity bitmap), instead of klauspost's encoder at a
// level: for a column whose layout a dedicated encoder knows (format's
// time column). A writer calls enc from one goroutine at a time.
func WithColumnZstdEncoder(col int, enc FrameEncoder) Option {
	return func(c *config) {
		if c.colFrame == nil {
			c.colFrame = map[int]FrameEncoder{}
		}
		c.colFrame[col] = enc
	}
}

func withZstdOptions(o ...zstd.EOption) Option {
	return func(c *config) { c.zstdMore = append(c.zstdMore, o...) }
}

// ColumnData is one column of a batch as the buffers of its Arrow layout,
// little-endian, without offset:
//
//   - integer or dictionary column: {validity, values} (values: the
//     dictionary indices for the dictionary column);
//   - string or binary view column: {validity, views, data buffers...}
//     where a view's buffer index counts from the first data buffer.
//
// Validity is a bitmap of at least (rows+7)/8 bytes, consulted only when
// NullCount > 0 (it may be nil otherwise). Buffers longer than the batch
// needs are cut to size. The writer does not keep the buffers after
// WriteBatch returns.
type ColumnData struct {
	Buffers   [][]byte
	NullCount int
}

type kind uint8

const (
	kindInt  kind = iota // fixed-width integer
	kindView             // Utf8View or BinaryView
	kindDict             // dictionary<int, utf8>
)

type column struct {
	name     string
	kind     kind
	width    int // bytes per value, or per index
	signed   bool
	nullable bool
}

// block is a message: its offset, its length up to its body (prefix,
// metadata and padding) and its body length, as a footer Block has them.
type block struct {
	offset int64
	meta   int32
	body   int64
}

type bufMeta struct{ offset, length int64 }

type fieldNode struct{ length, nulls int64 }

// Writer writes one Arrow IPC file. It is not safe for concurrent use.
type Writer struct {
	w       io.Writer
	pos     int64
	err     error // sticky write error
	closed  bool
	batchMD arrow.Metadata // custom metadata of the next record batch (SetBatchMetadata)

	schema *arrow.Schema
	cols   []column
	dict   []string
	codec  Codec

	fb       *flatbuffers.Builder
	head     []byte   // message prefix, flatbuffer and padding
	body     []byte   // compressed message body
	parts    [][]byte // the message body to write: body, or the caller's buffers
	bodyLen  int      // length of parts
	nodes    []fieldNode
	bufs     []bufMeta
	variadic []int64
	dicts    []block
	recs     []block

	zenc     *zstd.Encoder   // the encoder of the column being added
	colEnc   []*zstd.Encoder // each column's encoder
	frameEnc FrameEncoder    // if not nil, zenc's stand-in for the buffer being added
	runWidth int             // the width of the values of the buffer being added, if fixed
	runs     zstdframe.RunEncoder
	colFrame map[int]FrameEncoder
	lz       lz4.Compressor
	colSize  []int64 // body bytes of each column over all record batches
	valSize  []int64 // of which validity bitmaps
}

var (
	magic = [8]byte{'A', 'R', 'R', 'O', 'W', '1', 0, 0}
	eos   = [8]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}
)

// NewWriter starts an Arrow IPC file on w, which must be at the start of
// the file, and writes the magic, the schema and, if the schema has a
// dictionary-encoded column, its dictionary (the values dict; nil for an
// empty one) at once.
//
// Supported column types: Int8..Int64, Uint8..Uint64, StringView,
// BinaryView, and at most one Dictionary with an integer index type and
// String values. Schema and field metadata are kept.
//
// Each message reaches w in a few writes (one per buffer without
// compression), so w should be buffered; the position in the file is
// counted, never asked for.
func NewWriter(w io.Writer, schema *arrow.Schema, dict []string, codec Codec, opts ...Option) (*Writer, error) {
	cfg := config{zstdLevel: zstd.SpeedFastest}
	for _, o := range opts {
		o(&cfg)
	}
	wr := &Writer{w: w, schema: schema, dict: dict, codec: codec, fb: flatbuffers.NewBuilder(4096)}
	if codec == Zstd {
		wr.colFrame = cfg.colFrame
	}
	ndict := 0
	for i, f := range schema.Fields() {
		c := column{name: f.Name, nullable: f.Nullable}
		dt := f.Type
		if d, ok := dt.(*arrow.DictionaryType); ok {
			ndict++
			if ndict > 1 {
				return nil, fmt.Errorf("arrowipc: column %d (%s): more than one dictionary column", i, f.Name)
			}
			if d.ValueType.ID() != arrow.STRING {
				return nil, fmt.Errorf("arrowipc: column %d (%s): dictionary values are %v, want utf8", i, f.Name, d.ValueType)
			}
			c.kind = kindDict
			dt = d.IndexType
		}
		switch dt.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
			c.width, c.signed = dt.(arrow.FixedWidthDataType).BitWidth()/8, true
		case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
			c.width = dt.(arrow.FixedWidthDataType).BitWidth() / 8
		case arrow.STRING_VIEW, arrow.BINARY_VIEW:
			if c.kind == kindDict {
				return nil, fmt.Errorf("arrowipc: column %d (%s): dictionary index type %v", i, f.Name, dt)
			}
			c.kind, c.width = kindView, 16
		default:
			return nil, fmt.Errorf("arrowipc: column %d (%s): unsupported type %v", i, f.Name, f.Type)
		}
		wr.cols = append(wr.cols, c)
	}
	if ndict == 0 && len(dict) > 0 {
		return nil, errors.New("arrowipc: dictionary values given but no dictionary column")
	}
	switch codec {
	case None, LZ4:
	case Zstd:
		// One encoder per level, used synchronously with EncodeAll: no
		// goroutines. Every frame carries its content checksum (xxhash64,
		// which readers verify): a capture is a file from anywhere, and
		// without it 400 flipped bytes changed 223 values silently.
		encs := map[zstd.EncoderLevel]*zstd.Encoder{}
		wr.colEnc = make([]*zstd.Encoder, len(wr.cols))
		for i := range wr.cols {
			l, ok := cfg.colLevel[i]
			if !ok {
				l = cfg.zstdLevel
			}
			if encs[l] == nil {
				zo := append([]zstd.EOption{
					zstd.WithEncoderLevel(l),
					zstd.WithEncoderConcurrency(1),
					zstd.WithEncoderCRC(true),
					zstd.WithLowerEncoderMem(true),
				}, cfg.zstdMore...)
				enc, err := zstd.NewWriter(nil, zo...)
				if err != nil {
					return nil, fmt.Errorf("arrowipc: %w", err)
				}
				encs[l] = enc
			}
			wr.colEnc[i] = encs[l]
		}
		// The dictionary batch uses the default level's encoder.
		if wr.zenc = encs[cfg.zstdLevel]; wr.zenc == nil {
			enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(cfg.zstdLevel), zstd.WithEncoderConcurrency(1),
				zstd.WithEncoderCRC(true), zstd.WithLowerEncoderMem(true))
			if err != nil {
				return nil, fmt.Errorf("arrowipc: %w", err)
			}
			wr.zenc = enc
		}
	default:
		return nil, fmt.Errorf("arrowipc: unknown codec %v", codec)
	}
	wr.colSize = make([]int64, len(wr.cols))
	wr.valSize = make([]int64, len(wr.cols))

	wr.write(magic[:])
	wr.fb.Reset()
	wr.writeMessage(msgSchema, wr.buildSchema()) // no body
	if ndict > 0 {
		if err := wr.writeDictionary(); err != nil {
			return nil, err
		}
	}
	if wr.err != nil {
		return nil, wr.err
	}
	return wr, nil
}

// Size is the number of bytes handed to the underlying writer so far.
func (w *Writer) Size() int64 { return w.pos }

// Batches is the number of record batches written so far.
func (w *Writer) Batches() int { return len(w.recs) }

// ColumnBytes returns how many bytes of the record batch bodies written so
// far hold each column's buffers (compressed, with their length prefixes and
// padding), in schema order; the batches' metadata and the file's framing
// are not counted. The slice is the writer's own: read it, do not keep it.
func (w *Writer) ColumnBytes() []int64 { return w.colSize }

// ValidityBytes returns how many of each column's ColumnBytes are its
// validity bitmaps.
func (w *Writer) ValidityBytes() []int64 { return w.valSize }

// WriteBatch appends a record batch of rows rows; cols holds one entry per
// schema field. The message has been handed to the underlying writer when
// WriteBatch returns; the caller flushes it. Invalid input is reported
// without writing anything; a write error is returned by every later call.
//
// String views are not checked against their data buffers; dictionary
// indices of non-null rows are checked against the dictionary.
func (w *Writer) WriteBatch(rows int, cols []ColumnData) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("arrowipc: write to closed writer")
	}
	if err := w.check(rows, cols); err != nil {
		return err
	}
	w.startBody()
	w.nodes = w.nodes[:0]
	for i := range cols {
		c, d := &w.cols[i], &cols[i]
		start := w.bodyLen + len(w.body)
		if w.colEnc != nil {
			w.zenc = w.colEnc[i]
		}
		w.nodes = append(w.nodes, fieldNode{int64(rows), int64(d.NullCount)})
		if d.NullCount > 0 {
			w.addBuffer(d.Buffers[0][:(rows+7)/8])
		} else {
			w.addEmpty() // readers skip the validity of a column without nulls
		}
		w.valSize[i] += int64(w.bodyLen + len(w.body) - start)
		w.frameEnc = w.colFrame[i]
		if c.kind != kindView {
			w.runWidth = c.width
		}
		w.addBuffer(d.Buffers[1][:rows*c.width])
		w.frameEnc, w.runWidth = nil, 0
		if c.kind == kindView {
			for _, b := range d.Buffers[2:] {
				w.addBuffer(b)
			}
			w.variadic = append(w.variadic, int64(len(d.Buffers)-2))
		}
		w.colSize[i] += int64(w.bodyLen + len(w.body) - start)
	}
	w.endBody()
	w.fb.Reset()
	rb := w.buildRecordBatch(int64(rows))
	w.recs = append(w.recs, w.writeMessage(msgRecordBatch, rb))
	return w.err
}

func (w *Writer) check(rows int, cols []ColumnData) error {
	if rows < 0 || rows > 1<<31-1 {
		return fmt.Errorf("arrowipc: batch of %d rows", rows)
	}
	if len(cols) != len(w.cols) {
		return fmt.Errorf("arrowipc: batch of %d columns, schema has %d", len(cols), len(w.cols))
	}
	for i := range cols {
		c, d := &w.cols[i], &cols[i]
		nb := len(d.Buffers)
		if nb < 2 || (c.kind != kindView && nb != 2) {
			return fmt.Errorf("arrowipc: column %s: %d buffers", c.name, nb)
		}
		if d.NullCount < 0 || d.NullCount > rows || (d.NullCount > 0 && !c.nullable) {
			return fmt.Errorf("arrowipc: column %s: null count %d of %d rows", c.name, d.NullCount, rows)
		}
		if d.NullCount > 0 && len(d.Buffers[0]) < (rows+7)/8 {
			return fmt.Errorf("arrowipc: column %s: validity of %d bytes for %d rows", c.name, len(d.Buffers[0]), rows)
		}
		if len(d.Buffers[1]) < rows*c.width {
			return fmt.Errorf("arrowipc: column %s: %d bytes of values for %d rows", c.name, len(d.Buffers[1]), rows)
		}
		if c.kind == kindDict {
			var valid []byte
			if d.NullCount > 0 {
				valid = d.Buffers[0]
			}
			if j := badIndex(d.Buffers[1], valid, rows, c.width, c.signed, len(w.dict)); j >= 0 {
				return fmt.Errorf("arrowipc: column %s: row %d: index outside the dictionary of %d values", c.name, j, len(w.dict))
			}
		}
	}
	return nil
}

// badIndex returns the first non-null row whose index is not in [0, n), or -1.
func badIndex(b, valid []byte, rows, width int, signed bool, n int) int {
	if valid == nil && !signed && width == 2 {
		// The common case, a uint16 index without nulls: find the largest.
		var m uint16
		for i := 0; i < rows; i++ {
			m = max(m, binary.LittleEndian.Uint16(b[2*i:]))
		}
		if int(m) < n {
			return -1
		}
	}
	for i := 0; i < rows; i++ {
		var v uint64
		switch width {
		case 1:
			v = uint64(b[i])
			if signed {
				v = uint64(int8(b[i]))
			}
		case 2:
			x := binary.LittleEndian.Uint16(b[2*i:])
			v = uint64(x)
			if signed {
				v = uint64(int16(x))
			}
		case 4:
			x := binary.LittleEndian.Uint32(b[4*i:])
			v = uint64(x)
			if signed {
				v = uint64(int32(x))
			}
		default:
			v = binary.LittleEndian.Uint64(b[8*i:])
		}
		if v >= uint64(n) && (valid == nil || valid[i>>3]&(1<<(i&7)) != 0) {
			return i
		}
	}
	return -1
}

// writeDictionary writes the dictionary batch: one utf8 array.
func (w *Writer) writeDictionary() error {
	n := len(w.dict)
	size := 0
	for i, s := range w.dict {
		if !utf8.ValidString(s) {
			return fmt.Errorf("arrowipc: dictionary value %d is not UTF-8", i)
		}
		size += len(s)
	}
	if size > 1<<31-1 {
		return errors.New("arrowipc: dictionary over 2 GiB")
	}
	offsets := make([]byte, 4*(n+1))
	data := make([]byte, 0, size)
	for i, s := range w.dict {
		data = append(data, s...)
		binary.LittleEndian.PutUint32(offsets[4*(i+1):], uint32(len(data)))
	}
	w.startBody()
	w.nodes = append(w.nodes[:0], fieldNode{int64(n), 0})
	w.addEmpty()
	w.addBuffer(offsets)
	w.addBuffer(data)
	w.endBody()
	w.fb.Reset()
	rb := w.buildRecordBatch(int64(n))
	fb := w.fb
	fb.StartObject(3)
	fb.PrependInt64Slot(0, 0, 0) // id: the only dictionary is 0
	fb.PrependUOffsetTSlot(1, rb, 0)
	fb.PrependBoolSlot(2, false, false) // isDelta
	db := fb.EndObject()
	w.dicts = append(w.dicts, w.writeMessage(msgDictionaryBatch, db))
	return w.err
}

func (w *Writer) startBody() {
	w.body = w.body[:0]
	w.parts = w.parts[:0]
	w.bodyLen = 0
	w.bufs = w.bufs[:0]
	w.variadic = w.variadic[:0]
}

func (w *Writer) endBody() {
	if w.codec != None {
		w.parts = append(w.parts, w.body)
		w.bodyLen = len(w.body)
	}
}

// addEmpty records a buffer of length 0.
func (w *Writer) addEmpty() {
	// Without compression the body is in parts, with it in body.
	w.bufs = append(w.bufs, bufMeta{int64(w.bodyLen + len(w.body)), 0})
}

// addBuffer appends b to the body, compressed if that makes it smaller,
// padded to 8 bytes, and records its offset and length.
//
// An empty buffer of a compressed batch is stored as the -1 prefix alone,
// not with length 0 as Arrow Go's writer does: polars reads the prefix of
// every compressed buffer it loads (all but the validity of a column
// without nulls and the buffers of an empty batch) and panics on one of
// length 0, such as the empty data buffer of a string view column. Arrow
// Go reads either form.
func (w *Writer) addBuffer(b []byte) {
	if w.codec == None {
		// Written from where it is, not copied.
		w.bufs = append(w.bufs, bufMeta{int64(w.bodyLen), int64(len(b))})
		if len(b) > 0 {
			w.parts = append(w.parts, b)
			if p := pad8(len(b)); p > 0 {
				w.parts = append(w.parts, zeros[:p])
			}
			w.bodyLen += len(b) + pad8(len(b))
		}
		return
	}
	off := len(w.body)
	w.body = binary.LittleEndian.AppendUint64(w.body, uint64(len(b)))
	// Neither codec can shrink a few bytes: their headers are larger.
	if len(b) < 16 || !w.compress(b) {
		w.body = binary.LittleEndian.AppendUint64(w.body[:off], ^uint64(0))
		w.body = append(w.body, b...)
	}
	w.bufs = append(w.bufs, bufMeta{int64(off), int64(len(w.body) - off)})
	w.body = append(w.body, zeros[:pad8(len(w.body))]...)
}

var zeros [8]byte

func pad8(n int) int { return -n & 7 }

// compress appends b compressed to the body and reports whether it is
// smaller than b; if not, the body's length past the caller's prefix is
// garbage that the caller overwrites.
func (w *Writer) compress(b []byte) bool {
	start := len(w.body)
	switch w.codec {
	case Zstd:
		// A buffer that repeats every 64 bytes (a constant column, or
		// one alternating between two values) as zstdframe writes it:
		// klauspost's encoder matches it at the values' width, which
		// its decoder copies a byte at a time (2.5 ns a row of a
		// constant 4-byte column against 0.4: BenchmarkDecodeRepeat).
		var ok bool
		if w.body, ok = zstdframe.AppendRepeat(w.body, b); ok {
			break
		}
		if w.frameEnc != nil {
			w.body = w.frameEnc(w.body, b)
			break
		}
		// Values in runs (a thread's tid, a CPU's number) as zstdframe
		// writes them: klauspost's encoder matches a run at the
		// values' width, which its decoder copies a byte at a time
		// (1.15 ns a row of a 2-byte column in runs of 1 to 128
		// against 0.43: BenchmarkDecodeRuns).
		if w.runWidth > 0 {
			if w.body, ok = w.runs.Append(w.body, b, w.runWidth); ok {
				break
			}
		}
		w.body = w.zenc.EncodeAll(b, w.body)
	case LZ4:
		var ok bool
		if w.body, ok = w.lz4Frame(w.body, b); !ok {
			return false
		}
	}
	return len(w.body)-start < len(b)
}

// lz4Header is the LZ4 frame header Arrow Go's (pierrec/lz4) writer emits:
// magic, FLG = version 1 | independent blocks, BD = 64 KiB blocks, and the
// header checksum. No content size, no block or content checksums.
var lz4Header = [7]byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82}

const lz4Block = 64 << 10

// lz4Frame appends src as one LZ4 frame to dst. It gives up (false) as soon
// as the frame is as long as src.
func (w *Writer) lz4Frame(dst, src []byte) ([]byte, bool) {
	start, total := len(dst), len(src)
	dst = append(dst, lz4Header[:]...)
	for len(src) > 0 {
		n := min(len(src), lz4Block)
		chunk := src[:n]
		src = src[n:]
		at := len(dst)
		// Room for the block size and the block, at most as long as the
		// chunk: the compressor returns 0 for a chunk it cannot shrink, which
		// is then stored as is, flagged by the size's high bit.
		dst = grow(dst, 4+n)
		k, err := w.lz.CompressBlock(chunk, dst[at+4:at+4+n])
		if err != nil || k == 0 {
			binary.LittleEndian.PutUint32(dst[at:], uint32(n)|1<<31)
			copy(dst[at+4:], chunk)
			k = n
		} else {
			binary.LittleEndian.PutUint32(dst[at:], uint32(k))
		}
		dst = dst[:at+4+k]
		if len(dst)-start >= total {
			return dst, false
		}
	}
	dst = append(dst, 0, 0, 0, 0) // end mark
	return dst, true
}

// grow extends b by n bytes, reallocating only when its capacity is short.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), 2*cap(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// SetBatchMetadata sets the custom metadata of the next record batch's
// message (Message.custom_metadata): facts that belong to that batch and
// that a reader of a footerless file must still find. Readers of other
// tools ignore it.
func (w *Writer) SetBatchMetadata(md arrow.Metadata) { w.batchMD = md }

// SetFooterMetadata replaces the schema metadata written into the footer
// by Close: the stream keeps the metadata it started with, readers of the
// file format see the footer's (facts known only at the end, such as when
// the capture stopped).
func (w *Writer) SetFooterMetadata(md arrow.Metadata) {
	w.schema = arrow.NewSchema(w.schema.Fields(), &md)
}

// Close writes the end-of-stream marker and the footer. It does not close
// the underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	w.write(eos[:])
	fb := w.fb
	fb.Reset()
	schema := w.buildSchema()
	dicts := w.buildBlocks(w.dicts)
	recs := w.buildBlocks(w.recs)
	fb.StartObject(5)
	fb.PrependInt16Slot(0, metadataV5, 0)
	fb.PrependUOffsetTSlot(1, schema, 0)
	fb.PrependUOffsetTSlot(2, dicts, 0)
	fb.PrependUOffsetTSlot(3, recs, 0)
	fb.Finish(fb.EndObject())
	footer := fb.FinishedBytes()
	w.head = append(w.head[:0], footer...)
	w.head = binary.LittleEndian.AppendUint32(w.head, uint32(len(footer)))
	w.head = append(w.head, "ARROW1"...)
	w.write(w.head)
	return w.err
}

func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	n, err := w.w.Write(b)
	w.pos += int64(n)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = fmt.Errorf("arrowipc: %w", err)
	}
}

// writeMessage finishes the message whose header table is hdr and writes
// it with the body in w.parts: continuation marker, flatbuffer length,
// flatbuffer, padding to 8 bytes, body.
func (w *Writer) writeMessage(typ byte, hdr flatbuffers.UOffsetT) block {
	bodyLen := int64(w.bodyLen)
	fb := w.fb
	var md flatbuffers.UOffsetT
	if typ == msgRecordBatch && w.batchMD.Len() > 0 {
		md = buildMetadata(fb, &w.batchMD)
		w.batchMD = arrow.Metadata{}
	}
	fb.StartObject(5)
	fb.PrependInt16Slot(0, metadataV5, 0)
	fb.PrependByteSlot(1, typ, 0)
	fb.PrependUOffsetTSlot(2, hdr, 0)
	fb.PrependInt64Slot(3, bodyLen, 0)
	fb.PrependUOffsetTSlot(4, md, 0)
	fb.Finish(fb.EndObject())
	meta := fb.FinishedBytes()
	n := len(meta) + pad8(len(meta))
	w.head = binary.LittleEndian.AppendUint32(w.head[:0], 0xffffffff)
	w.head = binary.LittleEndian.AppendUint32(w.head, uint32(n))
	w.head = append(w.head, meta...)
	w.head = append(w.head, zeros[:pad8(len(meta))]...)
	blk := block{offset: w.pos, meta: int32(len(w.head)), body: bodyLen}
	w.write(w.head)
	for _, p := range w.parts {
		w.write(p)
	}
	return blk
}
