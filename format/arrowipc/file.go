package arrowipc

// Finding the messages of a file: through its footer, or, for a file
// without one (its writer was killed), by walking its stream.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v15/arrow"
)

// ErrNotArrow is wrapped by Open's error for a file that is neither an
// Arrow IPC file nor the start of one.
var ErrNotArrow = errors.New("not an Arrow IPC file")

// contToken starts every message of an Arrow IPC stream.
const contToken = 0xFFFFFFFF

// File is an Arrow IPC file opened for reading: its schema and where its
// dictionary and record batch messages are. Nothing is decoded until a
// Decoder reads a batch.
type File struct {
	// Schema is the footer's schema, or without a footer the stream's.
	Schema *arrow.Schema

	ra   io.ReaderAt
	size int64
	lay  layout
	ft   *footer
	end  int64 // where messages must end: the footer's start, or the file size

	// Without a footer:
	recs, dicts []block
	good        int64 // end of the last complete record batch
	stop        error // the message that stopped the walk, if one did
}

// Open reads the footer of the file of size bytes that ra holds, or, when
// it has no valid footer, walks its stream from the schema to the last
// whole record batch (see Streamed). Every message is checked against the
// file and the limits before anything is allocated from it; batch bodies
// are checked as a Decoder reads them.
func Open(ra io.ReaderAt, size int64) (*File, error) {
	head := make([]byte, 8)
	if _, err := ra.ReadAt(head, 0); err != nil || !bytes.Equal(head[:6], magic[:6]) {
		return nil, fmt.Errorf("%w: no Arrow file magic", ErrNotArrow)
	}
	f := &File{ra: ra, size: size}
	if hasFooter(ra, size) {
		if ft, schema, err := readFooter(ra, size); err == nil {
			f.ft, f.Schema, f.lay, f.end = ft, schema, ft.lay, ft.end
			return f, nil
		}
	}
	f.end = size
	if err := f.walk(); err != nil {
		var cut cutSchemaError
		if !errors.Is(err, ErrLimit) && !errors.As(err, &cut) {
			err = fmt.Errorf("%w: %w", ErrNotArrow, err)
		}
		return nil, err
	}
	return f, nil
}

