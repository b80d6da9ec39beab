package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/klauspost/compress/zstd"
)

// What a capture may declare. Arrow's IPC reader allocates metadata, bodies
// and decompressed buffers from lengths written in the file, so the Reader
// checks every message against these limits (and against the file's size)
// before Arrow reads a byte of it. Reading one batch therefore holds at most
// MaxMessageMeta of metadata, MaxBatchBytes of body, MaxBatchBytes of
// decompressed buffers and one zstd window of MaxZstdWindow, whatever the
// file claims; bpftape's writer stays far below (16 MiB batches).
const (
	// MaxMessageMeta bounds the flatbuffer metadata of one message (the
	// schema message carries the JSON Meta).
	MaxMessageMeta = 16 << 20
	// MaxBatchBytes bounds a batch's body as stored and the sum of its
	// buffers' uncompressed lengths.
	MaxBatchBytes = 256 << 20
	// MaxZstdWindow bounds the window of a zstd frame, as libzstd's default
	// decoder does (windowLog 27).
	MaxZstdWindow = 128 << 20
	// MaxFooterBytes bounds the footer (its block list grows 24 bytes a
	// batch); a larger one is ignored and the file read as a stream.
	MaxFooterBytes = 256 << 20

	maxColumns     = 1 << 16 // schema fields
	maxBuffers     = 1 << 20 // buffers of one batch
	maxKeyValues   = 1 << 10 // custom metadata entries
	maxMetaObjects = 1 << 20 // JSON objects in the Meta
)

// ErrLimit is wrapped by the errors of captures that declare more than a
// reader limit allows.
var ErrLimit = errors.New("capture exceeds a reader limit")

var errFlatbuf = fmt.Errorf("%w: malformed flatbuffer", ErrCorrupt)

func limitErr[N int64 | uint64](what string, n N, limit int64) error {
	return fmt.Errorf("%w: %s declares %s, the limit is %s", ErrLimit, what, sizeStr(uint64(n)), sizeStr(uint64(limit)))
}

// ErrCorrupt is wrapped by the errors of a capture whose bytes do not say
// what they should: a malformed message, a zstd frame whose checksum fails.
var ErrCorrupt = errors.New("corrupt capture")

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

func sizeStr(n uint64) string {
	switch {
	case n >= 1<<40:
		return fmt.Sprintf("%d bytes", n)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// fbTable is a flatbuffer table whose every access is bounds-checked, unlike
// the generated code Arrow uses, which trusts the offsets.
type fbTable struct {
	b            []byte
	pos, vt      int
	vtLen, tbLen int
}

func u32(b []byte, i int) int { return int(binary.LittleEndian.Uint32(b[i:])) }
func u16(b []byte, i int) int { return int(binary.LittleEndian.Uint16(b[i:])) }

func fbRoot(b []byte) (fbTable, error) {
	if len(b) < 4 {
		return fbTable{}, errFlatbuf
	}
	return fbTableAt(b, u32(b, 0))
}

func fbTableAt(b []byte, pos int) (fbTable, error) {
	if pos < 0 || pos > len(b)-4 {
		return fbTable{}, errFlatbuf
	}
	vt := pos - int(int32(binary.LittleEndian.Uint32(b[pos:])))
	if vt < 0 || vt > len(b)-4 {
		return fbTable{}, errFlatbuf
	}
	t := fbTable{b: b, pos: pos, vt: vt, vtLen: u16(b, vt), tbLen: u16(b, vt+2)}
	if t.vtLen < 4 || t.vtLen&1 != 0 || vt+t.vtLen > len(b) || t.tbLen < 4 || pos+t.tbLen > len(b) {
		return fbTable{}, errFlatbuf
	}
	return t, nil
}

// slot returns where field i's value of size bytes is, or -1 when absent.
func (t fbTable) slot(i, size int) (int, error) {
	o := 4 + 2*i
	if o+2 > t.vtLen {
		return -1, nil
	}
	off := u16(t.b, t.vt+o)
	if off == 0 {
		return -1, nil
	}
	if off < 4 || off+size > t.tbLen {
		return 0, errFlatbuf
	}
	return t.pos + off, nil
}

// int reads field i as a little-endian signed integer of size bytes (default 0).
func (t fbTable) int(i, size int) (int64, error) {
	p, err := t.slot(i, size)
	if p < 0 || err != nil {
		return 0, err
	}
	switch size {
	case 1:
		return int64(int8(t.b[p])), nil
	case 2:
		return int64(int16(binary.LittleEndian.Uint16(t.b[p:]))), nil
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(t.b[p:]))), nil
	}
	return int64(binary.LittleEndian.Uint64(t.b[p:])), nil
}

