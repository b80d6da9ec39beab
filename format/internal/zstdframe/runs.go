package zstdframe

import (
	"encoding/binary"
	"math/bits"
)

// RunEncoder writes zstd frames of a column of 1-, 2-, 4- or 8-byte values
// that come in runs of one value: a thread's tid or a CPU's number while
// the thread runs on it. It may be reused, not shared between goroutines.
//
// klauspost's encoder writes a run as a match at the value's width, which
// its decoder (the capture reader's) copies a byte at a time, as any
// overlapping match at an offset under 16. RunEncoder writes the first
// value of a run as literals, a match at the value's width up to the
// run's 16th byte, and the rest as a match at offset 16, which the
// decoder copies 16 bytes at a time (bench/README.md, "Runs written for
// the decoder").
type RunEncoder struct {
	blockCoder
	recent [8]pastRun // the last runs of distinct values, the latest first
	rep    [3]uint32  // the repeat offsets (RFC 8878 3.1.2.5)
}

const (
	// minMeanRun is the mean run length, in values, that Append takes.
	// Below it a buffer is more literals than matches, and klauspost's
	// encoder, which finds matches of any pattern, writes it smaller.
	minMeanRun = 8
	// wideOffset is the least offset from which klauspost's decoder
	// copies an overlapping match 16 bytes at a time.
	wideOffset = 16
	// shortRun is the most bytes of a run that parse copies in one match
	// at the value's width.
	shortRun = 2 * wideOffset
	// minRunBuffer is the shortest buffer Append takes.
	minRunBuffer = 256
)

// Append appends to dst one zstd frame (RFC 8878) holding src, with its
// content size and content checksum, and reports true, if src is at least
// minRunBuffer bytes of little-endian values of width bytes (1, 2, 4 or
// 8) whose runs of equal values are minMeanRun values long or longer on
// average in each block of the frame; otherwise it returns dst and false,
// having read at most a block's first values up to as many runs as it
// may have. Literals are Huffman-coded where that pays, sequences
// FSE-coded, as TimeEncoder's.
func (e *RunEncoder) Append(dst, src []byte, width int) ([]byte, bool) {
	switch width {
	case 1, 2, 4, 8:
	default:
		return dst, false
	}
	if len(src) < minRunBuffer || len(src)%width != 0 {
		return dst, false
	}
	// A look at the first values first: a buffer of short runs is
	// refused in a fraction of what parsing its first runs costs.
	if head := src[:min(len(src), runsLook)]; !runsLong(head, width, len(head)/width/minMeanRun) {
		return dst, false
	}
	at := len(dst)
	dst = appendFrameHeader(dst, len(src))
	e.recent, e.rep = [len(e.recent)]pastRun{}, [3]uint32{1, 4, 8}
	for start := 0; start < len(src); start += blockMax { // blockMax is a multiple of width
		end := min(start+blockMax, len(src))
		rep := e.rep
		if !e.parse(src, start, end, width) {
			return dst[:at], false
		}
		var packed bool
		if dst, packed = e.appendParsed(dst, src, start, end); !packed {
			e.rep = rep // a raw block leaves the repeat offsets as they were
		}
	}
	return binary.LittleEndian.AppendUint32(dst, uint32(xxh64(src))), true
}

// runsLook is how many bytes of a buffer Append reads first to refuse it.
const runsLook = 4 << 10

// runsLong reports whether the values of width w in src change from one to
// the next at most limit times. It compares 8 bytes with the 8 a value
// before at a time, and counts the w-byte lanes that differ without a
// branch: a lane's top bit, after its low bits are added to all ones
// below it and or-ed with the lane, is set just when the lane is not 0.
func runsLong(src []byte, w, limit int) bool {
	lo := lowBits[w]
	changes := 0
	a, b := src[w:], src // a value and the one before
	for len(a) >= 8 {
		x := binary.LittleEndian.Uint64(a) ^ binary.LittleEndian.Uint64(b)
		changes += bits.OnesCount64((((x & lo) + lo) | x) &^ lo)
		a, b = a[8:], b[8:]
	}
	for i := 0; i+w <= len(a); i += w {
		if value(a, i, w) != value(b, i, w) {
			changes++
		}
	}
	return changes <= limit
}

// lowBits, by width, has every bit of each lane of that many bytes but
// its top one.
var lowBits = [9]uint64{1: 0x7f7f7f7f7f7f7f7f, 2: 0x7fff7fff7fff7fff, 4: 0x7fffffff7fffffff, 8: 0x7fffffffffffffff}

// ones, by width, is 1 in each lane of that many bytes: a value times it
// is the value in every lane.
var ones = [9]uint64{1: 0x0101010101010101, 2: 0x0001000100010001, 4: 0x0000000100000001, 8: 1}

