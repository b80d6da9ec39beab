package format

import (
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
)

// intType returns the integer Type of an Arrow type, TypeInvalid for
// others.
func intType(dt arrow.DataType) Type {
	for t := Int8; t <= Uint64; t++ {
		if arrow.TypeEqual(dt, t.arrow()) {
			return t
		}
	}
	return TypeInvalid
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

// IntColumn is one integer column of a batch: exactly one of the
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

// Gather sets dst[j] to row base+rows[j] as int64, as Int returns it, for
// every j below len(rows) (dst must be as long): the values of the rows an
// analysis picked from a stretch, with one switch on the type for them
// all rather than one for each.
func (c *IntColumn) Gather(dst []int64, base int, rows []int32) {
	switch c.Type {
	case Int8:
		gather(dst, c.I8, base, rows)
	case Int16:
		gather(dst, c.I16, base, rows)
	case Int32:
		gather(dst, c.I32, base, rows)
	case Int64:
		gather(dst, c.I64, base, rows)
	case Uint8:
		gather(dst, c.U8, base, rows)
	case Uint16:
		gather(dst, c.U16, base, rows)
	case Uint32:
		gather(dst, c.U32, base, rows)
	case Uint64, UserStack, KernelStack:
		gather(dst, c.U64, base, rows)
	}
}

func gather[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](dst []int64, vals []T, base int, rows []int32) {
	dst = dst[:len(rows)]
	vals = vals[base:]
	for j, i := range rows {
		dst[j] = int64(vals[i])
	}
}