// ref follows the offset in field i: the position it points at, or -1.
func (t fbTable) ref(i int) (int, error) {
	p, err := t.slot(i, 4)
	if p < 0 || err != nil {
		return p, err
	}
	q := p + u32(t.b, p)
	if q > len(t.b)-4 {
		return 0, errFlatbuf
	}
	return q, nil
}

// table returns the table in field i; ok is false when it is absent.
func (t fbTable) table(i int) (tb fbTable, ok bool, err error) {
	p, err := t.ref(i)
	if p < 0 || err != nil {
		return fbTable{}, false, err
	}
	tb, err = fbTableAt(t.b, p)
	return tb, err == nil, err
}

// vector returns the start and length of the vector in field i, whose
// elements are elem bytes; an absent vector is empty.
func (t fbTable) vector(i, elem int) (start, n int, err error) {
	p, err := t.ref(i)
	if p < 0 || err != nil {
		return 0, 0, err
	}
	start, n = p+4, u32(t.b, p)
	if n > (len(t.b)-start)/elem {
		return 0, 0, errFlatbuf
	}
	return start, n, nil
}

// elemTable returns the table element j of a vector of tables at start.
func (t fbTable) elemTable(start, j int) (fbTable, error) {
	p := start + 4*j
	return fbTableAt(t.b, p+u32(t.b, p))
}

// str checks that the string in field i lies inside the buffer.
func (t fbTable) str(i int) (string, error) {
	start, n, err := t.vector(i, 1)
	if err != nil {
		return "", err
	}
	return string(t.b[start : start+n]), nil
}

func i64At(b []byte, p int) int64 { return int64(binary.LittleEndian.Uint64(b[p:])) }

// Message header types (MessageHeader union tags).
const (
	hdrSchema     = 1
	hdrDictionary = 2
	hdrRecord     = 3
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
	if !ok || typ < hdrSchema || typ > hdrRecord {
		return hdr, 0, 0, corruptf("message of type %d", typ)
	}
	if bodyLen, err = m.int(3, 8); err != nil {
		return hdr, 0, 0, err
	}
	if bodyLen < 0 {
		return hdr, 0, 0, corruptf("message body of %d bytes", bodyLen)
	}
	if err := checkKeyValues(m, 4); err != nil {
		return hdr, 0, 0, err
	}
	return hdr, typ, bodyLen, nil
}

// layout is what the batches of a schema hold, one kind per column: Arrow's
// loader takes a field node and buffers (and a variadic buffer count for a
// view) per column from the batch without bounds checks, so a batch must
// list exactly that many.
type layout []byte

// Column kinds: an integer or dictionary indices (2 buffers), utf8 (3), a
// view (2 and its variadic data buffers).
const (
	kindInt  = 'i'
	kindDict = 'd'
	kindUtf8 = 's'
	kindView = 'v'
)

// dictLayout is the layout of a dictionary batch: the values of the one
// dictionary column, utf8.
var dictLayout = layout{kindUtf8}

// checkHeader checks a message header against its body, bodyLen bytes of
// r, and the schema's layout (nil until the schema is known). A schema
// message returns its layout.
func checkHeader(typ int, hdr fbTable, r io.ReaderAt, bodyLen int64, lay layout) (layout, error) {
	if (typ == hdrSchema) != (lay == nil) {
		return nil, corruptf("message of type %d where the schema is %s", typ, map[bool]string{true: "due", false: "known"}[lay == nil])
	}
	switch typ {
	case hdrSchema:
		if bodyLen != 0 {
			return nil, corruptf("schema message with a body")
		}
		return checkSchemaFB(hdr)
	case hdrDictionary:
		// DictionaryBatch: id:long, data:RecordBatch, isDelta:bool.
		data, ok, err := hdr.table(1)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, corruptf("dictionary batch without data")
		}
		return lay, checkBatchFB(data, r, bodyLen, dictLayout)
	}
	return lay, checkBatchFB(hdr, r, bodyLen, lay)
}

