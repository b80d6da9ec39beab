package arrowipc

// Decoding the batches of a File, buffer by buffer.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"unsafe"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Decoder reads the record batches of a File column by column, straight
// from the file: Read reads only a batch's metadata (the RecordBatch
// flatbuffer with its field nodes and buffer list), and a column's buffers
// are read and decompressed the first time they are asked for in that
// batch. No Arrow arrays are built: an analysis that needs two columns of
// twelve decodes two.
//
// Every length is checked before anything is allocated from it: the
// message and its body within MaxMessageMeta and MaxBatchBytes, field nodes
// and buffers matching the schema's layout and inside the body, the
// uncompressed lengths of the buffers decoded within MaxBatchBytes per
// batch (and no frame decoding to more or less than its declared length),
// zstd windows within MaxZstdWindow, zstd content checksums verified as the
// frames are decoded (once: there is no separate verifying pass), value
// buffers covering their rows, validity bitmaps covering theirs, string
// views inside their data buffers.
//
// A Decoder is not safe for concurrent use; several Decoders of one File
// may read different batches at once.
type Decoder struct {
	// Pool, when set, is where a Decoder that does not reuse its buffers
	// takes new ones from.
	Pool *BufPool

	f     *File
	reuse bool
	gen   uint64 // counts batches parsed; a slot loaded for another is stale
	cur   batchShape
	meta  []byte
	cols  []colSlots
	zdec  *zstd.Decoder
	lz    *lz4.Reader
	lzSrc bytes.Reader
}

type colSlots struct {
	valid, vals bufSlot
	data        []bufSlot // a view column's data buffers
	viewsGen    uint64    // the batch whose views were checked
}

// bufSlot holds one decoded buffer of one column.
type bufSlot struct {
	gen    uint64
	data   []byte // the buffer of batch gen
	in     []byte // compressed bytes as read
	out    []byte // decompressed bytes
	frames FrameDecoder
}

// FrameDecoder appends to dst the content of src, a zstd frame of want
// bytes, when it knows how: the frames a dedicated encoder wrote
// (WithColumnZstdEncoder). dst has want+16 bytes of room. When ok is
// false, the Decoder decodes src with klauspost's decoder instead, which
// also finds what is wrong with a corrupt frame: a FrameDecoder answers
// only with a frame's exact content.
type FrameDecoder func(dst, src []byte, want int) (out []byte, ok bool)

// SetValuesDecoder has fd try first to decode the zstd frames of the
// values of integer column ci.
func (d *Decoder) SetValuesDecoder(ci int, fd FrameDecoder) {
	if ci >= 0 && ci < len(d.cols) {
		d.cols[ci].vals.frames = fd
	}
}

// NewDecoder returns a Decoder of f's batches. With reuse, each column's
// buffers are decoded into memory reused from batch to batch, so that
// reading a file allocates next to nothing, and what a Decoder returns is
// valid until its next Read; without, every buffer is new and stays valid
// (strings from Views point into it).
func (f *File) NewDecoder(reuse bool) *Decoder {
	return &Decoder{f: f, reuse: reuse, cols: make([]colSlots, len(f.lay))}
}

// Close releases the zstd decoder.
func (d *Decoder) Close() {
	if d.zdec != nil {
		d.zdec.Close()
		d.zdec = nil
	}
}

// Read reads the metadata of record batch i and checks it against its
// body and the schema; every column has the batch's rows.
func (d *Decoder) Read(i int) error {
	d.gen++
	d.cur.gen, d.cur.raw, d.cur.rows = d.gen, 0, 0
	if i < 0 || i >= d.f.NumBatches() {
		return fmt.Errorf("no batch %d", i)
	}
	hdr, body, bodyLen, err := readBlock(d.f.ra, d.f.rec(i), msgRecordBatch, d.f.end, &d.meta)
	if err != nil {
		return err
	}
	return d.cur.parse(hdr, body, bodyLen, d.f.lay, true)
}

// Rows is the number of rows of the current batch.
func (d *Decoder) Rows() int { return d.cur.rows }

// NullCount returns the null count the field node of column ci declares.
func (d *Decoder) NullCount(ci int) int {
	_, n := d.cur.node(ci)
	return int(n)
}

// Decoded is the number of bytes the buffers decoded so far of the
// current batch hold, decompressed.
func (d *Decoder) Decoded() int64 { return d.cur.raw }

func (d *Decoder) colErr(ci int, err error) error {
	return fmt.Errorf("column %s: %w", d.f.Schema.Field(ci).Name, err)
}

