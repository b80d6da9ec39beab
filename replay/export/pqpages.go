package export

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/metadata"
	"github.com/apache/arrow/go/v15/parquet/schema"
)

// pqFile writes a Parquet file a row group at a time from pqColumns,
// encoding each column chunk's pages itself: one version 2 data page a
// chunk (after its dictionary page, for a dictionary column), definition
// levels and dictionary indices in the RLE/bit-packed hybrid, integers
// plain or (time) as DELTA_BINARY_PACKED, strings by the row group's
// dictionary or, past dictPageLimit/2, plain. Arrow Go's parquet/file
// and metadata write the rest: the page headers, the column chunks' and
// the file's metadata, with statistics made by its own TypedStatistics,
// so that the footer is the one its writer made.
//
// Why not Arrow Go's column writers, which wrote the pages before: they
// take the definition levels and dictionary indices one value at a time
// through a run-length encoder (RleEncoder.Put), whatever the bits
// already say, and that was a fifth of an export's CPU; the values went
// through an encoder interface and a copy or two more. An export of the
// 20M-event synthesized capture took 4.7-5.1 s of CPU with them and
// takes 3.4-3.5 s here, for a file of the same size (bench/README.md,
// "Parquet pages written by bpftape").
type pqFile struct {
	sink   *tellSink
	meta   *metadata.FileMetaDataBuilder
	props  *parquet.WriterProperties
	codec  compress.Compression
	pager  file.PageWriter
	groups int16
	// Scratch, kept from chunk to chunk.
	levels, values, page []byte
	comp                 bytes.Buffer
}

// tellSink counts the bytes written through it, for the offsets that the
// page writer and the metadata record.
type tellSink struct {
	w io.Writer
	n int64
}

func (s *tellSink) Write(b []byte) (int, error) {
	n, err := s.w.Write(b)
	s.n += int64(n)
	return n, err
}

func (s *tellSink) Tell() int64 { return s.n }

var pqMagic = []byte("PAR1")

// newPQFile starts a Parquet file of schema root on w: its magic number.
func newPQFile(w io.Writer, root *schema.GroupNode, props *parquet.WriterProperties, kv metadata.KeyValueMetadata, codec compress.Compression) (*pqFile, error) {
	sc := schema.NewSchema(root)
	f := &pqFile{sink: &tellSink{w: w}, props: props, codec: codec,
		meta: metadata.NewFileMetadataBuilder(sc, props, kv)}
	if _, err := f.sink.Write(pqMagic); err != nil {
		return nil, err
	}
	return f, nil
}

// writeRowGroup writes the n rows gathered in cols, which are in the
// schema's order, as one row group.
func (f *pqFile) writeRowGroup(cols []*pqColumn, n int) error {
	rg := f.meta.AppendRowGroup()
	var total int64
	for k, c := range cols {
		cm := rg.NextColumnChunk()
		var err error
		if f.pager == nil {
			f.pager, err = file.NewPageWriter(f.sink, f.codec, compress.DefaultCompressionLevel, cm, f.groups, int16(k), memory.DefaultAllocator, false, nil, nil)
		} else {
			err = f.pager.Reset(f.sink, f.codec, compress.DefaultCompressionLevel, cm, f.groups, int16(k), nil, nil)
		}
		if err != nil {
			return err
		}
		written, dict, err := f.writeChunk(c, n, cm)
		if err != nil {
			return fmt.Errorf("column %s: %w", cm.Descr().Name(), err)
		}
		if err := f.pager.Close(dict, false); err != nil {
			return err
		}
		total += written
	}
	rg.SetNumRows(n)
	if err := rg.Finish(total, f.groups); err != nil {
		return err
	}
	f.groups++
	return nil
}

// close writes the footer: the file's metadata, its length, the magic.
func (f *pqFile) close() error {
	md, err := f.meta.Finish()
	if err != nil {
		return err
	}
	n, err := md.WriteTo(f.sink, nil)
	if err != nil {
		return err
	}
	var tail [8]byte
	binary.LittleEndian.PutUint32(tail[:], uint32(n))
	copy(tail[4:], pqMagic)
	_, err = f.sink.Write(tail[:])
	return err
}