// checkKeyValues checks a [KeyValue] vector (key:string, value:string).
func checkKeyValues(t fbTable, i int) error {
	start, n, err := t.vector(i, 4)
	if err != nil {
		return err
	}
	if n > maxKeyValues {
		return corruptf("%d metadata entries", n)
	}
	for j := 0; j < n; j++ {
		kv, err := t.elemTable(start, j)
		if err != nil {
			return err
		}
		if _, err := kv.str(0); err != nil {
			return err
		}
		v, err := kv.str(1)
		if err != nil {
			return err
		}
		// The Meta JSON decodes into structures; bound how many.
		if n := strings.Count(v, "{"); n > maxMetaObjects {
			return limitErr(fmt.Sprintf("metadata with %d JSON objects", n), int64(len(v)), maxMetaObjects)
		}
	}
	return nil
}

// Field type union tags that bpftape columns use.
const (
	fbTypeInt        = 2
	fbTypeUtf8       = 5
	fbTypeBinaryView = 23
	fbTypeUtf8View   = 24
)

// checkSchemaFB checks a Schema table: endianness:short, fields:[Field],
// custom_metadata:[KeyValue], features:[long]. Only the column types of a
// capture are accepted, without children, so that Arrow neither recurses
// nor meets a type it would build from further lengths.
func checkSchemaFB(s fbTable) (layout, error) {
	if e, err := s.int(0, 2); err != nil || e != 0 {
		return nil, corruptf("schema is not little-endian")
	}
	start, n, err := s.vector(1, 4)
	if err != nil {
		return nil, err
	}
	if n == 0 || n > maxColumns {
		return nil, corruptf("%d columns", n)
	}
	lay := make(layout, n)
	dicts := 0
	for j := 0; j < n; j++ {
		f, err := s.elemTable(start, j)
		if err != nil {
			return nil, err
		}
		kind, dict, err := checkFieldFB(f)
		if err != nil {
			return nil, fmt.Errorf("column %d: %w", j, err)
		}
		if dict {
			if dicts++; dicts > 1 {
				return nil, corruptf("more than one dictionary column")
			}
		}
		lay[j] = kind
	}
	if err := checkKeyValues(s, 2); err != nil {
		return nil, err
	}
	if _, _, err = s.vector(3, 8); err != nil {
		return nil, err
	}
	return lay, nil
}

// checkFieldFB checks a Field table — name:string, nullable:bool,
// type_type:ubyte, type:union, dictionary:DictionaryEncoding,
// children:[Field], custom_metadata:[KeyValue] — and returns the column's
// kind and whether it is dictionary-encoded.
func checkFieldFB(f fbTable) (kind byte, dict bool, err error) {
	if _, err := f.str(0); err != nil {
		return 0, false, err
	}
	tag, err := f.int(2, 1)
	if err != nil {
		return 0, false, err
	}
	typ, ok, err := f.table(3)
	if err != nil {
		return 0, false, err
	}
	if !ok {
		return 0, false, corruptf("column without a type")
	}
	switch uint8(tag) {
	case fbTypeInt:
		if err := checkIntFB(typ); err != nil {
			return 0, false, err
		}
		kind = kindInt
	case fbTypeUtf8:
		kind = kindUtf8
	case fbTypeBinaryView, fbTypeUtf8View:
		kind = kindView
	default:
		return 0, false, corruptf("column type %d is not one of a capture's", uint8(tag))
	}
	// DictionaryEncoding: id:long, indexType:Int, isOrdered:bool,
	// dictionaryKind:short. The column holds the indices; the one
	// dictionary holds utf8 values (dictLayout).
	if d, ok, err := f.table(4); err != nil {
		return 0, false, err
	} else if ok {
		if kind != kindUtf8 {
			return 0, false, corruptf("dictionary of type %d values", uint8(tag))
		}
		it, ok, err := d.table(1)
		if err != nil {
			return 0, false, err
		}
		if ok {
			if err := checkIntFB(it); err != nil {
				return 0, false, err
			}
		}
		kind, dict = kindDict, true
	}
	if _, n, err := f.vector(5, 4); err != nil {
		return 0, false, err
	} else if n != 0 {
		return 0, false, corruptf("column with %d children", n)
	}
	return kind, dict, checkKeyValues(f, 6)
}

// checkIntFB checks an Int table: bitWidth:int, is_signed:bool.
func checkIntFB(t fbTable) error {
	w, err := t.int(0, 4)
	if err != nil {
		return err
	}
	if w != 8 && w != 16 && w != 32 && w != 64 {
		return corruptf("integer of %d bits", w)
	}
	return nil
}

