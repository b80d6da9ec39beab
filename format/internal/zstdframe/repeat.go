package zstdframe

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// RepeatPeriod is how far back the match of AppendRepeat's frames reaches:
// a buffer that repeats itself every RepeatPeriod bytes is RepeatPeriod
// bytes of literals and one match. Any shorter period that divides it
// (a constant column of 1-, 2-, 4- or 8-byte values, or one alternating
// between two) repeats at this one too.
//
// klauspost's encoder writes the match of a constant 4-byte column at
// offset 4, which its decoder copies a byte at a time: 0.63 ns a byte
// against 0.10 at offset 64, checksum verified (bench/README.md, "What
// decoding costs, column by column").
const RepeatPeriod = 64

// minRepeat is the shortest buffer AppendRepeat takes: its frame is about
// 100 bytes.
const minRepeat = 4 * RepeatPeriod

// AppendRepeat appends to dst one zstd frame (RFC 8878) holding src, with
// its content size and content checksum, and reports true, if src is at
// least minRepeat bytes long and repeats itself every RepeatPeriod bytes
// (src[i] == src[i-RepeatPeriod]); otherwise it returns dst and false.
// The frame's first block holds the first RepeatPeriod bytes as raw
// literals and one match at offset RepeatPeriod for the rest of the
// block; each later block, one such match.
func AppendRepeat(dst, src []byte) ([]byte, bool) {
	n := len(src)
	if n < minRepeat || !bytes.Equal(src[RepeatPeriod:], src[:n-RepeatPeriod]) {
		return dst, false
	}
	dst = appendFrameHeader(dst, n)
	for start := 0; start < n; start += blockMax {
		end := min(start+blockMax, n)
		last := end == n
		lits := 0
		if start == 0 {
			lits = RepeatPeriod
		}
		match := end - start - lits
		if match < 3 {
			// Too short for a match: a raw block (the last one, as
			// the first holds at least minRepeat bytes).
			dst = appendBlockHeader(dst, last, blockRaw, end-start)
			dst = append(dst, src[start:end]...)
			continue
		}
		h := len(dst)
		dst = appendBlockHeader(dst, last, blockCompressed, 0)
		body := len(dst)
		dst = appendRawHeader(dst, litRaw, lits)
		dst = append(dst, src[start:start+lits]...)
		dst = appendOneSequence(dst, uint32(lits), uint32(match), RepeatPeriod+3)
		appendBlockHeader(dst[:h], last, blockCompressed, len(dst)-body)
	}
	return binary.LittleEndian.AppendUint32(dst, uint32(xxh64(src))), true
}

// appendOneSequence appends the sequences section of a block of one
// sequence: lits literals, then a match of match bytes at offset value
// offVal (the offset plus 3: RFC 8878 3.1.1.3.2.1.1). Its three codes are
// in RLE mode, so the bitstream holds no state, only the extra bits of
// the offset, the match length and the literal length, which the decoder
// reads in that order from the end: written the other way round, under
// the stream's closing 1 bit.
func appendOneSequence(dst []byte, lits, match, offVal uint32) []byte {
	ll, ml := llCode(lits), mlCode(match)
	of := uint8(bits.Len32(offVal) - 1)
	dst = append(dst, 1, modeRLE<<6|modeRLE<<4|modeRLE<<2, ll, of, ml)
	acc := uint64(lits - llBase[ll])
	nb := uint(llBits[ll])
	acc |= uint64(match-mlBase[ml]) << nb
	nb += uint(mlBits[ml])
	acc |= uint64(offVal-1<<of) << nb
	nb += uint(of)
	acc |= 1 << nb
	for nb++; nb > 0; nb -= min(nb, 8) {
		dst = append(dst, byte(acc))
		acc >>= 8
	}
	return dst
}
