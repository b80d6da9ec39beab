package format

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/bpftape/bpftape/format/arrowipc"
)

// ErrNoProjection is returned by Reader.Project for a capture that the
// projected path cannot read: one whose batches Next has already started
// reading, or a footerless one whose stream stops at a message that fails
// a check (Next reads up to it and says so in RecoverErr).
var ErrNoProjection = errors.New("capture cannot be read by projection")

// Projection reads the batches of a capture column by column, straight from
// the file, through the same decoder as Next (package arrowipc): Next reads
// only a batch's metadata, and a column's buffers are read and decompressed
// the first time they are asked for in that batch, into buffers reused from
// batch to batch. No Arrow arrays are built. An analysis that needs two
// columns of twelve decodes two, and its memory does not grow with the file.
//
// Every length and value is checked as Reader.Next checks it: every column
// of the batch's length, validity bitmaps covering their rows, value
// buffers covering theirs, probe indices inside the probe table, the probe
// dictionary equal to the metadata's (and the limits of package arrowipc).
//
// Results are those of Next: a column's validity is consulted only when its
// field node counts nulls, as Arrow does.
type Projection struct {
	r     *Reader
	dec   *arrowipc.Decoder
	types []Type // per column: its integer type, TypeInvalid for others

	next     int
	err      error
	gen      uint64 // counts batches read
	probeGen uint64 // the batch whose probe indices were checked
	probe    []uint16

	dictOK bool
}

// Project returns a projected reader of the capture's batches. It returns
// ErrNoProjection after Next has been called, and for a footerless capture
// whose stream stops at a message that fails a check rather than where it
// was cut; for one that was cut, Projection.RecoverErr says where, as
// Reader.RecoverErr would after Next. The Reader must stay open while the
// Projection is used. Every call returns a new Projection, with its own
// buffers and decoder.
func (r *Reader) Project() (*Projection, error) {
	if r.next > 0 || r.ipc.StreamErr() != nil {
		return nil, ErrNoProjection
	}
	fields := r.Schema.Fields()
	p := &Projection{r: r, dec: r.ipc.NewDecoder(true), types: make([]Type, len(fields))}
	for i, f := range fields {
		p.types[i] = intType(f.Type)
	}
	return p, nil
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
func (p *Projection) Close() { p.dec.Close() }

// Next reads the metadata of the next batch; it returns false at the end or
// on error (see Err).
func (p *Projection) Next() bool {
	if p.next >= p.NumBatches() {
		return false
	}
	return p.Read(p.next)
}

// NumBatches is the number of batches the footer lists, or, without a
// footer, the number of complete batches.
func (p *Projection) NumBatches() int { return p.r.ipc.NumBatches() }

// Recovered reports whether the capture has no footer; RecoverErr then says
// where its stream was cut (nil at a batch boundary), as Reader.RecoverErr
// does after Next.
func (p *Projection) Recovered() bool { return p.r.Recovered }

// RecoverErr: see Recovered.
func (p *Projection) RecoverErr() error {
	if !p.r.Recovered {
		return nil
	}
	return recoverErr(p.r.Size, p.r.ipc.StreamEnd(), nil)
}

// Read reads the metadata of batch i, so that batches can be read out of
// order (several Projections of one Reader may read different batches at
// once, each on its own goroutine); Next continues after it. It returns
// false on error (see Err), which stops the Projection.
func (p *Projection) Read(i int) (ok bool) {
	if p.err != nil {
		return false
	}
	if i < 0 || i >= p.NumBatches() {
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
	p.gen++
	if !p.dictOK {
		if err := checkDictionaries(p.dec, p.r.ipc, p.r.Meta.Probes); err != nil {
			p.err = fmt.Errorf("batch %d: %w", i, err)
			return false
		}
		p.dictOK = true
	}
	if err := p.dec.Read(i); err != nil {
		p.err = fmt.Errorf("batch %d: %w", i, err)
		return false
	}
	return true
}

// Err returns the error that stopped Next or a column load, if any.
func (p *Projection) Err() error { return p.err }

// Len is the number of rows of the current batch.
func (p *Projection) Len() int { return p.dec.Rows() }

// Batches is the number of batches read so far, in order (with Read: the
// index after the last batch read).
func (p *Projection) Batches() int { return p.next }

// Nulls returns the null count the field node of column ci declares.
func (p *Projection) Nulls(ci int) int { return p.dec.NullCount(ci) }

// Probe returns the probe indices of the current batch, each checked to be
// inside the probe table. The slice is valid until the next call to Next.
func (p *Projection) Probe() ([]uint16, error) {
	if p.err != nil {
		return nil, p.err
	}
	if p.probeGen == p.gen {
		return p.probe, nil
	}
	if p.Nulls(ColProbe) > 0 {
		return nil, p.fail(fmt.Errorf("probe column has nulls"))
	}
	rows := p.dec.Rows()
	b, err := p.dec.Values(ColProbe, 2)
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
	p.probe, p.probeGen = idx, p.gen
	return idx, nil
}

// Validity returns the validity bitmap of column ci in the current batch,
// covering its rows, or nil when its field node counts no nulls (every row
// is valid).
func (p *Projection) Validity(ci int) ([]byte, error) {
	if p.err != nil {
		return nil, p.err
	}
	if ci < 0 || ci >= len(p.types) {
		return nil, fmt.Errorf("no column %d", ci)
	}
	b, err := p.dec.Validity(ci)
	if err != nil {
		return nil, p.fail(err)
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
	t := p.types[ci]
	b, err := p.dec.Values(ci, t.Size())
	if err != nil {
		return IntColumn{}, p.fail(err)
	}
	return intColumn(t, valid, b, p.dec.Rows()), nil
}

// intColumn views rows values of type t in b.
func intColumn(t Type, valid, b []byte, rows int) IntColumn {
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
	case Uint64, UserStack, KernelStack:
		c.U64 = castSlice[uint64](b, rows)
	}
	return c
}

func (p *Projection) fail(err error) error {
	if p.err == nil {
		p.err = fmt.Errorf("batch %d: %w", p.next-1, err)
	}
	return p.err
}

// castSlice views the first n values of b, little-endian as the file
// stores them (bpftape runs on little-endian machines, as Arrow Go's
// array views do), without copying. b is a buffer of an arrowipc.Decoder,
// which are 8-byte aligned.
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
	case Uint64, UserStack, KernelStack:
		return int64(c.U64[i])
	}
	return 0
}