// batchDims locate a RecordBatch table's field nodes and buffers.
type batchDims struct {
	rows      int64
	nodeStart int // offset of the field node vector in the table's bytes
	bufStart  int // offset of the buffer vector
	nbuf      int
}

// batchShape checks the field nodes and buffer lists of RecordBatch table t
// against lay: a node per column, each within the batch's rows (exactly its
// rows with sameLen), and as many buffers and variadic counts as the columns
// take. It appends to first each column's first buffer index.
func batchShape(t fbTable, lay layout, sameLen bool, first []int) (batchDims, []int, error) {
	var d batchDims
	rows, err := t.int(0, 8)
	if err != nil {
		return d, first, err
	}
	if rows < 0 || rows > MaxBatchBytes {
		return d, first, corruptf("batch of %d rows", rows)
	}
	start, n, err := t.vector(1, 16)
	if err != nil {
		return d, first, err
	}
	if n != len(lay) {
		return d, first, corruptf("batch with %d field nodes for %d columns", n, len(lay))
	}
	for j := 0; j < n; j++ {
		length, nulls := i64At(t.b, start+16*j), i64At(t.b, start+16*j+8)
		if length < 0 || length > rows || nulls < 0 || nulls > length {
			return d, first, corruptf("field node %d: %d rows, %d nulls in a batch of %d rows", j, length, nulls, rows)
		}
		if sameLen && length != rows {
			return d, first, fmt.Errorf("columns of unequal length")
		}
	}
	bstart, nbuf, err := t.vector(2, 16)
	if err != nil {
		return d, first, err
	}
	if nbuf > maxBuffers {
		return d, first, corruptf("batch with %d buffers", nbuf)
	}
	vstart, nv, err := t.vector(4, 8)
	if err != nil {
		return d, first, err
	}
	need, views := 0, 0
	for _, k := range lay {
		first = append(first, need)
		switch k {
		case kindInt, kindDict:
			need += 2
		case kindUtf8:
			need += 3
		case kindView:
			if views >= nv {
				return d, first, corruptf("batch with %d variadic buffer counts for more view columns", nv)
			}
			c := i64At(t.b, vstart+8*views)
			if c < 0 || c > int64(nbuf) {
				return d, first, corruptf("variadic buffer count %d of a batch with %d buffers", c, nbuf)
			}
			need += 2 + int(c)
			views++
		}
	}
	if views != nv || need != nbuf {
		return d, first, corruptf("batch with %d buffers and %d variadic counts, its columns take %d and %d", nbuf, nv, need, views)
	}
	return batchDims{rows: rows, nodeStart: start, bufStart: bstart, nbuf: nbuf}, first, nil
}

// checkBatchFB checks a RecordBatch table — length:long, nodes:[FieldNode],
// buffers:[Buffer], compression:BodyCompression, variadicBufferCounts:[long]
// — against its layout and its body: as many nodes, buffers and variadic
// counts as the columns take, every buffer inside the body, and the
// uncompressed lengths compressed buffers declare (and their zstd windows)
// within limits.
func checkBatchFB(t fbTable, body io.ReaderAt, bodyLen int64, lay layout) error {
	if bodyLen > MaxBatchBytes {
		return limitErr("a batch body", bodyLen, MaxBatchBytes)
	}
	dims, _, err := batchShape(t, lay, false, nil)
	if err != nil {
		return err
	}
	bstart, nbuf := dims.bufStart, dims.nbuf
	codec := int64(-1)
	if c, ok, err := t.table(3); err != nil {
		return err
	} else if ok {
		// BodyCompression: codec:byte (0 LZ4_FRAME, 1 ZSTD), method:byte (0 BUFFER).
		codec, err = c.int(0, 1)
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
	}
	var raw int64
	var prefix [8]byte
	for j := 0; j < nbuf; j++ {
		off, length := i64At(t.b, bstart+16*j), i64At(t.b, bstart+16*j+8)
		if off < 0 || length < 0 || off > bodyLen || length > bodyLen-off {
			return corruptf("buffer %d at %d+%d outside a body of %d bytes", j, off, length, bodyLen)
		}
		if codec < 0 || length == 0 {
			raw += length
			continue
		}
		if length < 8 {
			return corruptf("compressed buffer %d of %d bytes", j, length)
		}
		if _, err := body.ReadAt(prefix[:], off); err != nil {
			return fmt.Errorf("read buffer %d: %w", j, err)
		}
		// The prefix is the uncompressed length, or -1 for a stored buffer.
		n := binary.LittleEndian.Uint64(prefix[:])
		if n == math.MaxUint64 {
			raw += length - 8
			continue
		}
		if n > MaxBatchBytes {
			return limitErr(fmt.Sprintf("compressed buffer %d", j), n, MaxBatchBytes)
		}
		raw += int64(n)
		if codec == 1 {
			frames := io.NewSectionReader(body, off+8, length-8)
			if err := checkZstd(frames); err != nil {
				return fmt.Errorf("buffer %d: %w", j, err)
			}
			if err := verifyZstd(frames, n); err != nil {
				return fmt.Errorf("buffer %d: %w", j, err)
			}
		}
		if raw > MaxBatchBytes {
			break
		}
	}
	if raw > MaxBatchBytes {
		return limitErr("a batch's uncompressed buffers", raw, MaxBatchBytes)
	}
	return nil
}

