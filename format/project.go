package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// ErrNoProjection is returned by Reader.Project for a capture that the
// projected path cannot read: one without a footer (read it with Next, which
// recovers it), or one whose batches Next has already started reading.
var ErrNoProjection = errors.New("capture cannot be read by projection")

// Projection reads the batches of a capture column by column, straight from
// the file: Next reads only a batch's metadata (the RecordBatch flatbuffer
// with its field nodes and buffer list, found through the footer's block
// offsets), and a column's buffers are read and decompressed the first time
// they are asked for in that batch, into buffers reused from batch to batch,
// by one reused zstd decoder. No Arrow arrays are built. An analysis that
// needs two columns of twelve decodes two, and its memory does not grow with
// the file.
//
// Every length is checked as Next and Open check it (limits.go): blocks
// inside the file, the message and its body within MaxMessageMeta and
// MaxBatchBytes, field nodes and buffers matching the schema's layout and
// inside the body, the uncompressed lengths of the buffers decoded within
// MaxBatchBytes per batch (and no frame decoding to more than its declared
// length), zstd windows within MaxZstdWindow; and the values as Next checks
// them: every column of the batch's length, validity bitmaps covering their
// rows, value buffers covering theirs, probe indices inside the probe table,
// the probe dictionary equal to the metadata's.
//
// Results are those of Next: a column's validity is consulted only when its
// field node counts nulls, as Arrow does.
type Projection struct {
	r      *Reader
	blocks *blockIndex
	types  []Type // per column: its integer type, TypeInvalid for others

	next int
	err  error
	cur  batchDesc
	gen  uint64 // counts batches read; a slot loaded for another batch is stale
	raw  int64  // bytes decompressed for the current batch

	cols  []projCol
	meta  []byte
	probe []uint16
	zdec  *zstd.Decoder
	lz    *lz4.Reader
	lzSrc bytes.Reader

	dictOK bool
}

// batchDesc is a parsed RecordBatch message: where its nodes and buffers
// are in msg, and where its body is in the file.
type batchDesc struct {
	msg       []byte
	rows      int
	nodeStart int   // field nodes: 16 bytes each
	bufStart  int   // buffers: 16 bytes each, every one inside the body
	firstBuf  []int // per column: the index of its first (validity) buffer
	codec     int64 // -1 none, 0 lz4 frame, 1 zstd
	body      int64 // file offset of the body
}

type projCol struct {
	valid, vals bufSlot
}

// bufSlot holds one decoded buffer of one column, reused across batches.
type bufSlot struct {
	gen  uint64
	data []byte // the buffer of batch gen
	in   []byte // compressed bytes as read
	out  []byte // decompressed bytes
}

// Project returns a projected reader of the capture's batches. It returns
// ErrNoProjection after Next has been called, and for a footerless capture
// whose stream is anything but the schema, one dictionary and whole record
// batches up to where it was cut (Next reads those as Arrow's stream reader
// does); for one that is, Projection.RecoverErr says where it was cut, as
// Reader.RecoverErr would after Next. The Reader must stay open while the Projection is used. Every call
// returns a new Projection, with its own buffers and decoder.
func (r *Reader) Project() (*Projection, error) {
	if r.next > 0 {
		return nil, ErrNoProjection
	}
	if r.blocks == nil {
		switch {
		case r.fr != nil && r.foot != nil:
			r.blocks = &blockIndex{ft: r.foot, lay: r.foot.lay, end: r.foot.end, nrec: r.foot.nrec}
		case r.Recovered:
			b := walkStream(r.f, r.Size)
			if b == nil {
				return nil, ErrNoProjection
			}
			r.blocks = b
		default:
			return nil, ErrNoProjection
		}
	}
	lay := r.blocks.lay
	fields := r.Schema.Fields()
	if len(fields) != len(lay) {
		return nil, corruptf("schema of %d columns, layout of %d", len(fields), len(lay))
	}
	p := &Projection{r: r, blocks: r.blocks, types: make([]Type, len(fields)), cols: make([]projCol, len(fields))}
	for i, f := range fields {
		p.types[i] = intType(f.Type)
		if p.types[i] != TypeInvalid && lay[i] != kindInt {
			return nil, corruptf("column %s: integer type, layout %q", f.Name, lay[i])
		}
	}
	return p, nil
}

