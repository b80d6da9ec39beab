package zstdframe

import (
	"encoding/binary"
	"errors"
	"math/bits"

	"github.com/klauspost/compress/huff0"
)

// blockCoder writes the literals and sequences sections of a compressed
// block from the literals and sequences an encoder's parse made of it:
// TimeEncoder's and RunEncoder's.
type blockCoder struct {
	lits []byte
	seqs []sequence
	huff huff0.Scratch
	// each block's code per sequence and its tables
	llCodes, mlCodes, ofCodes []uint8
	ll, of, ml                fseTable
	bw                        bitWriter
}

// sequence is a zstd sequence: litLen literals, then matchLen bytes copied
// from offVal's offset (1: repeat offset 1; 3: repeat offset 3, which is 8
// until a sequence uses it; above 3, the offset plus 3).
type sequence struct {
	litLen, matchLen, offVal uint32
}

// appendParsed appends src[start:end] as one block, compressed from the
// literals and sequences parsed from it, or raw if that is not smaller,
// and reports whether it is compressed.
func (e *blockCoder) appendParsed(dst, src []byte, start, end int) ([]byte, bool) {
	last := end == len(src)
	h := len(dst)
	dst = appendBlockHeader(dst, last, blockCompressed, 0)
	body := len(dst)
	dst = e.appendLiterals(dst)
	dst = e.appendSequences(dst)
	if size := len(dst) - body; size < end-start {
		appendBlockHeader(dst[:h], last, blockCompressed, size)
		return dst, true
	}
	dst = appendBlockHeader(dst[:h], last, blockRaw, end-start)
	return append(dst, src[start:end]...), false
}

// Literals_Block_Type (RFC 8878 3.1.1.3.1.1).
const (
	litRaw        = 0
	litRLE        = 1
	litCompressed = 2
)

func (e *blockCoder) appendLiterals(dst []byte) []byte {
	n := len(e.lits)
	var (
		out []byte
		err = huff0.ErrIncompressible
	)
	single := n < 1024
	if n > 16 {
		e.huff.Reuse = huff0.ReusePolicyNone
		if single {
			out, _, err = huff0.Compress1X(e.lits, &e.huff)
		} else {
			out, _, err = huff0.Compress4X(e.lits, &e.huff)
		}
		if err == nil && len(out)+5 >= n {
			err = huff0.ErrIncompressible
		}
	}
	switch {
	case err == nil:
		c := uint64(len(out))
		switch {
		case single: // one stream, 10-bit sizes
			h := litCompressed | uint64(n)<<4 | c<<14
			dst = append(dst, byte(h), byte(h>>8), byte(h>>16))
		case n < 1<<10 && c < 1<<10:
			h := litCompressed | 1<<2 | uint64(n)<<4 | c<<14
			dst = append(dst, byte(h), byte(h>>8), byte(h>>16))
		case n < 1<<14 && c < 1<<14:
			h := litCompressed | 2<<2 | uint64(n)<<4 | c<<18
			dst = binary.LittleEndian.AppendUint32(dst, uint32(h))
		default:
			h := litCompressed | 3<<2 | uint64(n)<<4 | c<<22
			dst = append(dst, byte(h), byte(h>>8), byte(h>>16), byte(h>>24), byte(h>>32))
		}
		return append(dst, out...)
	case errors.Is(err, huff0.ErrUseRLE):
		return append(appendRawHeader(dst, litRLE, n), e.lits[0])
	default:
		return append(appendRawHeader(dst, litRaw, n), e.lits...)
	}
}

// appendRawHeader appends the header of raw or RLE literals of size n.
func appendRawHeader(dst []byte, typ int, n int) []byte {
	switch {
	case n < 1<<5:
		return append(dst, byte(typ|n<<3))
	case n < 1<<12:
		h := typ | 1<<2 | n<<4
		return append(dst, byte(h), byte(h>>8))
	default:
		h := typ | 3<<2 | n<<4
		return append(dst, byte(h), byte(h>>8), byte(h>>16))
	}
}