// zstdVerifiers decode buffers only to check their frames' checksums.
var zstdVerifiers = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.IgnoreChecksum(false),
		zstd.WithDecoderMaxWindow(MaxZstdWindow), zstd.WithDecoderMaxMemory(MaxBatchBytes), zstd.WithDecodeAllCapLimit(true))
	if err != nil {
		panic(err) // only for invalid options
	}
	return &zstdVerifier{dec: d}
}}

type zstdVerifier struct {
	dec      *zstd.Decoder
	src, dst []byte
}

// verifyZstd decodes the zstd frames of s, which must hold n bytes, and
// checks their content checksums: Arrow Go's reader stops decoding at the
// declared length, before a frame's checksum, so a flipped byte would
// otherwise change values silently. Frames written without a checksum
// (before bpftape wrote them) pass unchecked.
func verifyZstd(s *io.SectionReader, n uint64) error {
	v := zstdVerifiers.Get().(*zstdVerifier)
	defer zstdVerifiers.Put(v)
	v.src = grow(v.src, int(s.Size()))[:s.Size()]
	if _, err := s.ReadAt(v.src, 0); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	v.dst = grow(v.dst, int(n))[:0]
	out, err := v.dec.DecodeAll(v.src, v.dst)
	if err != nil {
		return corruptf("zstd: %v", err)
	}
	if uint64(len(out)) != n {
		return corruptf("zstd: %d bytes, the buffer declares %d", len(out), n)
	}
	return nil
}

// checkZstd walks the zstd frames of a buffer, from block header to block
// header without reading the blocks, and refuses a window (the memory the
// decoder reserves) above MaxZstdWindow.
func checkZstd(s *io.SectionReader) error {
	pk := peeker{r: s}
	var h zstd.Header
	for pos := int64(0); pos < s.Size(); {
		if err := h.Decode(pk.at(pos, zstd.HeaderMaxSize)); err != nil {
			if err == io.ErrUnexpectedEOF {
				return nil // a cut frame: the decoder fails on it
			}
			return corruptf("zstd frame: %v", err)
		}
		if h.Skippable {
			pos += int64(h.HeaderSize) + int64(h.SkippableSize)
			continue
		}
		w := h.WindowSize
		if h.SingleSegment {
			w = h.FrameContentSize
		}
		if w > MaxZstdWindow {
			return limitErr("a zstd window", w, MaxZstdWindow)
		}
		pos += int64(h.HeaderSize)
		for {
			bh := pk.at(pos, 3)
			if len(bh) < 3 {
				return nil
			}
			v := int(bh[0]) | int(bh[1])<<8 | int(bh[2])<<16
			size := int64(v >> 3)
			switch (v >> 1) & 3 {
			case 1: // RLE: one byte repeated size times
				size = 1
			case 3:
				return corruptf("reserved zstd block type")
			}
			pos += 3 + size
			if v&1 != 0 {
				break
			}
		}
		if h.HasCheckSum {
			pos += 4
		}
	}
	return nil
}

// peeker reads small pieces of r at increasing offsets through a 4 KiB
// window, so that block headers close together cost one read.
type peeker struct {
	r     io.ReaderAt
	buf   [4096]byte
	start int64
	n     int
}

