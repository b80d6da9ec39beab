package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
)

var arrowMagic = []byte("ARROW1")

// ErrNotCapture is returned by Open for a file that is not a bpftape capture.
var ErrNotCapture = errors.New("not a bpftape capture")

// Reader streams the batches of a capture, one at a time, so that memory
// does not grow with the file. A file without its footer (a recorder that
// was killed) is read as far as its last complete batch and Recovered says so.
type Reader struct {
	Meta   *Meta
	Schema *arrow.Schema
	// Recovered is set when the file had no valid footer; RecoverErr says
	// where the stream stopped (nil when it stopped at a batch boundary).
	Recovered  bool
	RecoverErr error
	// Size is the file size; RawBytes the uncompressed size of the batches read.
	Size     int64
	RawBytes int64

	f      *os.File
	fr     *ipc.FileReader
	sr     *ipc.Reader
	next   int
	batch  Batch
	err    error
	cols   map[string]int
	dictOK bool
	foot   *footer // the checked footer, when reading one
	guard  *guard  // checks and counts what the stream reader consumes, when recovering
	good   int64   // end of the last complete batch read, when recovering

	blocks *blockIndex // where Project reads batches, once it was called

	// SkipCorrupt makes Next pass over a batch of a file with a footer
	// whose bytes are corrupt (ErrCorrupt, such as a failed zstd checksum)
	// instead of stopping there; Skipped then lists each one's error.
	SkipCorrupt bool
	Skipped     []error
}

// Open opens a capture for reading.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := newReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

func newReader(f *os.File) (_ *Reader, err error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	r := &Reader{f: f, Size: st.Size()}
	head := make([]byte, 8)
	if _, err := f.ReadAt(head, 0); err != nil || !bytes.HasPrefix(head, arrowMagic) {
		return nil, fmt.Errorf("%w: no Arrow file magic", ErrNotCapture)
	}
	defer func() {
		if p := recover(); p != nil {
			err = corruptf("%v", p)
		}
	}()
	// Nothing reaches Arrow's readers unchecked (see limits.go).
	if hasFooter(f, r.Size) {
		if ft, ferr := checkFooter(f, r.Size); ferr == nil {
			if fr, ferr := ipc.NewFileReader(f); ferr == nil {
				r.fr, r.foot = fr, ft
				r.Schema = fr.Schema()
			}
		}
	}
	if r.fr == nil {
		r.Recovered = true
		r.guard = &guard{ra: f, size: r.Size, pos: 8, limit: 8}
		sr, err := ipc.NewReader(r.guard)
		if err != nil {
			if errors.Is(r.guard.err, ErrLimit) {
				return nil, r.guard.err
			}
			return nil, fmt.Errorf("%w: %v", ErrNotCapture, err)
		}
		r.sr = sr
		r.Schema = sr.Schema()
	}
	if err := r.checkSchema(); err != nil {
		r.release()
		return nil, err
	}
	return r, nil
}

// hasFooter checks the trailing "<footer length>ARROW1" of a complete file.
func hasFooter(f *os.File, size int64) bool {
	if size < 8+10 {
		return false
	}
	tail := make([]byte, 10)
	if _, err := f.ReadAt(tail, size-10); err != nil {
		return false
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	return bytes.Equal(tail[4:], arrowMagic) && n > 0 && n < size-18
}

// checkSchema validates that the schema is a bpftape schema whose metadata
// describes its columns, so that later accesses need no checks.
func (r *Reader) checkSchema() error {
	md := r.Schema.Metadata()
	i := md.FindKey(MetadataKey)
	if i < 0 {
		return fmt.Errorf("%w: no %q schema metadata", ErrNotCapture, MetadataKey)
	}
	meta, err := decodeMeta(md.Values()[i])
	if err != nil {
		return err
	}
	r.Meta = meta
	if len(meta.Probes) == 0 || len(meta.Probes) > MaxProbes {
		return corruptf("%d probes", len(meta.Probes))
	}
	fields := r.Schema.Fields()
	want := []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32,
		arrow.PrimitiveTypes.Uint32, arrow.BinaryTypes.StringView, nil, arrow.PrimitiveTypes.Uint64}
	if len(fields) < numFixed {
		return corruptf("%d columns", len(fields))
	}
	for i, n := range fixedNames {
		if fields[i].Name != n {
			return corruptf("column %d is %q, want %q", i, fields[i].Name, n)
		}
		if want[i] != nil && !arrow.TypeEqual(fields[i].Type, want[i]) {
			return corruptf("column %s has type %v", n, fields[i].Type)
		}
	}
	dt, ok := fields[ColProbe].Type.(*arrow.DictionaryType)
	if !ok || !arrow.TypeEqual(dt.IndexType, arrow.PrimitiveTypes.Uint16) || !arrow.TypeEqual(dt.ValueType, arrow.BinaryTypes.String) {
		return corruptf("probe column has type %v", fields[ColProbe].Type)
	}
	r.cols = map[string]int{}
	for i, f := range fields {
		r.cols[f.Name] = i
	}
	for _, p := range meta.Probes {
		for _, f := range p.Fields {
			ci, ok := r.cols[f.Column]
			if !ok || ci < numFixed || f.Type.arrow() == nil || !arrow.TypeEqual(fields[ci].Type, f.Type.arrow()) {
				return corruptf("probe %s field %s: column %q missing or of another type", p.Name, f.Name, f.Column)
			}
		}
	}
	return nil
}

