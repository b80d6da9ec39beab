package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"runtime/debug"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/bpftape/bpftape/format/arrowipc"
)

var arrowMagic = []byte("ARROW1")

// ErrNotCapture is returned by Open for a file that is not a bpftape capture.
var ErrNotCapture = errors.New("not a bpftape capture")

// BatchError is the error of one batch that a Reader could not read: the
// batches before it read, and Repair leaves it out of its copy when it is
// corrupt (ErrCorrupt).
type BatchError struct {
	Batch int
	Err   error
}

func (e *BatchError) Error() string { return fmt.Sprintf("batch %d: %v", e.Batch, e.Err) }

func (e *BatchError) Unwrap() error { return e.Err }

// Reader streams the batches of a capture, one at a time, so that memory
// does not grow with the file. A file without its footer (a recorder that
// was killed) is read as far as its last complete batch and Recovered says so.
//
// Batches are decoded by package arrowipc, every buffer into new memory, so
// that a Batch's slices and strings stay valid after Next.
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
	ipc    *arrowipc.File
	dec    *arrowipc.Decoder
	next   int
	batch  Batch
	err    error
	cols   map[string]int
	types  []Type // per column: its Type (String for comm), TypeInvalid for probe
	dictOK bool
	good   int64 // end of the last complete batch read, when recovering

	sel   []bool // per column: decoded by Next; nil: every column (Select)
	order []int  // the columns decoded, lost first; nil: every column
	every []int  // every column's index
	ahead *readAhead
	// ReadAhead is how many goroutines decode batches ahead of Next, each
	// with its own decoder (0 or 1: none, Next decodes). Batches are still
	// handed on in file order, so an analysis that keeps state across
	// batches (a thread's open entry) reads them as it would in one pass.
	ReadAhead int
	// Recycle makes Next reuse the memory of the batch before for the
	// integer columns of the next: their slices are then valid only until
	// Next, where a Batch's strings stay valid either way.
	Recycle bool
	// RecycleStrings makes Recycle reuse the memory of the string columns
	// too, for a pass that copies what it keeps of them (a listing): a
	// Batch's strings are then valid only until Next as well. Set it
	// before the pass's first Next (as Select, between passes).
	RecycleStrings bool
	pool           arrowipc.BufPool
	// Work, when set, is called with each batch as soon as it is decoded,
	// on the goroutine that decoded it: with ReadAhead, on the read-ahead
	// goroutines, several batches at once, so it must keep no state of
	// its own between calls. Worked returns its result after Next. It
	// lets an analysis whose result per batch merges into its whole in
	// file order analyse each batch on the core that decoded it, rather
	// than hand every decoded byte to another core (bench/README.md,
	// "Decoding on the analysis's own core"). A panic in it is raised
	// again by Next, as a *WorkPanic. Set it before the
	// pass's first Next (as Select, between passes).
	Work   func(b *Batch) any
	worked any

	// SkipCorrupt makes Next pass over a batch of a file with a footer
	// whose bytes are corrupt (ErrCorrupt, such as a failed zstd checksum)
	// instead of stopping there; Skipped then lists each one's error.
	SkipCorrupt bool
	Skipped     []error

	stackTable *StackTable // read by StackTable
}

