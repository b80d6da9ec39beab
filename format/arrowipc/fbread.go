package arrowipc

// Reading the flatbuffers of the Arrow format (Schema.fbs, Message.fbs,
// File.fbs) from untrusted bytes: every offset is checked against the
// buffer, unlike the generated code Arrow Go uses, which trusts them.

import "encoding/binary"

// fbTable is a flatbuffer table whose every access is bounds-checked, unlike
// the generated code Arrow uses, which trusts the offsets.
type fbTable struct {
	b            []byte
	pos, vt      int
	vtLen, tbLen int
}

func u32(b []byte, i int) int { return int(binary.LittleEndian.Uint32(b[i:])) }
func u16(b []byte, i int) int { return int(binary.LittleEndian.Uint16(b[i:])) }

func fbRoot(b []byte) (fbTable, error) {
	if len(b) < 4 {
		return fbTable{}, errFlatbuf
	}
	return fbTableAt(b, u32(b, 0))
}

func fbTableAt(b []byte, pos int) (fbTable, error) {
	if pos < 0 || pos > len(b)-4 {
		return fbTable{}, errFlatbuf
	}
	vt := pos - int(int32(binary.LittleEndian.Uint32(b[pos:])))
	if vt < 0 || vt > len(b)-4 {
		return fbTable{}, errFlatbuf
	}
	t := fbTable{b: b, pos: pos, vt: vt, vtLen: u16(b, vt), tbLen: u16(b, vt+2)}
	if t.vtLen < 4 || t.vtLen&1 != 0 || vt+t.vtLen > len(b) || t.tbLen < 4 || pos+t.tbLen > len(b) {
		return fbTable{}, errFlatbuf
	}
	return t, nil
}

// slot returns where field i's value of size bytes is, or -1 when absent.
func (t fbTable) slot(i, size int) (int, error) {
	o := 4 + 2*i
	if o+2 > t.vtLen {
		return -1, nil
	}
	off := u16(t.b, t.vt+o)
	if off == 0 {
		return -1, nil
	}
	if off < 4 || off+size > t.tbLen {
		return 0, errFlatbuf
	}
	return t.pos + off, nil
}

// int reads field i as a little-endian signed integer of size bytes (default 0).
func (t fbTable) int(i, size int) (int64, error) {
	p, err := t.slot(i, size)
	if p < 0 || err != nil {
		return 0, err
	}
	switch size {
	case 1:
		return int64(int8(t.b[p])), nil
	case 2:
		return int64(int16(binary.LittleEndian.Uint16(t.b[p:]))), nil
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(t.b[p:]))), nil
	}
	return int64(binary.LittleEndian.Uint64(t.b[p:])), nil
}

// ref follows the offset in field i: the position it points at, or -1.
func (t fbTable) ref(i int) (int, error) {
	p, err := t.slot(i, 4)
	if p < 0 || err != nil {
		return p, err
	}
	q := p + u32(t.b, p)
	if q > len(t.b)-4 {
		return 0, errFlatbuf
	}
	return q, nil
}

// table returns the table in field i; ok is false when it is absent.
func (t fbTable) table(i int) (tb fbTable, ok bool, err error) {
	p, err := t.ref(i)
	if p < 0 || err != nil {
		return fbTable{}, false, err
	}
	tb, err = fbTableAt(t.b, p)
	return tb, err == nil, err
}

// vector returns the start and length of the vector in field i, whose
// elements are elem bytes; an absent vector is empty.
func (t fbTable) vector(i, elem int) (start, n int, err error) {
	p, err := t.ref(i)
	if p < 0 || err != nil {
		return 0, 0, err
	}
	start, n = p+4, u32(t.b, p)
	if n > (len(t.b)-start)/elem {
		return 0, 0, errFlatbuf
	}
	return start, n, nil
}

// elemTable returns the table element j of a vector of tables at start.
func (t fbTable) elemTable(start, j int) (fbTable, error) {
	p := start + 4*j
	return fbTableAt(t.b, p+u32(t.b, p))
}

// str checks that the string in field i lies inside the buffer.
func (t fbTable) str(i int) (string, error) {
	start, n, err := t.vector(i, 1)
	if err != nil {
		return "", err
	}
	return string(t.b[start : start+n]), nil
}

func i64At(b []byte, p int) int64 { return int64(binary.LittleEndian.Uint64(b[p:])) }