// blockIndex says where the dictionary and record batch messages of a
// capture are: in its footer, or, for a footerless one, found by walkStream.
type blockIndex struct {
	ft          *footer
	recs, dicts []blockRef // without a footer
	nrec        int
	lay         layout
	end         int64 // where messages must end
	recoverErr  error // where a footerless file was cut
}

// blockRef is a message: its offset, its length up to its body (prefix,
// metadata and padding) and its body length, as a footer Block has them.
type blockRef struct{ off, ml, body int64 }

func (b *blockIndex) rec(i int) blockRef {
	if b.ft == nil {
		return b.recs[i]
	}
	return footerBlock(b.ft.buf, b.ft.recStart+24*i)
}

func (b *blockIndex) dictionaries() ([]blockRef, error) {
	if b.ft == nil {
		return b.dicts, nil
	}
	t, err := fbRoot(b.ft.buf)
	if err != nil {
		return nil, err
	}
	start, n, err := t.vector(2, 24)
	if err != nil {
		return nil, err
	}
	refs := make([]blockRef, n)
	for k := range refs {
		refs[k] = footerBlock(b.ft.buf, start+24*k)
	}
	return refs, nil
}

// footerBlock reads a Block (offset:long, metaDataLength:int, pad,
// bodyLength:long) at p of a checked footer.
func footerBlock(buf []byte, p int) blockRef {
	return blockRef{i64At(buf, p), int64(int32(binary.LittleEndian.Uint32(buf[p+8:]))), i64At(buf, p+16)}
}

// walkStream finds the messages of a footerless capture as Next, through
// Arrow's stream reader behind guard, reads them — each checked by
// checkStreamMessage — the schema, the dictionary, then record batches, up
// to the first message the file does not hold whole or an end-of-stream
// marker. It returns nil for any other stream (a message out of order or
// failing a check, a block a footer could not list), which Next reads as it
// does.
// Its recoverErr is what Next sets RecoverErr to where the stream is cut.
func walkStream(ra io.ReaderAt, size int64) *blockIndex {
	b := &blockIndex{end: size}
	pos, good := int64(8), int64(8) // good: the end of the last record batch
	var lay layout
	var meta []byte
	for {
		end, err := checkStreamMessage(ra, size, pos, &lay, nil)
		if err == errTruncated {
			break
		}
		if err != nil {
			return nil
		}
		var pre [8]byte
		if _, err := ra.ReadAt(pre[:], pos); err != nil {
			return nil
		}
		ml := int64(binary.LittleEndian.Uint32(pre[4:]))
		if binary.LittleEndian.Uint32(pre[:]) != contToken || ml == 0 {
			break // an end-of-stream marker, where Arrow's reader stops
		}
		meta = grow(meta, int(ml))[:ml]
		if _, err := ra.ReadAt(meta, pos+8); err != nil {
			return nil
		}
		_, typ, bodyLen, err := parseMessage(meta)
		if err != nil {
			return nil
		}
		ref := blockRef{pos, 8 + ml, bodyLen}
		if ref.ml&7 != 0 || ref.body&7 != 0 || end != pos+ref.ml+bodyLen {
			return nil
		}
		switch {
		case typ == hdrSchema && b.lay == nil:
			if bytes.IndexByte(lay, kindDict) < 0 {
				return nil // a capture has its probe dictionary
			}
			b.lay = lay
		case typ == hdrDictionary && b.lay != nil && len(b.dicts) == 0:
			b.dicts = append(b.dicts, ref)
		case typ == hdrRecord && len(b.dicts) == 1:
			b.recs = append(b.recs, ref)
			good = end
		default:
			return nil
		}
		pos = end
	}
	if b.lay == nil {
		return nil
	}
	b.nrec = len(b.recs)
	if tail := size - good; tail > 0 {
		b.recoverErr = fmt.Errorf("incomplete batch: %d bytes at offset %d", tail, good)
	}
	return b
}

func intType(dt arrow.DataType) Type {
	for t := Int8; t <= Uint64; t++ {
		if arrow.TypeEqual(dt, t.arrow()) {
			return t
		}
	}
	return TypeInvalid
}

// Close releases the decoder; the Reader stays open.
func (p *Projection) Close() {
	if p.zdec != nil {
		p.zdec.Close()
		p.zdec = nil
	}
}

// Next reads the metadata of the next batch; it returns false at the end or
// on error (see Err).
func (p *Projection) Next() bool {
	if p.next >= p.blocks.nrec {
		return false
	}
	return p.Read(p.next)
}