// Column returns the index of the named column, or -1.
func (r *Reader) Column(name string) int {
	if i, ok := r.cols[name]; ok {
		return i
	}
	return -1
}

// Next reads the next batch; it returns false at the end or on error (see Err).
func (r *Reader) Next() (ok bool) {
	if r.err != nil {
		return false
	}
	defer func() {
		if p := recover(); p != nil {
			r.err = corruptf("%v", p)
			ok = false
		}
	}()
	var rec arrow.Record
	if r.fr != nil {
		for {
			if r.next >= r.fr.NumRecords() {
				return false
			}
			err := r.foot.checkRecord(r.f, r.next)
			if err == nil {
				break
			}
			err = fmt.Errorf("batch %d: %w", r.next, err)
			if !r.SkipCorrupt || !errors.Is(err, ErrCorrupt) {
				r.err = err
				return false
			}
			r.Skipped = append(r.Skipped, err)
			r.next++
		}
		var err error
		if rec, err = r.fr.Record(r.next); err != nil {
			r.err = fmt.Errorf("batch %d: %w", r.next, err)
			return false
		}
	} else {
		if !r.sr.Next() {
			if err := r.guard.err; errors.Is(err, ErrLimit) {
				r.err = fmt.Errorf("batch %d: %w", r.next, err)
				return false
			}
			// Arrow's stream reader calls some cuts a clean end: judge by bytes.
			if tail := r.Size - 8 - r.good; tail > 0 {
				r.RecoverErr = fmt.Errorf("incomplete batch: %d bytes at offset %d", tail, 8+r.good)
				if err := r.sr.Err(); err != nil {
					r.RecoverErr = fmt.Errorf("%w (%v)", r.RecoverErr, err)
				}
			}
			return false
		}
		rec = r.sr.Record()
		r.good = r.guard.pos - 8
	}
	r.next++
	if err := r.batch.load(rec, r.Meta); err != nil {
		r.err = fmt.Errorf("batch %d: %w", r.next-1, err)
		return false
	}
	if !r.dictOK {
		d := rec.Column(ColProbe).(*array.Dictionary).Dictionary().(*array.String)
		for i, p := range r.Meta.Probes {
			if i >= d.Len() || d.Value(i) != p.Name {
				r.err = corruptf("probe dictionary does not match metadata at %d", i)
				return false
			}
		}
		r.dictOK = true
	}
	r.RawBytes += recordBytes(rec)
	return true
}

// Batch returns the current batch; valid until the next call to Next.
func (r *Reader) Batch() *Batch { return &r.batch }

// Batches is the number of batches read so far.
func (r *Reader) Batches() int { return r.next }

// Err returns the error that stopped Next, if any. A truncated last batch of
// a recovered file is not an error: see RecoverErr.
func (r *Reader) Err() error { return r.err }

// Close releases the reader and its file.
func (r *Reader) Close() error {
	r.release()
	return r.f.Close()
}

func (r *Reader) release() {
	if r.fr != nil {
		r.fr.Close()
		r.fr = nil
	}
	if r.sr != nil {
		r.sr.Release()
		r.sr = nil
	}
}

func recordBytes(rec arrow.Record) int64 {
	var n int64
	var add func(d arrow.ArrayData)
	add = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
		for _, c := range d.Children() {
			add(c)
		}
	}
	for _, c := range rec.Columns() {
		add(c.Data())
	}
	return n
}

// Batch is a decoded record batch with typed views of its columns.
type Batch struct {
	Len   int
	Time  []int64
	CPU   []uint16
	PID   []uint32
	TID   []uint32
	Probe []uint16
	comm  *array.StringView
	lost  *array.Uint64
	cols  []Column
	rec   arrow.Record
}