// Open opens a capture for reading. A capture is read from a regular
// file: its footer first, then batches in any order. A directory, a pipe
// or a device is refused before it is opened (opening a pipe would wait
// for a writer).
func Open(path string) (*Reader, error) {
	if path == "-" {
		return nil, fmt.Errorf("-: a capture is not read from standard input: it is read from its end first; give its file name")
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		if st.IsDir() {
			return nil, fmt.Errorf("%s is a directory, not a capture", path)
		}
		what := "a device"
		switch t := st.Mode().Type(); {
		case t&os.ModeNamedPipe != 0:
			what = "a pipe"
		case t&os.ModeSocket != 0:
			what = "a socket"
		}
		return nil, fmt.Errorf("%s is %s, not a file: a capture is read from a file, its end first; save it to one", path, what)
	}
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
	r := &Reader{f: f, Size: st.Size(), good: 8}
	if st.Size() == 0 {
		return nil, fmt.Errorf("%w: the file is empty (0 bytes)", ErrNotCapture)
	}
	head := make([]byte, 8)
	if _, err := f.ReadAt(head, 0); err != nil || !bytes.HasPrefix(head, arrowMagic) {
		return nil, fmt.Errorf("%w: no Arrow file magic", ErrNotCapture)
	}
	defer func() {
		if p := recover(); p != nil {
			err = corruptf("%v", p)
		}
	}()
	if r.ipc, err = arrowipc.Open(f, r.Size); err != nil {
		if errors.Is(err, ErrLimit) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", ErrNotCapture, err)
	}
	r.Schema, r.Recovered = r.ipc.Schema, r.ipc.Streamed()
	if err := r.checkSchema(); err != nil {
		return nil, err
	}
	if err := r.columnTypes(); err != nil {
		return nil, err
	}
	r.dec = r.newDecoder(&r.pool)
	return r, nil
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

// columnTypes sets each column's Type: field columns must be integers or
// strings (string views).
func (r *Reader) columnTypes() error {
	fields := r.Schema.Fields()
	r.types = make([]Type, len(fields))
	r.every = make([]int, len(fields))
	for i, f := range fields {
		r.every[i] = i
		switch {
		case i == ColProbe:
		case arrow.TypeEqual(f.Type, arrow.BinaryTypes.StringView):
			r.types[i] = String
		default:
			if r.types[i] = intType(f.Type); r.types[i] == TypeInvalid {
				return corruptf("column %s has unsupported type %v", f.Name, f.Type)
			}
		}
	}
	return nil
}

// Select makes Next decode only the columns listed by schema index (as
// Column returns them; negative ones are ignored), besides the probe and
// lost columns, which every pass needs, and the time and cpu of a batch
// with loss records, which loss records need: an analysis of two columns
// of twelve decompresses two, and never verifies the checksums of the
// buffers it does not read. A Batch's other columns are empty: its Time,
// CPU, PID and TID are nil and Col panics. nil selects every column. It
// holds until the next Select, across Rewind.
func (r *Reader) Select(cols []int) {
	r.stopAhead()
	if cols == nil {
		r.sel, r.order = nil, nil
		return
	}
	r.sel = make([]bool, len(r.types))
	r.sel[ColProbe], r.sel[ColLost] = true, true
	for _, ci := range cols {
		if ci >= 0 && ci < len(r.sel) {
			r.sel[ci] = true
		}
	}
	r.order = []int{ColLost}
	for ci, ok := range r.sel {
		if ok && ci != ColLost {
			r.order = append(r.order, ci)
		}
	}
}

// Next reads the next batch; it returns false at the end or on error (see Err).
func (r *Reader) Next() (ok bool) {
	if r.err != nil {
		return false
	}
	defer func() {
		if p := recover(); p != nil {
			if wp, isWork := p.(*WorkPanic); isWork {
				r.stopAhead()
				panic(wp)
			}
			r.err = corruptf("%v", p)
			ok = false
		}
		if !ok {
			r.stopAhead()
		}
	}()
	for {
		if r.next >= r.ipc.NumBatches() {
			r.end()
			return false
		}
		r.release(&r.batch)
		r.worked = nil
		var err error
		if r.ReadAhead > 1 && r.dictOK {
			err = r.readAhead()
		} else {
			err = r.read(r.next)
		}
		if err == nil {
			break
		}
		if wp, isWork := err.(*WorkPanic); isWork {
			panic(wp)
		}
		err = &BatchError{Batch: r.next, Err: err}
		switch {
		case r.dictOK && r.Recovered && errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrLimit):
			// The recovered stream ends before a batch whose bytes fail.
			r.RecoverErr = recoverErr(r.Size, r.good, err)
			r.next = r.ipc.NumBatches()
			return false
		case r.dictOK && r.SkipCorrupt && errors.Is(err, ErrCorrupt) && !r.Recovered:
			r.Skipped = append(r.Skipped, err)
			r.next++
		default:
			r.err = err
			return false
		}
	}
	if r.Recovered {
		_, r.good = r.ipc.BatchSpan(r.next)
	}
	r.next++
	return true
}