// NumBatches is the number of batches the footer lists, or, without a
// footer, the number of complete batches.
func (p *Projection) NumBatches() int { return p.blocks.nrec }

// Recovered reports whether the capture has no footer; RecoverErr then says
// where its stream was cut (nil at a batch boundary), as Reader.RecoverErr
// does after Next.
func (p *Projection) Recovered() bool { return p.blocks.ft == nil }

// RecoverErr: see Recovered.
func (p *Projection) RecoverErr() error { return p.blocks.recoverErr }

// Read reads the metadata of batch i, so that batches can be read out of
// order (several Projections of one Reader may read different batches at
// once, each on its own goroutine); Next continues after it. It returns
// false on error (see Err), which stops the Projection.
func (p *Projection) Read(i int) (ok bool) {
	if p.err != nil {
		return false
	}
	if i < 0 || i >= p.blocks.nrec {
		p.err = fmt.Errorf("no batch %d", i)
		return false
	}
	defer func() {
		if x := recover(); x != nil {
			p.err = corruptf("%v", x)
			ok = false
		}
	}()
	p.next = i + 1
	if !p.dictOK {
		if err := p.checkDictionaries(); err != nil {
			p.err = fmt.Errorf("batch %d: %w", i, err)
			return false
		}
		p.dictOK = true
	}
	if err := p.readBatch(i); err != nil {
		p.err = fmt.Errorf("batch %d: %w", i, err)
		return false
	}
	return true
}

// Err returns the error that stopped Next or a column load, if any.
func (p *Projection) Err() error { return p.err }

// Len is the number of rows of the current batch.
func (p *Projection) Len() int { return p.cur.rows }

// Batches is the number of batches read so far, in order (with Read: the
// index after the last batch read).
func (p *Projection) Batches() int { return p.next }

// Nulls returns the null count the field node of column ci declares.
func (p *Projection) Nulls(ci int) int {
	return int(i64At(p.cur.msg, p.cur.nodeStart+16*ci+8))
}

// readBlock reads and parses the message of block b, which must be of type
// want, into p.meta; it returns the message header and where its body is.
func (p *Projection) readBlock(b blockRef, want int) (fbTable, int64, int64, error) {
	off, ml, bodyLen, end := b.off, b.ml, b.body, p.blocks.end
	switch {
	case ml > MaxMessageMeta+8:
		return fbTable{}, 0, 0, limitErr("a block's metadata", ml, MaxMessageMeta)
	case bodyLen > MaxBatchBytes:
		return fbTable{}, 0, 0, limitErr("a block's body", bodyLen, MaxBatchBytes)
	case off < 8 || ml < 8 || bodyLen < 0 || off&7 != 0 || ml&7 != 0 || bodyLen&7 != 0 || off+ml+bodyLen > end:
		return fbTable{}, 0, 0, corruptf("block at %d+%d+%d outside the %d bytes before the footer", off, ml, bodyLen, end)
	}
	p.meta = grow(p.meta, int(ml))
	meta := p.meta[:ml]
	if _, err := p.r.f.ReadAt(meta, off); err != nil {
		return fbTable{}, 0, 0, err
	}
	inner := int64(u32(meta, 4))
	if binary.LittleEndian.Uint32(meta) != contToken || inner > ml-8 {
		return fbTable{}, 0, 0, corruptf("no message at offset %d", off)
	}
	hdr, typ, declared, err := parseMessage(meta[8 : 8+inner])
	if err != nil {
		return fbTable{}, 0, 0, err
	}
	if typ != want || declared != bodyLen {
		return fbTable{}, 0, 0, corruptf("block at %d: message of type %d with a body of %d bytes, want type %d and %d bytes", off, typ, declared, want, bodyLen)
	}
	return hdr, off + ml, bodyLen, nil
}

func (p *Projection) readBatch(i int) error {
	hdr, body, bodyLen, err := p.readBlock(p.blocks.rec(i), hdrRecord)
	if err != nil {
		return err
	}
	return p.parseBatch(hdr, body, bodyLen, p.blocks.lay, true)
}