// writeChunk writes column c's n rows as the column chunk of cm, with its
// statistics, and returns the bytes its pages took and whether it has a
// dictionary page.
func (f *pqFile) writeChunk(c *pqColumn, n int, cm *metadata.ColumnChunkMetaDataBuilder) (written int64, dict bool, err error) {
	descr := cm.Descr()
	nulls := 0
	f.levels = f.levels[:0]
	if c.nullable {
		if len(c.defs) != n {
			return 0, false, fmt.Errorf("%d definition levels for %d rows", len(c.defs), n)
		}
		for _, d := range c.defs {
			nulls += int(1 - d)
		}
		f.levels = appendHybrid(f.levels, c.defs, 1)
	}
	stats := metadata.NewStatistics(descr, memory.DefaultAllocator)
	enc := parquet.Encodings.Plain
	f.values = f.values[:0]
	switch {
	case c.dictKind() || c.kind == pqStr:
		if c.kind == pqStr {
			c.dictOf()
		}
		if c.dict == nil || c.dictSize > dictPageLimit/2 {
			// Plain values: every row's bytes.
			vals := c.bytes
			if c.dict != nil {
				vals = make([]parquet.ByteArray, len(c.idx))
				for j, k := range c.idx {
					vals[j] = c.dict[k]
				}
			}
			stats.(*metadata.ByteArrayStatistics).Update(vals, int64(nulls))
			f.values = appendPlainBytes(f.values, vals)
			break
		}
		bs := stats.(*metadata.ByteArrayStatistics)
		// The statistics of the dictionary's values are those of the
		// rows, which hold each of them at least once.
		bs.Update(c.dict, int64(nulls))
		bs.IncNumValues(int64(len(c.idx) - len(c.dict)))
		page := appendPlainBytes(f.page[:0], c.dict)
		f.page = page
		w, err := f.pager.WriteDictionaryPage(file.NewDictionaryPage(memory.NewBufferBytes(page), int32(len(c.dict)), f.props.DictionaryPageEncoding()))
		if err != nil {
			return 0, false, err
		}
		written += w
		dict = true
		width := 1
		if len(c.dict) > 1 {
			width = bits.Len32(uint32(len(c.dict) - 1))
		}
		f.values = appendHybrid(append(f.values, byte(width)), c.idx, width)
		enc = f.props.DictionaryIndexEncoding()
	case c.phys == parquet.Types.Int32:
		stats.(*metadata.Int32Statistics).Update(c.i32, int64(nulls))
		f.values = appendPlainInts(f.values, c.i32)
	case c.kind == pqTime:
		stats.(*metadata.Int64Statistics).Update(c.i64, int64(nulls))
		f.values = appendDeltaBinaryPacked(f.values, c.i64)
		enc = parquet.Encodings.DeltaBinaryPacked
	default:
		stats.(*metadata.Int64Statistics).Update(c.i64, int64(nulls))
		f.values = appendPlainInts(f.values, c.i64)
	}
	es, err := stats.Encode()
	if err != nil {
		return written, dict, err
	}
	es.ApplyStatSizeLimits(int(f.props.MaxStatsSizeFor(descr.Path())))
	es.Signed = descr.SortOrder() == schema.SortSIGNED

	// A version 2 page: the levels as they are, then the values,
	// compressed.
	data := f.values
	if f.pager.HasCompressor() {
		f.comp.Reset()
		data = f.pager.Compress(&f.comp, f.values)
	}
	page := append(append(f.page[:0], f.levels...), data...)
	f.page = page
	dp := file.NewDataPageV2WithStats(memory.NewBufferBytes(page), int32(n), int32(nulls), int32(n), enc,
		int32(len(f.levels)), 0, int32(len(f.levels)+len(f.values)), f.pager.HasCompressor(), es)
	w, err := f.pager.WriteDataPage(dp)
	written += w
	if err != nil {
		return written, dict, err
	}
	if n > 0 && es.IsSet() {
		cm.SetStats(es)
	}
	return written, dict, nil
}