// column checks that column ci exists and has layout a or b.
func (d *Decoder) column(ci int, a, b byte) error {
	if ci < 0 || ci >= len(d.cols) {
		return fmt.Errorf("no column %d", ci)
	}
	if k := d.f.lay[ci]; k != a && k != b {
		return fmt.Errorf("column %s is not of layout %q", d.f.Schema.Field(ci).Name, []byte{a, b})
	}
	return nil
}

// Validity returns the validity bitmap of column ci in the current batch,
// covering its rows, or nil when its field node counts no nulls (every row
// is valid: a reader does not consult the bitmap then).
func (d *Decoder) Validity(ci int) ([]byte, error) {
	if ci < 0 || ci >= len(d.cols) {
		return nil, fmt.Errorf("no column %d", ci)
	}
	if d.NullCount(ci) == 0 {
		return nil, nil
	}
	b, err := d.load(&d.cur, d.cur.firstBuf[ci], &d.cols[ci].valid, (d.cur.rows+7)/8)
	if err != nil {
		return nil, d.colErr(ci, err)
	}
	return b, nil
}

// Values returns the values of integer or dictionary-index column ci in
// the current batch: at least rows*width bytes, 8-byte aligned.
func (d *Decoder) Values(ci, width int) ([]byte, error) {
	if err := d.column(ci, layInt, layDict); err != nil {
		return nil, err
	}
	b, err := d.load(&d.cur, d.cur.firstBuf[ci]+1, &d.cols[ci].vals, d.cur.rows*width)
	if err != nil {
		return nil, d.colErr(ci, err)
	}
	return b, nil
}

// Views returns string or binary view column ci of the current batch, every
// view checked to lie inside its data buffers.
func (d *Decoder) Views(ci int) (Views, error) {
	if err := d.column(ci, layView, layView); err != nil {
		return Views{}, err
	}
	c, sh := &d.cols[ci], &d.cur
	first, n := sh.firstBuf[ci], sh.firstBuf[ci+1]-sh.firstBuf[ci]-2
	views, err := d.load(sh, first+1, &c.vals, sh.rows*16)
	if err != nil {
		return Views{}, d.colErr(ci, err)
	}
	for len(c.data) < n {
		c.data = append(c.data, bufSlot{})
	}
	v := Views{views: views[:sh.rows*16], data: make([][]byte, n)}
	for k := 0; k < n; k++ {
		if v.data[k], err = d.load(sh, first+2+k, &c.data[k], 0); err != nil {
			return Views{}, d.colErr(ci, err)
		}
	}
	if c.viewsGen != sh.gen {
		if err := v.check(); err != nil {
			return Views{}, d.colErr(ci, err)
		}
		c.viewsGen = sh.gen
	}
	return v, nil
}

// Dictionary returns the values of dictionary batch k, checked: offsets
// inside the values. They are new memory whether or not d reuses.
func (d *Decoder) Dictionary(k int) (Strings, error) {
	if k < 0 || k >= d.f.NumDictionaries() {
		return Strings{}, fmt.Errorf("no dictionary %d", k)
	}
	var meta []byte
	hdr, body, bodyLen, err := readBlock(d.f.ra, d.f.dict(k), msgDictionaryBatch, d.f.end, &meta)
	if err != nil {
		return Strings{}, fmt.Errorf("dictionary %d: %w", k, err)
	}
	var sh batchShape
	if err := parseDictionary(hdr, body, bodyLen, &sh); err != nil {
		return Strings{}, fmt.Errorf("dictionary %d: %w", k, err)
	}
	n, _ := sh.node(0)
	sh.gen = math.MaxUint64
	var so, sd bufSlot
	need := 4 * (int(n) + 1)
	if n == 0 {
		need = 0 // an empty array may leave its offsets out
	}
	offs, err := d.load(&sh, 1, &so, need)
	if err == nil && len(offs) < 4 {
		offs = make([]byte, 4)
	}
	if err != nil {
		return Strings{}, fmt.Errorf("dictionary %d: %w", k, err)
	}
	vals, err := d.load(&sh, 2, &sd, 0)
	if err != nil {
		return Strings{}, fmt.Errorf("dictionary %d: %w", k, err)
	}
	s := Strings{offs: offs[:4*(n+1)], vals: vals}
	if err := s.check(); err != nil {
		return Strings{}, fmt.Errorf("dictionary %d: %w", k, err)
	}
	return s, nil
}