// at returns up to k bytes at pos (fewer at the end of r).
func (p *peeker) at(pos int64, k int) []byte {
	if pos < p.start || pos+int64(k) > p.start+int64(p.n) {
		p.start = pos
		p.n, _ = p.r.ReadAt(p.buf[:], pos)
	}
	off := int(pos - p.start)
	return p.buf[off:min(off+k, p.n)]
}

// errTruncated says a message runs past the end of the file: a capture
// whose writer was killed ends so.
var errTruncated = errors.New("message runs past the end of the file")

// contToken starts every message of an Arrow IPC stream.
const contToken = 0xFFFFFFFF

// checkStreamMessage checks the message at off of a file of size bytes —
// its type with okType, its header against the schema's layout *lay (which
// a schema message sets) — and returns where it ends. It returns
// errTruncated for a message the file does not hold entirely.
func checkStreamMessage(ra io.ReaderAt, size, off int64, lay *layout, okType func(int) error) (int64, error) {
	var pre [8]byte
	n, _ := ra.ReadAt(pre[:], off)
	if n < 4 {
		return 0, errTruncated
	}
	switch binary.LittleEndian.Uint32(pre[:]) {
	case 0: // end of stream, before Arrow 0.15
		return off + 4, nil
	case contToken:
	default:
		return 0, corruptf("no message at offset %d", off)
	}
	if n < 8 {
		return 0, errTruncated
	}
	ml := int64(binary.LittleEndian.Uint32(pre[4:]))
	if ml == 0 { // end of stream
		return off + 8, nil
	}
	if ml > MaxMessageMeta {
		return 0, limitErr(fmt.Sprintf("message metadata at offset %d", off), ml, MaxMessageMeta)
	}
	if off+8+ml > size {
		return 0, errTruncated
	}
	meta := make([]byte, ml)
	if _, err := ra.ReadAt(meta, off+8); err != nil {
		return 0, errTruncated
	}
	hdr, typ, bodyLen, err := parseMessage(meta)
	if err == nil && okType != nil {
		err = okType(typ)
	}
	if err != nil {
		return 0, fmt.Errorf("message at offset %d: %w", off, err)
	}
	if bodyLen > MaxBatchBytes {
		return 0, limitErr(fmt.Sprintf("message body at offset %d", off), bodyLen, MaxBatchBytes)
	}
	end := off + 8 + ml + bodyLen
	if end > size {
		return 0, errTruncated
	}
	l, err := checkHeader(typ, hdr, io.NewSectionReader(ra, off+8+ml, bodyLen), bodyLen, *lay)
	if err != nil {
		return 0, fmt.Errorf("message at offset %d: %w", off, err)
	}
	*lay = l
	return end, nil
}

// guard hands Arrow's stream reader a footerless capture one message at a
// time, each checked by checkStreamMessage before its first byte is read.
type guard struct {
	ra    io.ReaderAt
	size  int64
	pos   int64 // file offset of the next byte Arrow reads
	limit int64 // end of the messages checked so far
	err   error // why the next message was refused
	lay   layout
	dicts int // dictionary batches read
}

func (g *guard) Read(p []byte) (int, error) {
	if g.pos >= g.limit {
		if g.err != nil {
			return 0, g.err
		}
		end, err := checkStreamMessage(g.ra, g.size, g.pos, &g.lay, g.order)
		if err == errTruncated {
			return 0, io.EOF
		}
		if err != nil {
			g.err = err
			return 0, err
		}
		g.limit = end
	}
	if int64(len(p)) > g.limit-g.pos {
		p = p[:g.limit-g.pos]
	}
	n, err := g.ra.ReadAt(p, g.pos)
	g.pos += int64(n)
	if err == io.EOF && n == len(p) {
		err = nil
	}
	return n, err
}

// order holds Arrow's stream reader to the message order it assumes
// without checking: the schema, then the dictionary batch if the schema has
// a dictionary column (read as one whatever its type), then any.
func (g *guard) order(typ int) error {
	if g.lay != nil && g.dicts == 0 && bytes.IndexByte(g.lay, kindDict) >= 0 {
		if typ != hdrDictionary {
			return corruptf("message of type %d where the dictionary is due", typ)
		}
		g.dicts++
	}
	return nil
}

// footer is a checked file footer: version:short, schema:Schema,
// dictionaries:[Block], recordBatches:[Block], custom_metadata:[KeyValue].
type footer struct {
	buf      []byte
	recStart int
	nrec     int
	end      int64 // where the footer starts: blocks must end before
	lay      layout
}