// hasFooter checks the trailing "<footer length>ARROW1" of a complete file.
func hasFooter(ra io.ReaderAt, size int64) bool {
	if size < 8+10 {
		return false
	}
	var tail [10]byte
	if _, err := ra.ReadAt(tail[:], size-10); err != nil {
		return false
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	return bytes.Equal(tail[4:], magic[:6]) && n > 0 && n < size-18
}

// Streamed reports whether the file was read as a stream, having no valid
// footer. Its record batches are then those the file holds whole, in
// order after the schema and the dictionary batch, up to the first that is
// cut, an end-of-stream marker or a message that fails a check (StreamErr).
func (f *File) Streamed() bool { return f.ft == nil }

// StreamEnd is, for a file read as a stream, the end of its last whole
// record batch (8, after the magic, when it has none).
func (f *File) StreamEnd() int64 { return f.good }

// StreamErr is, for a file read as a stream, why the walk stopped at a
// message the file holds whole: one out of order or failing a check. It is
// nil when the stream ended or was cut.
func (f *File) StreamErr() error { return f.stop }

// NumBatches is the number of record batches.
func (f *File) NumBatches() int {
	if f.ft == nil {
		return len(f.recs)
	}
	return f.ft.nrec
}

// NumDictionaries is the number of dictionary batches.
func (f *File) NumDictionaries() int {
	if f.ft == nil {
		return len(f.dicts)
	}
	return f.ft.ndict
}

// BatchSpan returns where the message of record batch i starts and ends.
func (f *File) BatchSpan(i int) (start, end int64) {
	b := f.rec(i)
	return b.offset, b.offset + int64(b.meta) + b.body
}

// BatchMetadata returns the custom metadata of record batch i's message
// (Message.custom_metadata), which Writer.SetBatchMetadata wrote.
func (f *File) BatchMetadata(i int) (arrow.Metadata, error) {
	if i < 0 || i >= f.NumBatches() {
		return arrow.Metadata{}, fmt.Errorf("no batch %d", i)
	}
	var buf []byte
	if _, _, _, err := readBlock(f.ra, f.rec(i), msgRecordBatch, f.end, &buf); err != nil {
		return arrow.Metadata{}, err
	}
	inner := binary.LittleEndian.Uint32(buf[4:])
	m, err := fbRoot(buf[8 : 8+inner])
	if err != nil {
		return arrow.Metadata{}, err
	}
	return readKeyValues(m, 4, true)
}

func (f *File) rec(i int) block {
	if f.ft == nil {
		return f.recs[i]
	}
	return footerBlock(f.ft.buf, f.ft.recStart+24*i)
}

func (f *File) dict(i int) block {
	if f.ft == nil {
		return f.dicts[i]
	}
	return footerBlock(f.ft.buf, f.ft.dictStart+24*i)
}

// footerBlock reads a Block (offset:long, metaDataLength:int, pad,
// bodyLength:long) at p of a checked footer.
func footerBlock(buf []byte, p int) block {
	return block{i64At(buf, p), int32(binary.LittleEndian.Uint32(buf[p+8:])), i64At(buf, p+16)}
}

// footer is a checked file footer: version:short, schema:Schema,
// dictionaries:[Block], recordBatches:[Block], custom_metadata:[KeyValue].
type footer struct {
	buf              []byte
	dictStart, ndict int
	recStart, nrec   int
	end              int64 // where the footer starts: blocks must end before
	lay              layout
}

// readFooter checks the footer of a file of size bytes, its schema and
// every dictionary block it lists. Record batch blocks are checked as they
// are read.
func readFooter(ra io.ReaderAt, size int64) (*footer, *arrow.Schema, error) {
	var tail [10]byte
	if _, err := ra.ReadAt(tail[:], size-10); err != nil {
		return nil, nil, err
	}
	n := int64(binary.LittleEndian.Uint32(tail[:]))
	if n > MaxFooterBytes {
		return nil, nil, limitErr("the footer", n, MaxFooterBytes)
	}
	if n <= 0 || n > size-18 {
		return nil, nil, corruptf("footer of %d bytes", n)
	}
	ft := &footer{buf: make([]byte, n), end: size - 10 - n}
	if _, err := ra.ReadAt(ft.buf, ft.end); err != nil {
		return nil, nil, err
	}
	t, err := fbRoot(ft.buf)
	if err != nil {
		return nil, nil, err
	}
	s, ok, err := t.table(1)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, corruptf("footer without a schema")
	}
	schema, lay, err := readSchema(s)
	if err != nil {
		return nil, nil, err
	}
	ft.lay = lay
	if ft.dictStart, ft.ndict, err = t.vector(2, 24); err != nil {
		return nil, nil, err
	}
	if ft.recStart, ft.nrec, err = t.vector(3, 24); err != nil {
		return nil, nil, err
	}
	if _, err := readKeyValues(t, 4, false); err != nil {
		return nil, nil, err
	}
	var meta []byte
	var shape batchShape
	for i := 0; i < ft.ndict; i++ {
		hdr, body, bodyLen, err := readBlock(ra, footerBlock(ft.buf, ft.dictStart+24*i), msgDictionaryBatch, ft.end, &meta)
		if err == nil {
			err = parseDictionary(hdr, body, bodyLen, &shape)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("dictionary %d: %w", i, err)
		}
	}
	return ft, schema, nil
}

// parseDictionary checks a DictionaryBatch table (id:long,
// data:RecordBatch, isDelta:bool) into shape.
func parseDictionary(hdr fbTable, body, bodyLen int64, shape *batchShape) error {
	data, ok, err := hdr.table(1)
	if err != nil {
		return err
	}
	if !ok {
		return corruptf("dictionary batch without data")
	}
	return shape.parse(data, body, bodyLen, dictLayout, false)
}