// Rewind makes Next read from the first batch again, so that one open
// reader serves several passes over a capture. What the reads found is
// reset to what Open found: Err, RawBytes, Skipped, and RecoverErr (the
// pass that reaches the end of a footerless file finds it again). Project
// works again until the next call of Next.
func (r *Reader) Rewind() {
	r.next, r.err, r.good = 0, nil, 8
	r.RawBytes, r.Skipped, r.RecoverErr = 0, nil, nil
	r.batch, r.worked = Batch{}, nil
	r.stopAhead()
}

// end sets, at the end of a recovered capture, where its stream was cut.
func (r *Reader) end() {
	if !r.Recovered || r.RecoverErr != nil {
		return
	}
	stop := r.ipc.StreamErr()
	if errors.Is(stop, ErrLimit) {
		r.err = fmt.Errorf("batch %d: %w", r.next, stop)
		return
	}
	r.RecoverErr = recoverErr(r.Size, r.good, stop)
}

// recoverErr says where the stream of a footerless capture of size bytes
// was cut, after its last complete batch ending at good, and wraps what
// stopped reading there (nil for a cut: ErrCorrupt for a message that
// fails a check); nil when the file ends there.
func recoverErr(size, good int64, stop error) error {
	if tail := size - good; tail > 0 {
		err := fmt.Errorf("incomplete batch: %d bytes at offset %d", tail, good)
		if stop != nil {
			err = fmt.Errorf("%w (%w)", err, stop)
		}
		return err
	}
	return nil
}

// checkDictionaries checks that every dictionary batch holds the probe
// names of the metadata, in order.
func checkDictionaries(d *arrowipc.Decoder, f *arrowipc.File, probes []Probe) error {
	if f.NumDictionaries() == 0 {
		return corruptf("no probe dictionary")
	}
	for k := 0; k < f.NumDictionaries(); k++ {
		s, err := d.Dictionary(k)
		if err != nil {
			return err
		}
		for i, p := range probes {
			if i >= s.Len() || s.Value(i) != p.Name {
				return corruptf("probe dictionary does not match metadata at %d", i)
			}
		}
	}
	return nil
}

// read decodes batch i into r.batch, with r's decoder.
func (r *Reader) read(i int) error {
	if err := r.checkDict(); err != nil {
		return err
	}
	raw, err := r.decode(r.dec, i, &r.batch)
	r.RawBytes += raw
	if err == nil {
		r.worked, err = r.work(&r.batch)
	}
	return err
}

// work calls Work with b, if it is set. A panic in it is returned as a
// *WorkPanic, which Next raises again.
func (r *Reader) work(b *Batch) (res any, err error) {
	if r.Work == nil {
		return nil, nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = &WorkPanic{Batch: b.Index, Value: p, Stack: debug.Stack()}
		}
	}()
	return r.Work(b), nil
}

// WorkPanic is what Next panics with when Reader.Work panicked: the
// analysis's bug, raised on the goroutine that called Next as it would
// have been had the analysis run there, and not taken for damage to the
// file (which a footerless capture's pass would have ended at quietly).
// Stack is the stack of the goroutine Work ran on.
type WorkPanic struct {
	Batch int
	Value any
	Stack []byte
}

func (p *WorkPanic) Error() string {
	return fmt.Sprintf("format: Reader.Work panicked on batch %d: %v\n\n%s", p.Batch, p.Value, p.Stack)
}