// load returns buffer j of the batch sh, decoded into s, which must hold at
// least need bytes.
func (d *Decoder) load(sh *batchShape, j int, s *bufSlot, need int) ([]byte, error) {
	if s.gen == sh.gen && s.data != nil {
		return s.data, nil
	}
	if !d.reuse {
		s.out = nil
	}
	off, length := sh.buffer(j)
	var data []byte
	switch {
	case length == 0:
	case sh.codec < 0:
		sh.raw += length
		if sh.raw > MaxBatchBytes {
			return nil, limitErr("a batch's uncompressed buffers", sh.raw, MaxBatchBytes)
		}
		s.out = d.room(s.out, int(length))
		data = s.out[:length]
		if _, err := d.f.ra.ReadAt(data, sh.body+off); err != nil {
			return nil, fmt.Errorf("read buffer %d: %w", j, err)
		}
	default:
		if length < 8 {
			return nil, corruptf("compressed buffer %d of %d bytes", j, length)
		}
		s.in = room(s.in, int(length))
		in := s.in[:length]
		if _, err := d.f.ra.ReadAt(in, sh.body+off); err != nil {
			return nil, fmt.Errorf("read buffer %d: %w", j, err)
		}
		n := binary.LittleEndian.Uint64(in)
		if n == math.MaxUint64 { // stored as is
			sh.raw += length - 8
			if sh.raw > MaxBatchBytes {
				return nil, limitErr("a batch's uncompressed buffers", sh.raw, MaxBatchBytes)
			}
			data = in[8:]
			if !d.reuse {
				s.out = d.room(s.out, len(data))
				data = s.out[:copy(s.out, data)]
			}
			break
		}
		if n > MaxBatchBytes || int64(n) > MaxBatchBytes-sh.raw {
			return nil, limitErr(fmt.Sprintf("compressed buffer %d", j), n, MaxBatchBytes-sh.raw)
		}
		if sh.codec == 1 {
			// Frames that state their sizes must add up to the declared
			// length, before anything is allocated from it.
			if size, ok := zstdContentSize(in[8:]); ok && size != n {
				return nil, corruptf("buffer %d: zstd frames of %d bytes where %d are declared", j, size, n)
			}
		}
		sh.raw += int64(n)
		// The slack lets the zstd decoder copy in wide strides up to the
		// end (its "safe" variant, for a buffer without, is slower); a
		// frame that fills it is longer than declared, and refused.
		s.out = d.room(s.out, int(n)+zstdSlack)
		if s.frames != nil && sh.codec == 1 {
			var ok bool
			if data, ok = s.frames(s.out[:0:int(n)+zstdSlack], in[8:], int(n)); ok {
				break
			}
		}
		var err error
		if data, err = d.decompress(sh.codec, in[8:], s.out[:0:int(n)+zstdSlack], int(n)); err != nil {
			return nil, fmt.Errorf("buffer %d: %w", j, err)
		}
	}
	if len(data) < need {
		return nil, corruptf("buffer %d of %d bytes where %d are due", j, len(data), need)
	}
	if data == nil {
		data = []byte{}
	}
	s.gen, s.data = sh.gen, data
	return data, nil
}

// room is room(b, n), taking b from the Pool when there is none.
func (d *Decoder) room(b []byte, n int) []byte {
	if b == nil {
		b = d.Pool.get(n)
	}
	return room(b, n)
}

// zstdSlack is the room left past a buffer's declared length for the zstd
// decoder (its compressedBlockOverAlloc).
const zstdSlack = 16