// checkFooter checks the footer of a file of size bytes, its schema and
// every dictionary block it lists, so that Arrow's file reader can be
// trusted with it. Record batch blocks are checked one by one (checkBlock).
func checkFooter(ra io.ReaderAt, size int64) (*footer, error) {
	var tail [10]byte
	if _, err := ra.ReadAt(tail[:], size-10); err != nil {
		return nil, err
	}
	n := int64(binary.LittleEndian.Uint32(tail[:]))
	if n > MaxFooterBytes {
		return nil, limitErr("the footer", n, MaxFooterBytes)
	}
	if n <= 0 || n > size-18 {
		return nil, corruptf("footer of %d bytes", n)
	}
	ft := &footer{buf: make([]byte, n), end: size - 10 - n}
	if _, err := ra.ReadAt(ft.buf, ft.end); err != nil {
		return nil, err
	}
	t, err := fbRoot(ft.buf)
	if err != nil {
		return nil, err
	}
	s, ok, err := t.table(1)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, corruptf("footer without a schema")
	}
	if ft.lay, err = checkSchemaFB(s); err != nil {
		return nil, err
	}
	dstart, nd, err := t.vector(2, 24)
	if err != nil {
		return nil, err
	}
	if ft.recStart, ft.nrec, err = t.vector(3, 24); err != nil {
		return nil, err
	}
	if err := checkKeyValues(t, 4); err != nil {
		return nil, err
	}
	for i := 0; i < nd; i++ {
		if err := ft.checkBlock(ra, dstart+24*i, hdrDictionary); err != nil {
			return nil, fmt.Errorf("dictionary %d: %w", i, err)
		}
	}
	return ft, nil
}

// checkRecord checks the block of record batch i.
func (ft *footer) checkRecord(ra io.ReaderAt, i int) error {
	if i < 0 || i >= ft.nrec {
		return corruptf("no batch %d", i)
	}
	return ft.checkBlock(ra, ft.recStart+24*i, hdrRecord)
}

// checkBlock checks the message a Block (offset:long, metaDataLength:int,
// pad, bodyLength:long) at p points at, which must be of type want.
func (ft *footer) checkBlock(ra io.ReaderAt, p int, want int) error {
	off := i64At(ft.buf, p)
	ml := int64(int32(binary.LittleEndian.Uint32(ft.buf[p+8:])))
	bodyLen := i64At(ft.buf, p+16)
	switch {
	case ml > MaxMessageMeta+8:
		return limitErr("a block's metadata", ml, MaxMessageMeta)
	case bodyLen > MaxBatchBytes:
		return limitErr("a block's body", bodyLen, MaxBatchBytes)
	case off < 8 || ml < 8 || bodyLen < 0 || off&7 != 0 || ml&7 != 0 || bodyLen&7 != 0 || off+ml+bodyLen > ft.end:
		return corruptf("block at %d+%d+%d outside the %d bytes before the footer", off, ml, bodyLen, ft.end)
	}
	meta := make([]byte, ml)
	if _, err := ra.ReadAt(meta, off); err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(meta) != contToken || int64(u32(meta, 4)) > ml-8 {
		return corruptf("no message at offset %d", off)
	}
	hdr, typ, declared, err := parseMessage(meta[8 : 8+u32(meta, 4)])
	if err != nil {
		return err
	}
	if typ != want || declared != bodyLen {
		return corruptf("block at %d: message of type %d with a body of %d bytes, want type %d and %d bytes", off, typ, declared, want, bodyLen)
	}
	_, err = checkHeader(typ, hdr, io.NewSectionReader(ra, off+ml, bodyLen), bodyLen, ft.lay)
	return err
}

// checkValidity verifies that every column's validity bitmap covers its
// rows, so that IsNull and IsValid cannot index past it.
func checkValidity(rec arrow.Record) error {
	for i, c := range rec.Columns() {
		d := c.Data()
		if bufs := d.Buffers(); len(bufs) > 0 && bufs[0] != nil && d.Len() > 0 && bufs[0].Len()*8 < d.Offset()+d.Len() {
			return fmt.Errorf("column %s: validity bitmap of %d bytes for %d rows", rec.ColumnName(i), bufs[0].Len(), d.Len())
		}
	}
	return nil
}