// Worked returns what Work returned for the batch Next read last.
func (r *Reader) Worked() any { return r.worked }

// checkDict checks the probe dictionaries once, before the first batch.
func (r *Reader) checkDict() error {
	if !r.dictOK {
		if err := checkDictionaries(r.dec, r.ipc, r.Meta.Probes); err != nil {
			return err
		}
		r.dictOK = true
	}
	return nil
}

// decode decodes batch i with d into b: the columns selected (Select),
// and in a batch with loss records their time and cpu too. It returns the
// bytes decoded. It only reads r's fields, so that the decoders of a read
// ahead (readAhead) call it at once.
func (r *Reader) decode(d *arrowipc.Decoder, i int, b *Batch) (raw int64, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = corruptf("%v", p)
		}
	}()
	if err := d.Read(i); err != nil {
		return 0, err
	}
	n := d.Rows()
	b.Index, b.Len, b.pool = i, n, d.Pool
	if cap(b.data) < len(r.types) {
		b.data = make([]arrowipc.ColumnData, len(r.types))
		b.cols = make([]Column, len(r.types)-numFixed)
	}
	b.data = b.data[:len(r.types)]
	for ci := range b.data {
		b.data[ci].Buffers = b.data[ci].Buffers[:0]
	}
	b.sel = r.sel
	b.Time, b.CPU, b.PID, b.TID, b.comm = nil, nil, nil, nil, arrowipc.Views{}
	// The lost column first: a batch with loss records needs their time
	// and cpu, whatever is selected.
	order := r.order
	if order == nil {
		order = r.every
	}
	losses := d.NullCount(ColLost) < n
	for _, ci := range order {
		if err := r.decodeColumn(d, b, ci, n); err != nil {
			return d.Decoded(), err
		}
	}
	if losses && r.sel != nil {
		for _, ci := range []int{ColTime, ColCPU} {
			if !r.sel[ci] {
				if err := r.decodeColumn(d, b, ci, n); err != nil {
					return d.Decoded(), err
				}
			}
		}
	}
	return d.Decoded(), nil
}

// decodeColumn decodes column ci of d's batch of n rows into b.
func (r *Reader) decodeColumn(d *arrowipc.Decoder, b *Batch, ci, n int) error {
	t := r.types[ci]
	valid, err := d.Validity(ci)
	if err != nil {
		return err
	}
	cd := &b.data[ci]
	cd.NullCount = d.NullCount(ci)
	cd.Buffers = append(cd.Buffers[:0], valid)
	var vals []byte
	var views arrowipc.Views
	switch {
	case ci == ColProbe:
		if cd.NullCount > 0 {
			return fmt.Errorf("probe column has nulls")
		}
		vals, err = d.Values(ci, 2)
	case t == String:
		views, err = d.Views(ci)
		v, data := views.Data()
		cd.Buffers = append(append(cd.Buffers, v), data...)
	case ci == ColLost && cd.NullCount == n && r.sel != nil:
		// No loss record: the validity says so, and the values, which
		// would be read only for loss records, are left undecoded.
		b.lost = IntColumn{Type: t, Valid: valid}
		if r.Recycle {
			// Its bitmap goes back to the pool too: kept, it took a
			// pooled buffer of another column's size with every batch,
			// and a third of the batches allocated all of theirs anew.
			b.recycle = append(b.recycle, valid)
		}
		return nil
	default:
		vals, err = d.Values(ci, t.Size())
	}
	if err != nil {
		return err
	}
	if vals != nil {
		cd.Buffers = append(cd.Buffers, vals)
	}
	switch {
	case !r.Recycle:
	case t != String:
		b.recycle = append(b.recycle, valid, vals)
	case r.RecycleStrings:
		v, data := views.Data()
		b.recycle = append(append(b.recycle, valid, v), data...)
	}
	switch ci {
	case ColTime:
		b.Time = castSlice[int64](vals, n)
	case ColCPU:
		b.CPU = castSlice[uint16](vals, n)
	case ColPID:
		b.PID = castSlice[uint32](vals, n)
	case ColTID:
		b.TID = castSlice[uint32](vals, n)
	case ColComm:
		b.comm = views
	case ColProbe:
		b.Probe = castSlice[uint16](vals, n)
		if m := maxProbe(b.Probe); n > 0 && int(m) >= len(r.Meta.Probes) {
			return fmt.Errorf("probe index %d out of range", m)
		}
	case ColLost:
		b.lost = intColumn(t, valid, vals, n)
	default:
		c := &b.cols[ci-numFixed]
		*c = Column{Type: t, Len: n, valid: valid, str: views}
		if t != String {
			c.ints = intColumn(t, valid, vals, n)
		}
	}
	return nil
}