// Symbol compression modes (RFC 8878 3.1.1.3.2.1.1).
const (
	modeRLE = 1
	modeFSE = 2
)

// Literal length and match length codes: base value and extra bits
// (RFC 8878 3.1.1.3.2.1.1).
var (
	llBase = [36]uint32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
		16, 18, 20, 22, 24, 28, 32, 40, 48, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536}
	llBits = [36]uint8{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	mlBase = [53]uint32{3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
		19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34,
		35, 37, 39, 41, 43, 47, 51, 59, 67, 83, 99, 131, 259, 515, 1027, 2051, 4099, 8195, 16387, 32771, 65539}
	mlBits = [53]uint8{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
)

// code is the last code whose base is at most v.
func code(base []uint32, v uint32) uint8 {
	c := len(base) - 1
	for base[c] > v {
		c--
	}
	return uint8(c)
}

func llCode(v uint32) uint8 {
	if v < 16 {
		return uint8(v)
	}
	return code(llBase[:], v)
}

func mlCode(v uint32) uint8 {
	if v < 35 {
		return uint8(v - 3)
	}
	return code(mlBase[:], v)
}

func (e *blockCoder) appendSequences(dst []byte) []byte {
	nb := len(e.seqs)
	switch {
	case nb < 128:
		dst = append(dst, byte(nb))
	case nb < 0x7F00:
		dst = append(dst, byte(nb>>8+128), byte(nb))
	default:
		dst = append(dst, 0xFF)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(nb-0x7F00))
	}
	if nb == 0 {
		return dst
	}
	if cap(e.llCodes) < nb {
		e.llCodes, e.mlCodes, e.ofCodes = make([]uint8, nb), make([]uint8, nb), make([]uint8, nb)
	}
	e.llCodes, e.mlCodes, e.ofCodes = e.llCodes[:nb], e.mlCodes[:nb], e.ofCodes[:nb]
	var llCount [len(llBase)]uint32
	var mlCount [len(mlBase)]uint32
	var ofCount [32]uint32
	llc, mlc, ofc := e.llCodes, e.mlCodes, e.ofCodes
	for i, s := range e.seqs {
		l, m, o := llCode(s.litLen), mlCode(s.matchLen), uint8(bits.Len32(s.offVal)-1)
		llc[i], mlc[i], ofc[i] = l, m, o
		llCount[l]++
		mlCount[m]++
		ofCount[o]++
	}
	llMode := e.ll.prepare(llCount[:], uint32(nb), 9)
	ofMode := e.of.prepare(ofCount[:], uint32(nb), 8)
	mlMode := e.ml.prepare(mlCount[:], uint32(nb), 9)
	dst = append(dst, byte(llMode<<6|ofMode<<4|mlMode<<2))
	e.bw = bitWriter{out: dst}
	for _, t := range []struct {
		t    *fseTable
		mode int
		code uint8
	}{{&e.ll, llMode, e.llCodes[0]}, {&e.of, ofMode, e.ofCodes[0]}, {&e.ml, mlMode, e.mlCodes[0]}} {
		if t.mode == modeRLE {
			e.bw.out = append(e.bw.out, t.code)
		} else {
			t.t.writeDescription(&e.bw)
		}
	}

	// The bitstream, which the decoder reads from its end: the last
	// sequence's states first, its extra bits, then each earlier one's.
	var ll, of, ml fseState
	n := nb - 1
	if mlMode == modeFSE {
		ml.init(&e.ml, e.mlCodes[n])
	}
	if ofMode == modeFSE {
		of.init(&e.of, e.ofCodes[n])
	}
	if llMode == modeFSE {
		ll.init(&e.ll, e.llCodes[n])
	}
	e.extraBits(n)
	e.encodeStates(n, ofMode == modeFSE, mlMode == modeFSE, llMode == modeFSE, &of.value, &ml.value, &ll.value)
	if mlMode == modeFSE {
		ml.flush(&e.bw)
	}
	if ofMode == modeFSE {
		of.flush(&e.bw)
	}
	if llMode == modeFSE {
		ll.flush(&e.bw)
	}
	e.bw.close()
	return e.bw.out
}