// parseBatch checks a RecordBatch table against its layout and body as
// checkBatchFB does, without reading the body: the buffers are checked as
// they are loaded. With sameLen, every field node must have the batch's rows.
func (p *Projection) parseBatch(t fbTable, body, bodyLen int64, lay layout, sameLen bool) error {
	d := &p.cur
	p.gen++
	p.raw = 0
	d.rows, d.msg, d.body = 0, t.b, body
	dims, first, err := batchShape(t, lay, sameLen, d.firstBuf[:0])
	d.firstBuf = first
	if err != nil {
		return err
	}
	rows, start, bstart, nbuf := dims.rows, dims.nodeStart, dims.bufStart, dims.nbuf
	d.codec = -1
	if c, ok, err := t.table(3); err != nil {
		return err
	} else if ok {
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
	d.rows, d.nodeStart, d.bufStart = int(rows), start, bstart
	return nil
}

// load returns buffer j of the current batch, decoded into s, which must
// hold at least need bytes.
func (p *Projection) load(j int, s *bufSlot, need int) ([]byte, error) {
	if s.gen == p.gen {
		return s.data, nil
	}
	d := &p.cur
	off, length := i64At(d.msg, d.bufStart+16*j), i64At(d.msg, d.bufStart+16*j+8)
	var data []byte
	switch {
	case length == 0:
	case d.codec < 0:
		p.raw += length
		if p.raw > MaxBatchBytes {
			return nil, limitErr("a batch's uncompressed buffers", p.raw, MaxBatchBytes)
		}
		s.out = grow(s.out, int(length))
		data = s.out[:length]
		if _, err := p.r.f.ReadAt(data, d.body+off); err != nil {
			return nil, fmt.Errorf("read buffer %d: %w", j, err)
		}
	default:
		if length < 8 {
			return nil, corruptf("compressed buffer %d of %d bytes", j, length)
		}
		s.in = grow(s.in, int(length))
		in := s.in[:length]
		if _, err := p.r.f.ReadAt(in, d.body+off); err != nil {
			return nil, fmt.Errorf("read buffer %d: %w", j, err)
		}
		n := binary.LittleEndian.Uint64(in)
		if n == math.MaxUint64 { // stored as is
			p.raw += length - 8
			data = in[8:]
			break
		}
		if n > MaxBatchBytes || int64(n) > MaxBatchBytes-p.raw {
			return nil, limitErr(fmt.Sprintf("compressed buffer %d", j), n, MaxBatchBytes-p.raw)
		}
		if d.codec == 1 {
			// Frames that state their sizes must add up to the declared
			// length, before anything is allocated from it.
			if size, ok := zstdContentSize(in[8:]); ok && size != n {
				return nil, corruptf("buffer %d: zstd frames of %d bytes where %d are declared", j, size, n)
			}
		}
		p.raw += int64(n)
		// The slack lets the zstd decoder copy in wide strides up to the
		// end (its "safe" variant, for a buffer without, is slower); a
		// frame that fills it is longer than declared, and refused.
		s.out = grow(s.out, int(n)+zstdSlack)
		var err error
		if data, err = p.decompress(d.codec, in[8:], s.out[:0:int(n)+zstdSlack], int(n)); err != nil {
			return nil, fmt.Errorf("buffer %d: %w", j, err)
		}
	}
	if len(data) < need {
		return nil, corruptf("buffer %d of %d bytes where %d are due", j, len(data), need)
	}
	s.gen, s.data = p.gen, data
	return data, nil
}

// zstdSlack is the room left past a buffer's declared length for the zstd
// decoder (its compressedBlockOverAlloc).
const zstdSlack = 16

// decompress decodes src into dst, whose capacity bounds the output: the
// buffer must decode to exactly want bytes.
func (p *Projection) decompress(codec int64, src, dst []byte, want int) ([]byte, error) {
	if codec == 1 {
		if p.zdec == nil {
			var err error
			p.zdec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.IgnoreChecksum(false),
				zstd.WithDecoderMaxWindow(MaxZstdWindow), zstd.WithDecoderMaxMemory(MaxBatchBytes),
				zstd.WithDecodeAllCapLimit(true))
			if err != nil {
				return nil, err
			}
		}
		out, err := p.zdec.DecodeAll(src, dst)
		if err != nil {
			if errors.Is(err, zstd.ErrWindowSizeExceeded) {
				return nil, fmt.Errorf("%w: a zstd window above %s", ErrLimit, sizeStr(MaxZstdWindow))
			}
			if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrFrameSizeExceeded) {
				return nil, corruptf("zstd frame longer than the %d bytes declared", want)
			}
			return nil, corruptf("zstd: %v", err)
		}
		if len(out) != want {
			return nil, corruptf("zstd frame of %d bytes where %d are declared", len(out), want)
		}
		return out, nil
	}
	if p.lz == nil {
		p.lz = lz4.NewReader(nil)
	}
	p.lzSrc.Reset(src)
	p.lz.Reset(&p.lzSrc)
	out := dst[:want]
	if _, err := io.ReadFull(p.lz, out); err != nil {
		return nil, corruptf("lz4 frame shorter than the %d bytes declared: %v", want, err)
	}
	var one [1]byte
	if n, _ := p.lz.Read(one[:]); n != 0 {
		return nil, corruptf("lz4 frame longer than the %d bytes declared", want)
	}
	return out, nil
}