// parse splits src[start:end] into literals and sequences, run by run,
// and reports true, unless it finds the block's runs shorter than
// minMeanRun values on average, which it stops at. A run's bytes before
// start (in the blocks before) are history its matches may reach into,
// as any match in a frame whose window is its content.
//
// A run begins with a match of the last run of its value, when one of the
// last few (recent) was: as many of its values as it had, copied from
// where they are; what klauspost's encoder finds, and shorter than the
// value's literals when the column holds a few values (a few threads'
// tids). Then the run goes on at the value's width up to its 16th byte,
// and at offset 16 from there.
func (e *RunEncoder) parse(src []byte, start, end, w int) bool {
	e.lits, e.seqs = e.lits[:0], e.seqs[:0]
	pending := uint32(0) // literals since the last sequence
	// As many runs as the block may have, and a few more for a short
	// last block of two or three runs.
	runs, most := 0, (end-start)/w/minMeanRun+8
	for i := start; i < end; {
		if runs++; runs > most {
			return false
		}
		v := value(src, i, w)
		j := i + w // the run from i ends at j
		for word := v * ones[w]; j+8 <= end && binary.LittleEndian.Uint64(src[j:]) == word; {
			j += 8
		}
		for j < end && value(src, j, w) == v {
			j += w
		}
		h := 0 // bytes of the run before i, up to wideOffset
		if i == start {
			for h < wideOffset && i-h-w >= 0 && value(src, i-h-w, w) == v {
				h += w
			}
		}
		rest := j - i
		if h == 0 {
			past := e.pastRun(v)
			if k := min(rest, past.n); k >= 3 {
				e.match(pending, k, i-(past.end-k))
				pending = 0
				h, rest = k, rest-k
			} else {
				e.lits = append(e.lits, src[i:i+w]...)
				pending += uint32(w)
				h, rest = w, rest-w
			}
		}
		if rest < 3 { // too short for a match
			e.lits = append(e.lits, src[j-rest:j]...)
			pending += uint32(rest)
		} else {
			if h < wideOffset {
				// Up to the run's 16th byte at the value's width; a
				// match is 3 bytes or more, so is what it leaves. A
				// short run is one match: a sequence more would cost
				// more to write and to read than the bytes copied one
				// at a time.
				m := max(3, min(rest, wideOffset-h))
				if left := rest - m; left < 3 || rest <= shortRun {
					m = rest
				}
				e.match(pending, m, w)
				pending, rest = 0, rest-m
			}
			if rest > 0 {
				e.match(pending, rest, wideOffset)
				pending = 0
			}
		}
		e.remember(pastRun{v: v, end: j, n: j - i})
		i = j
	}
	return true
}

// match adds the sequence of lits literals and a match of n bytes at
// offset off, by a repeat offset's code when one is off, and updates
// the repeat offsets as the decoder will (RFC 8878 3.1.2.5). After no
// literals, repeat codes 1 and 2 name the second and third repeat offsets
// and 3 the first less one.
func (e *RunEncoder) match(lits uint32, n, off int) {
	r, o := &e.rep, uint32(off)
	v := o + 3
	switch {
	case lits > 0 && o == r[0]:
		v = 1
	case o == r[1]:
		v = 2 - b2u(lits == 0)
		r[0], r[1] = r[1], r[0]
	case o == r[2]:
		v = 3 - b2u(lits == 0)
		r[0], r[1], r[2] = o, r[0], r[1]
	case lits == 0 && o == r[0]-1:
		v = 3
		r[0], r[1], r[2] = o, r[0], r[1]
	default:
		r[0], r[1], r[2] = o, r[0], r[1]
	}
	e.seqs = append(e.seqs, sequence{litLen: lits, matchLen: uint32(n), offVal: v})
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// value returns the value of width w at i.
func value(src []byte, i, w int) uint64 {
	switch w {
	case 1:
		return uint64(src[i])
	case 2:
		return uint64(binary.LittleEndian.Uint16(src[i:]))
	case 4:
		return uint64(binary.LittleEndian.Uint32(src[i:]))
	}
	return binary.LittleEndian.Uint64(src[i:])
}

// pastRun is a run parse has seen: its value, where it ends in the
// buffer, and its length in bytes (0: none).
type pastRun struct {
	v      uint64
	end, n int
}

// pastRun returns the last of the recent runs of value v, or one of
// length 0.
func (e *RunEncoder) pastRun(v uint64) pastRun {
	for _, p := range e.recent {
		if p.n > 0 && p.v == v {
			return p
		}
	}
	return pastRun{}
}

// remember makes p the first of the recent runs, in place of the last run
// of its value if it is there, else of the oldest.
func (e *RunEncoder) remember(p pastRun) {
	k := len(e.recent) - 1
	for at, q := range e.recent {
		if q.n > 0 && q.v == p.v {
			k = at
			break
		}
	}
	copy(e.recent[1:k+1], e.recent[:k])
	e.recent[0] = p
}