// encodeStates writes sequences n-1 down to 0: each one's offset, match
// length and literal length codes (those of the streams in FSE mode) from
// the states in *ofv, *mlv and *llv, which it leaves at sequence 0's, then
// its extra bits. It is the loop that takes most of Encode's time, hence
// the bit writer's accumulator in locals and the masked table indexes
// (fseTable.step). BenchmarkEncode at 300 ns / 2 µs / 7 µs apart, three
// runs each, with the loop as it was (a method call per code writing
// through e.bw, bounds-checked tables) against this: 14.0-14.6 / 14.2-15.1
// / 13.8-15.1 ns a value against 11.8-11.9 / 11.7-12.4 / 11.9-12.0.
func (e *blockCoder) encodeStates(n int, ofOn, mlOn, llOn bool, ofv, mlv, llv *uint32) {
	out, acc, nbits := e.bw.out, e.bw.acc, e.bw.nbits
	oft, mlt, llt := &e.of, &e.ml, &e.ll
	ofs, mls, lls := *ofv, *mlv, *llv
	ofc, mlc, llc := e.ofCodes[:n+1], e.mlCodes[:n+1], e.llCodes[:n+1]
	for i := n - 1; i >= 0; i-- {
		// At most 31 bits are pending, and each stream adds at most
		// its log (8, 9, 9): 57 fit the accumulator.
		if ofOn {
			b, k, next := oft.step(ofs, ofc[i])
			acc |= b << nbits
			nbits += k
			ofs = next
		}
		if mlOn {
			b, k, next := mlt.step(mls, mlc[i])
			acc |= b << nbits
			nbits += k
			mls = next
		}
		if llOn {
			b, k, next := llt.step(lls, llc[i])
			acc |= b << nbits
			nbits += k
			lls = next
		}
		if nbits >= 32 {
			out = binary.LittleEndian.AppendUint32(out, uint32(acc))
			acc >>= 32
			nbits -= 32
		}
		if hasExtraBits(llc[i], mlc[i], ofc[i]) {
			e.bw = bitWriter{out: out, acc: acc, nbits: nbits}
			e.extraBits(i)
			out, acc, nbits = e.bw.out, e.bw.acc, e.bw.nbits
		}
	}
	e.bw = bitWriter{out: out, acc: acc, nbits: nbits}
	*ofv, *mlv, *llv = ofs, mls, lls
}

// hasExtraBits reports whether a sequence with these literal length,
// match length and offset codes has bits beyond the codes' bases. Most
// here have none.
func hasExtraBits(l, m, o uint8) bool { return l >= 16 || m >= 32 || o != 0 }

// extraBits writes sequence n's literal length, match length and offset
// bits beyond their codes' bases, and leaves at most 31 bits pending.
func (e *blockCoder) extraBits(n int) {
	s := e.seqs[n]
	l, m, o := e.llCodes[n], e.mlCodes[n], e.ofCodes[n]
	if !hasExtraBits(l, m, o) {
		return
	}
	e.bw.addFew(uint64(s.litLen-llBase[l]), uint(llBits[l])) // ≤ 16 bits
	e.bw.flush32()
	e.bw.addFew(uint64(s.matchLen-mlBase[m]), uint(mlBits[m])) // ≤ 16
	e.bw.flush32()
	e.bw.addFew(uint64(s.offVal-1<<o), uint(o)) // ≤ 31
	e.bw.flush32()
}

// prepare picks the mode of one code stream: RLE for a single code, else
// an FSE table at the smallest accuracy log (5 to maxLog) that suits nb
// sequences, built.
func (t *fseTable) prepare(counts []uint32, nb uint32, maxLog uint) int {
	used, lastUsed := 0, 0
	for s, c := range counts {
		if c > 0 {
			used++
			lastUsed = s
		}
	}
	if used == 1 {
		return modeRLE
	}
	log := min(maxLog, max(5, uint(bits.Len32(nb))-2))
	for 1<<log < 2*used && log < maxLog {
		log++
	}
	t.normalize(counts[:lastUsed+1], nb, log)
	t.build()
	return modeFSE
}