// grow returns b with room for n bytes, reallocated (8-byte aligned, at
// least 8 bytes) when it has less.
func grow(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:cap(b)]
	}
	return make([]byte, (max(n, 8)+7)&^7)
}

// checkDictionaries checks that every dictionary batch of the footer holds
// the probe names of the metadata, as Next checks the dictionary Arrow loads.
func (p *Projection) checkDictionaries() error {
	dicts, err := p.blocks.dictionaries()
	if err != nil {
		return err
	}
	if len(dicts) == 0 {
		return corruptf("no probe dictionary")
	}
	probes := p.r.Meta.Probes
	for k, d := range dicts {
		hdr, body, bodyLen, err := p.readBlock(d, hdrDictionary)
		if err != nil {
			return fmt.Errorf("dictionary %d: %w", k, err)
		}
		data, ok, err := hdr.table(1)
		if err != nil {
			return err
		}
		if !ok {
			return corruptf("dictionary batch without data")
		}
		if err := p.parseBatch(data, body, bodyLen, dictLayout, false); err != nil {
			return fmt.Errorf("dictionary %d: %w", k, err)
		}
		n := int(i64At(p.cur.msg, p.cur.nodeStart))
		var so, sd bufSlot
		offs, err := p.load(1, &so, 4*(n+1))
		if err != nil {
			return fmt.Errorf("dictionary %d: %w", k, err)
		}
		vals, err := p.load(2, &sd, 0)
		if err != nil {
			return fmt.Errorf("dictionary %d: %w", k, err)
		}
		for i, pr := range probes {
			if i >= n {
				return corruptf("probe dictionary does not match metadata at %d", i)
			}
			a, b := int32(binary.LittleEndian.Uint32(offs[4*i:])), int32(binary.LittleEndian.Uint32(offs[4*i+4:]))
			if a < 0 || b < a || int(b) > len(vals) || string(vals[a:b]) != pr.Name {
				return corruptf("probe dictionary does not match metadata at %d", i)
			}
		}
	}
	return nil
}

// Probe returns the probe indices of the current batch, each checked to be
// inside the probe table. The slice is valid until the next call to Next.
func (p *Projection) Probe() ([]uint16, error) {
	if p.err != nil {
		return nil, p.err
	}
	s := &p.cols[ColProbe].vals
	if s.gen == p.gen {
		return p.probe, nil
	}
	if p.Nulls(ColProbe) > 0 {
		return nil, p.fail(fmt.Errorf("probe column has nulls"))
	}
	rows := p.cur.rows
	b, err := p.load(p.cur.firstBuf[ColProbe]+1, s, 2*rows)
	if err != nil {
		return nil, p.fail(err)
	}
	idx := castSlice[uint16](b, rows)
	var m uint16
	for _, x := range idx {
		m = max(m, x)
	}
	if rows > 0 && int(m) >= len(p.r.Meta.Probes) {
		return nil, p.fail(fmt.Errorf("probe index %d out of range", m))
	}
	p.probe = idx
	return idx, nil
}

// Validity returns the validity bitmap of column ci in the current batch,
// covering its rows, or nil when its field node counts no nulls (every row
// is valid).
func (p *Projection) Validity(ci int) ([]byte, error) {
	if p.err != nil {
		return nil, p.err
	}
	if ci < 0 || ci >= len(p.cols) {
		return nil, fmt.Errorf("no column %d", ci)
	}
	if p.Nulls(ci) == 0 {
		return nil, nil
	}
	b, err := p.load(p.cur.firstBuf[ci], &p.cols[ci].valid, (p.cur.rows+7)/8)
	if err != nil {
		return nil, p.fail(fmt.Errorf("column %s: %w", p.r.Schema.Field(ci).Name, err))
	}
	return b, nil
}

