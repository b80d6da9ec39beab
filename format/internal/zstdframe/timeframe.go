package zstdframe

import (
	"encoding/binary"
	"math/bits"
)

// TimeEncoder writes zstd frames of a column of 64-bit little-endian values
// that mostly differ from the previous one in their low bytes (boot-clock
// timestamps in time order). It may be reused, not shared between
// goroutines.
type TimeEncoder struct {
	blockCoder
}

const (
	blockMax   = 128 << 10 // RFC 8878 3.1.1.2.4, Block_Maximum_Size
	frameMagic = 0xFD2FB528
)

// Encode appends to dst one zstd frame (RFC 8878) holding src, with its
// content size and content checksum. Each 8-byte value becomes its low
// bytes that differ from the previous value's as literals and one match of
// the rest at offset 8; a value that differs in more than 5 bytes is all
// literals. Literals are Huffman-coded (klauspost's huff0), the sequences'
// codes FSE-coded with tables made for each block. Any src is valid: a
// length that is not a multiple of 8 leaves its tail as literals.
func (e *TimeEncoder) Encode(dst, src []byte) []byte {
	dst = appendFrameHeader(dst, len(src))
	if len(src) == 0 {
		dst = appendBlockHeader(dst, true, blockRaw, 0)
	}
	rep8 := false // whether repeat offset 1 is 8 yet
	for start := 0; start < len(src); start += blockMax {
		end := min(start+blockMax, len(src))
		dst = e.appendBlock(dst, src, start, end, &rep8)
	}
	return binary.LittleEndian.AppendUint32(dst, uint32(xxh64(src)))
}

// appendFrameHeader appends the magic number and the header of a frame of
// n bytes with its content size and checksum.
func appendFrameHeader(dst []byte, n int) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, frameMagic)
	// Frame_Header_Descriptor: Single_Segment_flag (bit 5: no window
	// descriptor, the window is the content), Content_Checksum_flag
	// (bit 2), Frame_Content_Size_flag (bits 6-7) by the size's width.
	const single, checksum = 1 << 5, 1 << 2
	switch u := uint64(n); {
	case u < 256:
		return append(dst, single|checksum, byte(u))
	case u < 256+1<<16:
		dst = append(dst, 1<<6|single|checksum)
		return binary.LittleEndian.AppendUint16(dst, uint16(u-256))
	case u <= 1<<32-1:
		dst = append(dst, 2<<6|single|checksum)
		return binary.LittleEndian.AppendUint32(dst, uint32(u))
	default:
		dst = append(dst, 3<<6|single|checksum)
		return binary.LittleEndian.AppendUint64(dst, u)
	}
}

// Block types (RFC 8878 3.1.1.2.2).
const (
	blockRaw        = 0
	blockCompressed = 2
)

func appendBlockHeader(dst []byte, last bool, typ int, size int) []byte {
	h := uint32(typ)<<1 | uint32(size)<<3
	if last {
		h |= 1
	}
	return append(dst, byte(h), byte(h>>8), byte(h>>16))
}

// appendBlock appends src[start:end] as one block: compressed, or raw if
// that is not smaller.
func (e *TimeEncoder) appendBlock(dst, src []byte, start, end int, rep8 *bool) []byte {
	repBefore := *rep8
	e.parse(src, start, end, rep8)
	dst, packed := e.appendParsed(dst, src, start, end)
	if !packed {
		*rep8 = repBefore // a raw block leaves the repeat offsets as they were
	}
	return dst
}

// parse splits src[start:end] into literals and sequences.
func (e *TimeEncoder) parse(src []byte, start, end int, rep8 *bool) {
	// Each value stores 8 bytes at lits[nl:] and keeps k of them.
	if cap(e.lits) < end-start+8 {
		e.lits = make([]byte, end-start+8)
	}
	lits := e.lits[:cap(e.lits)]
	nl := 0
	e.seqs = e.seqs[:0]
	pending := uint32(0) // literals since the last sequence
	i := start
	prev := uint64(0)
	if i >= 8 {
		prev = binary.LittleEndian.Uint64(src[i-8:])
	}
	for ; i+8 <= end; i += 8 {
		v := binary.LittleEndian.Uint64(src[i:])
		binary.LittleEndian.PutUint64(lits[nl:], v)
		k := 8 - bits.LeadingZeros64(v^prev)/8
		if i < 8 { // the column's first value
			k = 8
		}
		prev = v
		switch {
		case k == 0 && pending == 0 && len(e.seqs) > 0:
			// the same value again: the last match goes on
			e.seqs[len(e.seqs)-1].matchLen += 8
		case k <= 5 && (k > 0 || pending > 0):
			nl += k
			s := sequence{litLen: pending + uint32(k), matchLen: uint32(8 - k), offVal: 1}
			if !*rep8 {
				s.offVal, *rep8 = 3, true
			}
			e.seqs = append(e.seqs, s)
			pending = 0
		default: // too few bytes in common for a match (3), or nothing
			// before it in the block to continue
			nl += 8
			pending += 8
		}
	}
	nl += copy(lits[nl:], src[i:end])
	e.lits = lits[:nl]
}