// decompress decodes src into dst, whose capacity bounds the output: the
// buffer must decode to exactly want bytes. zstd frames that carry a
// content checksum are verified.
func (d *Decoder) decompress(codec int64, src, dst []byte, want int) ([]byte, error) {
	if codec == 1 {
		if d.zdec == nil {
			var err error
			d.zdec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.IgnoreChecksum(false),
				zstd.WithDecoderMaxWindow(MaxZstdWindow), zstd.WithDecoderMaxMemory(MaxBatchBytes),
				zstd.WithDecodeAllCapLimit(true))
			if err != nil {
				return nil, err
			}
		}
		out, err := d.zdec.DecodeAll(src, dst)
		if err != nil {
			if errors.Is(err, zstd.ErrWindowSizeExceeded) {
				return nil, fmt.Errorf("%w: a zstd window above %s", ErrLimit, SizeString(MaxZstdWindow))
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
	if d.lz == nil {
		d.lz = lz4.NewReader(nil)
	}
	d.lzSrc.Reset(src)
	d.lz.Reset(&d.lzSrc)
	out := dst[:want]
	if _, err := io.ReadFull(d.lz, out); err != nil {
		return nil, corruptf("lz4 frame shorter than the %d bytes declared: %v", want, err)
	}
	var one [1]byte
	if n, _ := d.lz.Read(one[:]); n != 0 {
		return nil, corruptf("lz4 frame longer than the %d bytes declared", want)
	}
	return out, nil
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

// Views is a string or binary view column: 16 bytes a row, the length and
// up to 12 bytes inline, or a prefix, a data buffer and an offset in it.
type Views struct {
	views []byte
	data  [][]byte
}

// Len is the number of rows.
func (v *Views) Len() int { return len(v.views) / 16 }

// Bytes returns row i's bytes, pointing into the decoded buffers.
func (v *Views) Bytes(i int) []byte {
	h := v.views[16*i : 16*i+16]
	n := binary.LittleEndian.Uint32(h)
	if n <= 12 {
		return h[4 : 4+n : 4+n]
	}
	b, off := v.data[binary.LittleEndian.Uint32(h[8:])], binary.LittleEndian.Uint32(h[12:])
	return b[off : off+n : off+n]
}

// View returns row i's 16-byte view as two words. Rows whose views are
// equal hold equal strings when the string fits in the view (length up to
// 12, zero-padded by bpftape's writer); a longer string's view names
// where it lies, so equal views of one batch hold equal strings only when
// the writer stored the string once.
func (v *Views) View(i int) (lo, hi uint64) {
	h := v.views[16*i : 16*i+16]
	return binary.LittleEndian.Uint64(h), binary.LittleEndian.Uint64(h[8:])
}

// Value returns row i as a string sharing the decoded buffers' memory, which
// must not change while it is used (see NewDecoder).
func (v *Views) Value(i int) string {
	b := v.Bytes(i)
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// Data returns the view buffer and the data buffers.
func (v *Views) Data() (views []byte, data [][]byte) { return v.views, v.data }

// check verifies that every view lies inside its data buffers. A view of
// up to 12 bytes holds them (the common case, a command name) and costs a
// comparison: a loop over the length words alone takes 0.42-0.45 ns a
// view, where one over Len's rows took 1.28-1.30 (a benchmark of 64Ki
// short views). A longer one, in the one data buffer bpftape's writer
// makes, is checked in the loop, where a call a view took 2 ns a row of a
// capture whose every comm is long (BenchmarkViewsCheck).
func (v *Views) check() error {
	views := v.views
	if len(v.data) == 1 {
		lim := uint64(len(v.data[0]))
		for off := 0; off+16 <= len(views); off += 16 {
			h := views[off : off+16 : off+16]
			if n := binary.LittleEndian.Uint32(h); n > 12 {
				bi, o := binary.LittleEndian.Uint32(h[8:]), binary.LittleEndian.Uint32(h[12:])
				if bi != 0 || (n|o)>>31 != 0 || uint64(o)+uint64(n) > lim {
					return v.checkLong(off/16, n)
				}
			}
		}
		return nil
	}
	for off := 0; off+16 <= len(views); off += 16 {
		if n := binary.LittleEndian.Uint32(views[off : off+4]); n > 12 {
			if err := v.checkLong(off/16, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkLong checks view i, of n bytes as its length word reads, past 12.
func (v *Views) checkLong(i int, n uint32) error {
	if int32(n) < 0 {
		return fmt.Errorf("row %d: string view of negative length", i)
	}
	h := v.views[16*i : 16*i+16]
	bi, off := int32(binary.LittleEndian.Uint32(h[8:])), int32(binary.LittleEndian.Uint32(h[12:]))
	if bi < 0 || int(bi) >= len(v.data) || off < 0 || int64(off)+int64(n) > int64(len(v.data[bi])) {
		return fmt.Errorf("row %d: string view outside its buffers", i)
	}
	return nil
}

// Strings is a utf8 column: offsets and values.
type Strings struct {
	offs, vals []byte
}

// Len is the number of strings.
func (s *Strings) Len() int { return len(s.offs)/4 - 1 }

// Value returns string i.
func (s *Strings) Value(i int) string {
	a, b := binary.LittleEndian.Uint32(s.offs[4*i:]), binary.LittleEndian.Uint32(s.offs[4*i+4:])
	return string(s.vals[a:b])
}

func (s *Strings) check() error {
	for i := 0; i < s.Len(); i++ {
		a, b := int32(binary.LittleEndian.Uint32(s.offs[4*i:])), int32(binary.LittleEndian.Uint32(s.offs[4*i+4:]))
		if a < 0 || b < a || int(b) > len(s.vals) {
			return corruptf("string %d at offsets %d..%d outside %d bytes", i, a, b, len(s.vals))
		}
	}
	return nil
}