// readBlock reads and parses the message of block b, which must be of
// type want and end before end, into *buf; it returns the message header
// and where its body is.
func readBlock(ra io.ReaderAt, b block, want int, end int64, buf *[]byte) (fbTable, int64, int64, error) {
	off, ml, bodyLen := b.offset, int64(b.meta), b.body
	switch {
	case ml > MaxMessageMeta+8:
		return fbTable{}, 0, 0, limitErr("a block's metadata", ml, MaxMessageMeta)
	case bodyLen > MaxBatchBytes:
		return fbTable{}, 0, 0, limitErr("a block's body", bodyLen, MaxBatchBytes)
	case off < 8 || ml < 8 || bodyLen < 0 || off&7 != 0 || ml&7 != 0 || bodyLen&7 != 0 || off+ml+bodyLen > end:
		return fbTable{}, 0, 0, corruptf("block at %d+%d+%d outside the %d bytes before the footer", off, ml, bodyLen, end)
	}
	*buf = room(*buf, int(ml))
	meta := (*buf)[:ml]
	if _, err := ra.ReadAt(meta, off); err != nil {
		return fbTable{}, 0, 0, err
	}
	inner := int64(binary.LittleEndian.Uint32(meta[4:]))
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

// cutSchemaError is walk's error for a file that has Arrow's magic and
// ends within or before its schema: it is an ErrNotArrow and an
// ErrCorrupt, and says so in words that do not contradict each other.
type cutSchemaError int64

func (e cutSchemaError) Error() string {
	return fmt.Sprintf("the file ends before its schema is complete, %d bytes in: a capture cut short as it began", int64(e))
}

func (e cutSchemaError) Is(target error) bool { return target == ErrNotArrow || target == ErrCorrupt }

// errTruncated says a message runs past the end of the file: a file whose
// writer was killed ends so.
var errTruncated = errors.New("message runs past the end of the file")

// walk finds the messages of a file without a footer: the schema, the
// dictionary batch if the schema has a dictionary column, then record
// batches, up to the first message the file does not hold whole or an
// end-of-stream marker. A message out of order or failing a check stops
// the walk there (f.stop); before the schema, it fails it.
func (f *File) walk() error {
	pos := int64(8)
	f.good = pos
	var meta []byte
	var shape batchShape
	for {
		b, hdr, typ, bodyLen, err := f.nextMessage(pos, &meta)
		if err == errTruncated || (err == nil && b.meta == 0) {
			break // cut, or an end-of-stream marker
		}
		if err == nil {
			switch {
			case typ == msgSchema && f.Schema == nil:
				if bodyLen != 0 {
					err = corruptf("schema message with a body")
				} else {
					f.Schema, f.lay, err = readSchema(hdr)
				}
			case f.Schema == nil:
				err = corruptf("message of type %d where the schema is due", typ)
			case bytes.IndexByte(f.lay, layDict) >= 0 && len(f.dicts) == 0:
				if typ != msgDictionaryBatch {
					err = corruptf("message of type %d where the dictionary is due", typ)
				} else if err = parseDictionary(hdr, b.offset+int64(b.meta), bodyLen, &shape); err == nil {
					f.dicts = append(f.dicts, b)
				}
			case typ == msgRecordBatch:
				if err = shape.parse(hdr, b.offset+int64(b.meta), bodyLen, f.lay, false); err == nil {
					f.recs = append(f.recs, b)
					f.good = b.offset + int64(b.meta) + bodyLen
				}
			default:
				err = corruptf("message of type %d after the record batches began", typ)
			}
		}
		if err != nil {
			err = fmt.Errorf("message at offset %d: %w", pos, err)
			if f.Schema == nil {
				return err
			}
			f.stop = err
			break
		}
		pos = b.offset + int64(b.meta) + bodyLen
	}
	if f.Schema == nil {
		return cutSchemaError(f.size)
	}
	return nil
}

// nextMessage reads the message at pos into *buf and checks its framing
// against the file and the limits. It returns errTruncated for a message
// the file does not hold entirely, and a block of metadata length 0 for an
// end-of-stream marker.
func (f *File) nextMessage(pos int64, buf *[]byte) (b block, hdr fbTable, typ int, bodyLen int64, err error) {
	var pre [8]byte
	n, _ := f.ra.ReadAt(pre[:], pos)
	if n < 4 {
		return b, hdr, 0, 0, errTruncated
	}
	switch binary.LittleEndian.Uint32(pre[:]) {
	case 0: // end of stream, before Arrow 0.15
		return b, hdr, 0, 0, nil
	case contToken:
	default:
		return b, hdr, 0, 0, corruptf("no message at offset %d", pos)
	}
	if n < 8 {
		return b, hdr, 0, 0, errTruncated
	}
	ml := int64(binary.LittleEndian.Uint32(pre[4:]))
	if ml == 0 { // end of stream
		return b, hdr, 0, 0, nil
	}
	if ml > MaxMessageMeta {
		return b, hdr, 0, 0, limitErr("message metadata", ml, MaxMessageMeta)
	}
	if pos+8+ml > f.size {
		return b, hdr, 0, 0, errTruncated
	}
	*buf = room(*buf, int(ml))
	meta := (*buf)[:ml]
	if _, err := f.ra.ReadAt(meta, pos+8); err != nil {
		return b, hdr, 0, 0, errTruncated
	}
	hdr, typ, bodyLen, err = parseMessage(meta)
	if err != nil {
		return b, hdr, 0, 0, err
	}
	if bodyLen > MaxBatchBytes {
		return b, hdr, 0, 0, limitErr("a message body", bodyLen, MaxBatchBytes)
	}
	if pos+8+ml+bodyLen > f.size {
		return b, hdr, 0, 0, errTruncated
	}
	if ml&7 != 0 || bodyLen&7 != 0 {
		return b, hdr, 0, 0, corruptf("message of %d+%d bytes, not 8-byte aligned", ml, bodyLen)
	}
	return block{offset: pos, meta: int32(8 + ml), body: bodyLen}, hdr, typ, bodyLen, nil
}

// room returns b with room for n bytes, reallocated (8-byte aligned, at
// least 8 bytes) when it has less.
func room(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:cap(b)]
	}
	return make([]byte, (max(n, 8)+7)&^7)
}