// Ints returns integer column ci (time, cpu, pid, tid, lost or an integer
// field) of the current batch: its type, validity and values.
func (p *Projection) Ints(ci int) (IntColumn, error) {
	if p.err != nil {
		return IntColumn{}, p.err
	}
	if ci < 0 || ci >= len(p.types) || p.types[ci] == TypeInvalid {
		return IntColumn{}, fmt.Errorf("column %d is not an integer column", ci)
	}
	valid, err := p.Validity(ci)
	if err != nil {
		return IntColumn{}, err
	}
	t, rows := p.types[ci], p.cur.rows
	b, err := p.load(p.cur.firstBuf[ci]+1, &p.cols[ci].vals, rows*t.Size())
	if err != nil {
		return IntColumn{}, p.fail(fmt.Errorf("column %s: %w", p.r.Schema.Field(ci).Name, err))
	}
	c := IntColumn{Type: t, Valid: valid}
	switch t {
	case Int8:
		c.I8 = castSlice[int8](b, rows)
	case Int16:
		c.I16 = castSlice[int16](b, rows)
	case Int32:
		c.I32 = castSlice[int32](b, rows)
	case Int64:
		c.I64 = castSlice[int64](b, rows)
	case Uint8:
		c.U8 = b[:rows]
	case Uint16:
		c.U16 = castSlice[uint16](b, rows)
	case Uint32:
		c.U32 = castSlice[uint32](b, rows)
	case Uint64:
		c.U64 = castSlice[uint64](b, rows)
	}
	return c, nil
}

func (p *Projection) fail(err error) error {
	if p.err == nil {
		p.err = fmt.Errorf("batch %d: %w", p.next-1, err)
	}
	return p.err
}

// castSlice views the first n values of b, little-endian as the file
// stores them (bpftape runs on little-endian machines, as Arrow Go's
// array views do), without copying. b comes from grow or from a slot of it
// at an offset of 8, so it is 8-byte aligned.
func castSlice[T int8 | int16 | int32 | int64 | uint16 | uint32 | uint64](b []byte, n int) []T {
	if n == 0 {
		return nil
	}
	var z T
	_ = b[n*int(unsafe.Sizeof(z))-1]
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// IntColumn is one integer column of a projected batch: exactly one of the
// typed slices, per Type, holds its values.
type IntColumn struct {
	Type  Type
	Valid []byte // validity bitmap; nil when every row is valid
	I8    []int8
	I16   []int16
	I32   []int32
	I64   []int64
	U8    []uint8
	U16   []uint16
	U32   []uint32
	U64   []uint64
}

// IsValid reports whether row i holds a value.
func (c *IntColumn) IsValid(i int) bool { return c.Valid == nil || c.Valid[i>>3]&(1<<(i&7)) != 0 }

// Int returns row i as int64, as Column.Int does.
func (c *IntColumn) Int(i int) int64 {
	switch c.Type {
	case Int8:
		return int64(c.I8[i])
	case Int16:
		return int64(c.I16[i])
	case Int32:
		return int64(c.I32[i])
	case Int64:
		return c.I64[i]
	case Uint8:
		return int64(c.U8[i])
	case Uint16:
		return int64(c.U16[i])
	case Uint32:
		return int64(c.U32[i])
	case Uint64:
		return int64(c.U64[i])
	}
	return 0
}

// zstdContentSize adds up the content sizes the zstd frames of b state,
// walking from block header to block header; ok is false when a frame does
// not state its size or b is not a sequence of whole frames (the decoder
// then finds what is wrong).
func zstdContentSize(b []byte) (size uint64, ok bool) {
	var h zstd.Header
	for pos := 0; pos < len(b); {
		if err := h.Decode(b[pos:]); err != nil {
			return 0, false
		}
		if h.Skippable {
			pos += h.HeaderSize + int(h.SkippableSize)
			continue
		}
		if !h.HasFCS {
			return 0, false
		}
		size += h.FrameContentSize
		pos += h.HeaderSize
		for {
			if pos+3 > len(b) {
				return 0, false
			}
			v := int(b[pos]) | int(b[pos+1])<<8 | int(b[pos+2])<<16
			n := v >> 3
			switch (v >> 1) & 3 {
			case 1: // RLE: one byte
				n = 1
			case 3:
				return 0, false
			}
			pos += 3 + n
			if v&1 != 0 {
				break
			}
		}
		if h.HasCheckSum {
			pos += 4
		}
	}
	return size, true
}