// StackTable returns the capture's stack table: the parts that its
// record batches carry, united (see StackTable). A capture without stacks
// has an empty one. A part that fails to decode is an error naming its
// batch (ErrStackTable), unless SkipCorrupt is set, when it is left out
// and listed in Skipped: its stacks then show as unknown. A table over a
// limit (see MaxStacks) is an error wrapping ErrLimit even so, as a batch
// over a limit is for Next.
func (r *Reader) StackTable() (*StackTable, error) {
	if r.stackTable != nil {
		return r.stackTable, nil
	}
	t := new(StackTable)
	var count stackCount // the limits hold over the whole table
	for i := 0; i < r.ipc.NumBatches(); i++ {
		md, err := r.ipc.BatchMetadata(i)
		if err == nil {
			j := md.FindKey(StackTableKey)
			if j < 0 {
				continue
			}
			var part *StackTable
			if part, err = decodeStackTable(md.Values()[j], &count); err == nil {
				if t.Empty() {
					t = part // what Add would copy
				} else {
					t.Add(part)
				}
				continue
			}
		}
		err = fmt.Errorf("batch %d: stack table: %w", i, err)
		if !r.SkipCorrupt || errors.Is(err, ErrLimit) {
			return nil, err
		}
		r.Skipped = append(r.Skipped, err)
	}
	t.index = nil // Add's, which the table read no longer needs
	r.stackTable = t
	return t, nil
}

// Batch returns the current batch; valid until the next call to Next.
func (r *Reader) Batch() *Batch { return &r.batch }

// Batches is the number of batches read so far.
func (r *Reader) Batches() int { return r.next }

// NumBatches is the number of batches in the file (in a file without a
// footer, the complete batches Open found).
func (r *Reader) NumBatches() int { return r.ipc.NumBatches() }

// Err returns the error that stopped Next, if any. A truncated last batch of
// a recovered file is not an error: see RecoverErr.
func (r *Reader) Err() error { return r.err }

// Close releases the reader and its file.
func (r *Reader) Close() error {
	r.stopAhead()
	r.dec.Close()
	return r.f.Close()
}

// Batch is a decoded record batch with typed views of its columns.
type Batch struct {
	// Index is the batch's number in the file, from 0.
	Index int
	Len   int
	Time  []int64
	CPU   []uint16
	PID   []uint32
	TID   []uint32
	Probe []uint16
	comm  arrowipc.Views
	lost  IntColumn
	cols  []Column
	data  []arrowipc.ColumnData // every column's buffers, as a writer takes them
	sel   []bool                // the columns decoded (Reader.Select); nil: every one
	// recycle lists the buffers Next gives back to pool, that of the
	// decoder that filled them (Recycle).
	recycle [][]byte
	pool    *arrowipc.BufPool
}

// release gives back the buffers of b that Recycle lets Next reuse.
func (r *Reader) release(b *Batch) {
	for _, buf := range b.recycle {
		b.pool.Put(buf)
	}
	clear(b.recycle)
	b.recycle = b.recycle[:0]
}

// Comm returns row i's command name.
func (b *Batch) Comm(i int) string { return b.comm.Value(i) }