// dictOf makes the dictionary of a string field's row group (its bytes):
// its distinct values in order of first use, and each row's index, or no
// dictionary (nil) once its values take more than the dictionary page
// may.
func (c *pqColumn) dictOf() {
	c.dict, c.idx, c.dictSize = nil, c.idx[:0], 0
	clear(c.slots)
	if c.slots == nil {
		c.slots = map[string]int32{}
	}
	for _, v := range c.bytes {
		key := unsafe.String(unsafe.SliceData(v), len(v))
		k, ok := c.slots[key]
		if !ok {
			if c.dictSize+len(v) > dictPageLimit/2 {
				c.dict, c.idx, c.dictSize = nil, c.idx[:0], 0
				return
			}
			k = c.dictAdd(v, key)
		}
		c.idx = append(c.idx, k)
	}
	if c.dict == nil {
		c.dict = []parquet.ByteArray{} // no rows: an empty dictionary
	}
}

// appendPlainBytes appends vals in Parquet's PLAIN encoding of byte
// arrays: each one's length (4 bytes, little-endian), then its bytes.
func appendPlainBytes(dst []byte, vals []parquet.ByteArray) []byte {
	for _, v := range vals {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v)))
		dst = append(dst, v...)
	}
	return dst
}

// appendPlainInts appends vals in Parquet's PLAIN encoding: 4 or 8 bytes
// each by the type, little-endian.
func appendPlainInts[T int32 | int64](dst []byte, vals []T) []byte {
	size := int(unsafe.Sizeof(T(0)))
	n := len(dst)
	dst = grow(dst, size*len(vals))
	for i, v := range vals {
		if size == 4 {
			binary.LittleEndian.PutUint32(dst[n+4*i:], uint32(v))
		} else {
			binary.LittleEndian.PutUint64(dst[n+8*i:], uint64(v))
		}
	}
	return dst
}

// grow extends dst by n bytes.
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) < n {
		dst = append(dst[:cap(dst)], make([]byte, len(dst)+n-cap(dst))...)[:len(dst)]
	}
	return dst[:len(dst)+n]
}

// Parquet's RLE/bit-packed hybrid (the definition levels, the dictionary
// indices): a run of at least hybridRun equal values is one RLE run;
// other values go in bit-packed runs of groups of 8, at most 63 groups
// each (as parquet-mr and Arrow write them, the header one byte).
const (
	hybridRun       = 8
	hybridMaxGroups = 63
)

// appendHybrid appends vals, each of width bits (1 to 32), in the hybrid
// encoding, without the length that a version 1 page puts before levels.
func appendHybrid[T int16 | int32](dst []byte, vals []T, width int) []byte {
	n := len(vals)
	for i := 0; i < n; {
		if j := runEnd(vals, i, hybridRun); j-i >= hybridRun {
			j = runEnd(vals, i, n)
			dst = binary.AppendUvarint(dst, uint64(j-i)<<1)
			v := uint32(vals[i])
			for b := 0; b < (width+7)/8; b++ {
				dst = append(dst, byte(v>>(8*b)))
			}
			i = j
			continue
		}
		start, groups := i, 0
		for i < n && groups < hybridMaxGroups {
			i += 8
			groups++
			if i+hybridRun <= n && runEnd(vals, i, hybridRun)-i >= hybridRun {
				break
			}
		}
		dst = binary.AppendUvarint(dst, uint64(groups)<<1|1)
		dst = appendBitPacked(dst, vals[start:min(i, n)], 8*groups, width)
		i = min(i, n)
	}
	return dst
}

// runEnd is the end of the run of values equal to vals[i], looked at no
// further than limit values from i.
func runEnd[T int16 | int32](vals []T, i, limit int) int {
	j := i + 1
	for j < len(vals) && j-i < limit && vals[j] == vals[i] {
		j++
	}
	return j
}