func (b *Batch) load(rec arrow.Record, m *Meta) error {
	b.rec = rec
	b.Len = int(rec.NumRows())
	b.Time = rec.Column(ColTime).(*array.Int64).Int64Values()
	b.CPU = rec.Column(ColCPU).(*array.Uint16).Uint16Values()
	b.PID = rec.Column(ColPID).(*array.Uint32).Uint32Values()
	b.TID = rec.Column(ColTID).(*array.Uint32).Uint32Values()
	if err := checkValidity(rec); err != nil {
		return err
	}
	b.comm = rec.Column(ColComm).(*array.StringView)
	if err := checkViews(b.comm); err != nil {
		return fmt.Errorf("comm: %w", err)
	}
	b.lost = rec.Column(ColLost).(*array.Uint64)
	idx := rec.Column(ColProbe).(*array.Dictionary).Indices()
	u, ok := idx.(*array.Uint16)
	if !ok {
		return fmt.Errorf("probe indices are %T", idx)
	}
	b.Probe = u.Uint16Values()
	if idx.NullN() > 0 {
		return fmt.Errorf("probe column has nulls")
	}
	for _, p := range b.Probe {
		if int(p) >= len(m.Probes) {
			return fmt.Errorf("probe index %d out of range", p)
		}
	}
	if len(b.Time) != b.Len || len(b.CPU) != b.Len || len(b.PID) != b.Len || len(b.TID) != b.Len || len(b.Probe) != b.Len || b.comm.Len() != b.Len || b.lost.Len() != b.Len {
		return fmt.Errorf("columns of unequal length")
	}
	b.cols = b.cols[:0]
	for ci := numFixed; ci < int(rec.NumCols()); ci++ {
		c, err := newColumn(rec.Column(ci))
		if err != nil {
			return fmt.Errorf("column %s: %w", rec.ColumnName(ci), err)
		}
		if c.Len != b.Len {
			return fmt.Errorf("columns of unequal length")
		}
		b.cols = append(b.cols, c)
	}
	return nil
}

// Comm returns row i's command name.
func (b *Batch) Comm(i int) string { return b.comm.Value(i) }

// Lost returns the count of a loss record; ok is false for an event row.
func (b *Batch) Lost(i int) (n uint64, ok bool) {
	if b.lost.IsNull(i) {
		return 0, false
	}
	return b.lost.Value(i), true
}

// Col returns the column at schema index ci, which must be a field column
// (ci >= the fixed columns), as found with Reader.Column.
func (b *Batch) Col(ci int) *Column { return &b.cols[ci-numFixed] }

// Column is a typed view of one field column of a batch.
type Column struct {
	Type Type
	Len  int
	arr  arrow.Array
	i8   []int8
	i16  []int16
	i32  []int32
	i64  []int64
	u8   []uint8
	u16  []uint16
	u32  []uint32
	u64  []uint64
	str  *array.StringView
}

func newColumn(a arrow.Array) (Column, error) {
	c := Column{arr: a, Len: a.Len()}
	switch a := a.(type) {
	case *array.Int8:
		c.Type, c.i8 = Int8, a.Int8Values()
	case *array.Int16:
		c.Type, c.i16 = Int16, a.Int16Values()
	case *array.Int32:
		c.Type, c.i32 = Int32, a.Int32Values()
	case *array.Int64:
		c.Type, c.i64 = Int64, a.Int64Values()
	case *array.Uint8:
		c.Type, c.u8 = Uint8, a.Uint8Values()
	case *array.Uint16:
		c.Type, c.u16 = Uint16, a.Uint16Values()
	case *array.Uint32:
		c.Type, c.u32 = Uint32, a.Uint32Values()
	case *array.Uint64:
		c.Type, c.u64 = Uint64, a.Uint64Values()
	case *array.StringView:
		c.Type, c.str = String, a
		if err := checkViews(a); err != nil {
			return c, err
		}
	default:
		return c, fmt.Errorf("unsupported type %v", a.DataType())
	}
	return c, nil
}

// Valid reports whether row i holds a value (the probe of the row has this field).
func (c *Column) Valid(i int) bool { return c.arr.IsValid(i) }

// Int returns row i as int64: signed types sign-extend, unsigned ones
// zero-extend (a uint64 above 2^63 wraps to a negative number).
func (c *Column) Int(i int) int64 {
	switch c.Type {
	case Int8:
		return int64(c.i8[i])
	case Int16:
		return int64(c.i16[i])
	case Int32:
		return int64(c.i32[i])
	case Int64:
		return c.i64[i]
	case Uint8:
		return int64(c.u8[i])
	case Uint16:
		return int64(c.u16[i])
	case Uint32:
		return int64(c.u32[i])
	case Uint64:
		return int64(c.u64[i])
	}
	return 0
}

// Str returns row i of a string column, or the decimal value of an integer.
func (c *Column) Str(i int) string {
	if c.Type == String {
		return c.str.Value(i)
	}
	if c.Type == Uint64 {
		return fmt.Sprint(c.u64[i])
	}
	return fmt.Sprint(c.Int(i))
}

// checkViews verifies that every string view points inside its buffers, so
// that a damaged or hostile file cannot make Value read out of bounds.
func checkViews(a *array.StringView) error {
	bufs := a.Data().Buffers()
	for i := 0; i < a.Len(); i++ {
		h := a.ValueHeader(i)
		if h.Len() < 0 {
			return fmt.Errorf("row %d: string view of negative length", i)
		}
		if h.IsInline() {
			continue
		}
		bi, off, n := int(h.BufferIndex())+2, int(h.BufferOffset()), h.Len()
		if bi < 2 || bi >= len(bufs) || bufs[bi] == nil || off < 0 || n < 0 || off+n > bufs[bi].Len() {
			return fmt.Errorf("row %d: string view outside its buffers", i)
		}
	}
	return nil
}
