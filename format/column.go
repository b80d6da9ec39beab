package format

import (
	"encoding/binary"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// colBuf accumulates one column of a batch as the raw little-endian buffers
// of its Arrow layout, so that appending a value is a slice append and the
// batch becomes Arrow arrays without copying.
type colBuf struct {
	typ      Type
	width    int
	nullable bool
	data     []byte
	offsets  []byte // int32 offsets of a string column, starting with 0
	valid    []byte // validity bitmap of a nullable column
	nulls    int
}

func newColBuf(t Type, nullable bool) colBuf {
	c := colBuf{typ: t, width: t.Size(), nullable: nullable}
	c.reset()
	return c
}

func (c *colBuf) reset() {
	c.data = c.data[:0]
	c.valid = c.valid[:0]
	c.nulls = 0
	if c.typ == String {
		c.offsets = binary.LittleEndian.AppendUint32(c.offsets[:0], 0)
	}
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
	c.data = append(c.data, s...)
	c.offsets = binary.LittleEndian.AppendUint32(c.offsets, uint32(len(c.data)))
}

func (c *colBuf) putNull(i int) {
	if c.typ == String {
		c.offsets = binary.LittleEndian.AppendUint32(c.offsets, uint32(len(c.data)))
	} else {
		c.putInt(0)
	}
	c.mark(i, false)
}

// array wraps the buffers as an Arrow array of n rows; the array refers to
// the buffers, which must not be reused until the array is released.
func (c *colBuf) array(n int) arrow.Array {
	var validity *memory.Buffer
	if c.nulls > 0 {
		validity = memory.NewBufferBytes(c.valid)
	}
	bufs := []*memory.Buffer{validity, memory.NewBufferBytes(c.data)}
	if c.typ == String {
		bufs = []*memory.Buffer{validity, memory.NewBufferBytes(c.offsets), memory.NewBufferBytes(c.data)}
	}
	data := array.NewData(c.typ.arrow(), n, bufs, nil, c.nulls, 0)
	defer data.Release()
	return array.MakeFromData(data)
}