// appendBitPacked appends vals packed at width bits each from the least
// significant bit up, as count values (the missing ones zeros).
func appendBitPacked[T int16 | int32](dst []byte, vals []T, count, width int) []byte {
	if width <= 8 {
		// A group of 8 values fits a word: width bytes of it.
		mask := uint64(1)<<width - 1
		var word [8]byte
		for k := 0; k < count; k += 8 {
			var acc uint64
			if k+8 <= len(vals) {
				g := vals[k : k+8 : k+8]
				acc = uint64(g[0])&mask | (uint64(g[1])&mask)<<width | (uint64(g[2])&mask)<<(2*width) |
					(uint64(g[3])&mask)<<(3*width) | (uint64(g[4])&mask)<<(4*width) | (uint64(g[5])&mask)<<(5*width) |
					(uint64(g[6])&mask)<<(6*width) | (uint64(g[7])&mask)<<(7*width)
			} else {
				for j := k; j < len(vals); j++ {
					acc |= (uint64(vals[j]) & mask) << ((j - k) * width)
				}
			}
			binary.LittleEndian.PutUint64(word[:], acc)
			dst = append(dst, word[:width]...)
		}
		return dst
	}
	var acc uint64
	nb := 0
	mask := uint64(1)<<width - 1
	for k := range count {
		var v uint64
		if k < len(vals) {
			v = uint64(vals[k]) & mask
		}
		acc |= v << nb
		nb += width
		for nb >= 8 {
			dst = append(dst, byte(acc))
			acc >>= 8
			nb -= 8
		}
	}
	return dst // count*width is a multiple of 8: nothing is left in acc
}

// Parquet's DELTA_BINARY_PACKED: blocks of deltaBlock values, each in
// deltaMinis miniblocks with a bit width of their own.
const (
	deltaBlock = 128
	deltaMinis = 4
	deltaMini  = deltaBlock / deltaMinis
)

// appendDeltaBinaryPacked appends vals in the DELTA_BINARY_PACKED encoding.
// The deltas wrap as two's complement 64-bit integers do.
func appendDeltaBinaryPacked(dst []byte, vals []int64) []byte {
	dst = binary.AppendUvarint(dst, deltaBlock)
	dst = binary.AppendUvarint(dst, deltaMinis)
	dst = binary.AppendUvarint(dst, uint64(len(vals)))
	if len(vals) == 0 {
		return binary.AppendVarint(dst, 0)
	}
	dst = binary.AppendVarint(dst, vals[0])
	var deltas [deltaBlock]uint64
	for i := 1; i < len(vals); i += deltaBlock {
		n := min(deltaBlock, len(vals)-i)
		least := int64(math.MaxInt64)
		for j := range n {
			d := vals[i+j] - vals[i+j-1]
			deltas[j] = uint64(d)
			least = min(least, d)
		}
		dst = binary.AppendVarint(dst, least)
		var widths [deltaMinis]byte
		for m := 0; m*deltaMini < n; m++ {
			var or uint64
			for j := m * deltaMini; j < min(n, (m+1)*deltaMini); j++ {
				deltas[j] -= uint64(least)
				or |= deltas[j]
			}
			widths[m] = byte(bits.Len64(or))
		}
		dst = append(dst, widths[:]...)
		for m := 0; m*deltaMini < n; m++ {
			for j := n; j < (m+1)*deltaMini; j++ {
				deltas[j] = 0 // the last miniblock's padding
			}
			dst = appendPacked64(dst, deltas[m*deltaMini:(m+1)*deltaMini], int(widths[m]))
		}
	}
	return dst
}

// appendPacked64 appends vals packed at width bits each (0 to 64), from
// the least significant bit up.
func appendPacked64(dst []byte, vals []uint64, width int) []byte {
	if width == 0 {
		return dst
	}
	var acc uint64
	nb := 0
	for _, v := range vals {
		// v has at most width bits: what does not fit acc goes in the
		// next word.
		acc |= v << nb
		if nb+width >= 64 {
			dst = binary.LittleEndian.AppendUint64(dst, acc)
			if nb > 0 {
				acc = v >> (64 - nb)
			} else {
				acc = 0
			}
			nb += width - 64
			continue
		}
		nb += width
	}
	for ; nb > 0; nb -= 8 {
		dst = append(dst, byte(acc))
		acc >>= 8
	}
	return dst
}
