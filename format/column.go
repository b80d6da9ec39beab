package format

import (
	"encoding/binary"

	"github.com/bpftape/bpftape/format/arrowipc"
)

// colBuf accumulates one column of a batch as the raw little-endian buffers
// of its Arrow layout, so that appending a value is a slice append and the
// batch becomes Arrow arrays without copying.
//
// Strings use Arrow's string_view layout: 16 bytes per row holding the
// length and up to 12 bytes inline, or a prefix and the offset of the bytes
// in a second buffer. Equal long strings (a thread's comm, a repeated
// message) point at one copy, so the rows are identical and compress to
// almost nothing, where a plain string column's offsets differ on every row.
type colBuf struct {
	typ      Type
	width    int
	nullable bool
	data     []byte // values; for strings, the 16-byte views
	long     []byte // strings longer than 12 bytes, for views
	interned []span // where recent long strings are in long
	valid    []byte // validity bitmap of a nullable column
	nulls    int
}

type span struct{ off, n uint32 }

// maxInterned bounds the strings a batch deduplicates by linear search.
const maxInterned = 16

func newColBuf(t Type, nullable bool) colBuf {
	c := colBuf{typ: t, width: t.Size(), nullable: nullable}
	c.reset()
	return c
}

func (c *colBuf) reset() {
	c.data = c.data[:0]
	c.long = c.long[:0]
	c.interned = c.interned[:0]
	c.valid = c.valid[:0]
	c.nulls = 0
}

// mark records validity for row i.
func (c *colBuf) mark(i int, ok bool) {
	if !c.nullable {
		return
	}
	if i&7 == 0 {
		c.valid = append(c.valid, 0)
	}
	if ok {
		c.valid[i>>3] |= 1 << (i & 7)
	} else {
		c.nulls++
	}
}

// putInt appends the low width bytes of v.
func (c *colBuf) putInt(v uint64) {
	switch c.width {
	case 1:
		c.data = append(c.data, byte(v))
	case 2:
		c.data = binary.LittleEndian.AppendUint16(c.data, uint16(v))
	case 4:
		c.data = binary.LittleEndian.AppendUint32(c.data, uint32(v))
	default:
		c.data = binary.LittleEndian.AppendUint64(c.data, v)
	}
}

func (c *colBuf) putString(s []byte) {
	var v [16]byte
	binary.LittleEndian.PutUint32(v[0:], uint32(len(s)))
	if len(s) <= 12 {
		copy(v[4:], s)
	} else {
		copy(v[4:8], s)
		binary.LittleEndian.PutUint32(v[12:], c.intern(s))
	}
	c.data = append(c.data, v[:]...)
}

// intern returns the offset of s in the long-string buffer, adding it
// unless one of the last strings added is equal.
func (c *colBuf) intern(s []byte) uint32 {
	for _, sp := range c.interned {
		if int(sp.n) == len(s) && string(c.long[sp.off:sp.off+sp.n]) == string(s) {
			return sp.off
		}
	}
	off := uint32(len(c.long))
	c.long = append(c.long, s...)
	if len(c.interned) < maxInterned {
		c.interned = append(c.interned, span{off, uint32(len(s))})
	}
	return off
}

func (c *colBuf) putNull(i int) {
	if c.typ == String {
		c.data = append(c.data, zeroView[:]...)
	} else {
		c.putInt(0)
	}
	c.mark(i, false)
}

var zeroView [16]byte

// columnData points d at the buffers, which must not be reused until the
// batch has been written.
func (c *colBuf) columnData(d *arrowipc.ColumnData) {
	d.Buffers = append(d.Buffers[:0], c.valid, c.data)
	if c.typ == String && len(c.long) > 0 {
		d.Buffers = append(d.Buffers, c.long)
	}
	d.NullCount = c.nulls
}
