package zstdframe

import "encoding/binary"

// bitWriter appends bits least significant first, as zstd's forward
// bitstreams (FSE table descriptions) and, read backwards by the decoder,
// its sequence and Huffman streams are laid out.
type bitWriter struct {
	out   []byte
	acc   uint64 // pending bits, the oldest lowest
	nbits uint   // how many of acc's bits are pending (< 8 after flush)
}

// add appends the n low bits of v (n ≤ 32).
func (w *bitWriter) add(v uint64, n uint) {
	w.acc |= (v & (1<<n - 1)) << w.nbits
	w.nbits += n
	w.flush32()
}

// addFew appends v, which has at most n bits, without flushing: the
// caller keeps the pending bits at most 64 (flush32 leaves at most 31).
func (w *bitWriter) addFew(v uint64, n uint) {
	w.acc |= v << w.nbits
	w.nbits += n
}

// flush32 moves 32 bits to out once that many are pending.
func (w *bitWriter) flush32() {
	if w.nbits >= 32 {
		w.out = binary.LittleEndian.AppendUint32(w.out, uint32(w.acc))
		w.acc >>= 32
		w.nbits -= 32
	}
}

// flush moves the whole bytes of acc to out.
func (w *bitWriter) flush() {
	for w.nbits >= 8 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		w.nbits -= 8
	}
}

// pad appends the pending bits padded with zeros to a byte.
func (w *bitWriter) pad() {
	w.flush()
	if w.nbits > 0 {
		w.out = append(w.out, byte(w.acc))
		w.acc, w.nbits = 0, 0
	}
}

// close ends a backward-read stream: a 1 bit marks where its bits end
// (RFC 8878 4.1: the decoder starts at the highest set bit of the last
// byte), then zero padding.
func (w *bitWriter) close() {
	w.add(1, 1)
	w.pad()
}