// CommViews returns the comm column's string views, 16 bytes a row (the
// two little-endian words CommView returns), for loops over many rows.
func (b *Batch) CommViews() []byte {
	v, _ := b.comm.Data()
	return v[:16*b.Len]
}

// CommView returns row i's comm as the two words of its Arrow string
// view: a key to tell rows apart without reading their bytes. Equal views
// hold equal comms when the comm is at most 12 bytes (inlined); a longer
// comm's view says where it lies, so equal views mean equal comms only
// within one batch (Index).
func (b *Batch) CommView(i int) (lo, hi uint64) { return b.comm.View(i) }

// Lost returns the count of a loss record; ok is false for an event row.
func (b *Batch) Lost(i int) (n uint64, ok bool) {
	if !b.lost.IsValid(i) {
		return 0, false
	}
	return b.lost.U64[i], true
}

// NextLoss returns the first row at or after i that is a loss record, or
// Len: the rows in between are events, which an analysis without a row
// filter can take as one stretch.
func (b *Batch) NextLoss(i int) int {
	if b.lost.Valid == nil {
		return min(i, b.Len) // every row is a loss record
	}
	return nextSet(b.lost.Valid, i, b.Len)
}

// nextSet returns the first row at or after i whose bit is set in bm, or n.
func nextSet(bm []byte, i, n int) int {
	for i < n {
		if i&63 == 0 && i+64 <= n {
			if w := binary.LittleEndian.Uint64(bm[i>>3:]); w != 0 {
				return i + bits.TrailingZeros64(w)
			}
			i += 64
			continue
		}
		if bm[i>>3]&(1<<(i&7)) != 0 {
			return i
		}
		i++
	}
	return n
}

// Col returns the column at schema index ci, which must be a field column
// (ci >= the fixed columns), as found with Reader.Column.
func (b *Batch) Col(ci int) *Column {
	if b.sel != nil && !b.sel[ci] {
		panic(fmt.Sprintf("format: column %d was not selected (Reader.Select)", ci))
	}
	return &b.cols[ci-numFixed]
}

// Column is a typed view of one field column of a batch.
type Column struct {
	Type  Type
	Len   int
	ints  IntColumn
	valid []byte
	str   arrowipc.Views
}

// Ints returns the values of an integer column, typed.
func (c *Column) Ints() *IntColumn { return &c.ints }

// Valid reports whether row i holds a value (the probe of the row has this field).
func (c *Column) Valid(i int) bool { return c.valid == nil || c.valid[i>>3]&(1<<(i&7)) != 0 }

// Int returns row i as int64: signed types sign-extend, unsigned ones
// zero-extend (a uint64 above 2^63 wraps to a negative number).
func (c *Column) Int(i int) int64 { return c.ints.Int(i) }

// Str returns row i of a string column, or the decimal value of an integer.
func (c *Column) Str(i int) string {
	if c.Type == String {
		return c.str.Value(i)
	}
	if c.Type == Uint64 {
		return fmt.Sprint(c.ints.U64[i])
	}
	return fmt.Sprint(c.Int(i))
}

// maxProbe returns the largest of ps (0 if none), in four running maxima
// that do not wait on each other: one waited a compare and a move on the
// last at every row (BenchmarkMaxProbe, a batch: 18.5-19.4 µs against
// 6.2-7.7), 6% of count --by comm's CPU on a recorded capture.
func maxProbe(ps []uint16) uint16 {
	var m0, m1, m2, m3 uint16
	i := 0
	for ; i+4 <= len(ps); i += 4 {
		q := ps[i : i+4 : i+4]
		m0, m1, m2, m3 = max(m0, q[0]), max(m1, q[1]), max(m2, q[2]), max(m3, q[3])
	}
	for _, p := range ps[i:] {
		m0 = max(m0, p)
	}
	return max(m0, m1, m2, m3)
}
