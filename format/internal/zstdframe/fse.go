package zstdframe

import "math/bits"

// fseTable is an FSE (tANS) encoding table for one sequence code stream of
// a block (literal lengths, offsets or match lengths), built from the
// normalized counts that the block's table description carries, so that
// the decoder builds the matching decoding table (RFC 8878 4.1).
//
// state and delta are arrays of the largest size any stream needs (log 9,
// 53 match length codes), so that encoding indexes them under a mask, with
// no bounds checks in the loop over a block's sequences.
type fseTable struct {
	log   uint
	norm  []int16 // normalized count per symbol: sum 1<<log, each used symbol ≥ 1
	state [maxStates]uint16
	delta [maxSymbols]symbolTransform
	// build's scratch
	symbols    []uint8
	cumul, pos []int
}

const (
	maxStates  = 1 << 9 // the largest accuracy log of the three streams (prepare's maxLog)
	maxSymbols = 64     // more than the 53 match length codes
)

type symbolTransform struct {
	nbBits    uint32 // deltaNbBits: (maxBitsOut << 16) - (norm << maxBitsOut)
	findState int32  // start of the symbol's states in state, minus norm
}

// normalize sets t.norm from counts (of total values) at accuracy log.
// Every symbol that occurs gets at least 1; the largest absorbs rounding.
func (t *fseTable) normalize(counts []uint32, total uint32, log uint) {
	t.log = log
	t.norm = t.norm[:0]
	size := int32(1) << log
	sum, largest := int32(0), -1
	for s, c := range counts {
		n := int32(0)
		if c > 0 {
			n = max(int32(uint64(c)<<log/uint64(total)), 1)
		}
		t.norm = append(t.norm, int16(n))
		sum += n
		if largest < 0 || n > int32(t.norm[largest]) {
			largest = s
		}
	}
	// Rounding down leaves sum ≤ size unless many rare symbols were raised
	// to 1; take the excess from the largest counts, keeping each ≥ 1.
	for sum > size {
		big := 0
		for s := range t.norm {
			if t.norm[s] > t.norm[big] {
				big = s
			}
		}
		take := min(sum-size, int32(t.norm[big])-1)
		t.norm[big] -= int16(take)
		sum -= take
	}
	t.norm[largest] += int16(size - sum)
}

// build makes the encoding table from t.norm, spreading symbols over the
// states as the decoder does.
func (t *fseTable) build() {
	size := 1 << t.log
	mask := size - 1
	step := size>>1 + size>>3 + 3
	t.symbols = grow(t.symbols, size)
	symbols := t.symbols
	pos := 0
	for s, n := range t.norm {
		for range n {
			symbols[pos] = uint8(s)
			pos = (pos + step) & mask
		}
	}
	t.cumul, t.pos = grow(t.cumul, len(t.norm)+1), grow(t.pos, len(t.norm)+1)
	cumul, next := t.cumul, t.pos
	cumul[0] = 0
	for s, n := range t.norm {
		cumul[s+1] = cumul[s] + int(n)
	}
	copy(next, cumul)
	for u := range size {
		s := symbols[u]
		t.state[next[s]] = uint16(size + u)
		next[s]++
	}
	for s, n := range t.norm {
		var d symbolTransform
		if n > 0 {
			// log - floor(log2(n-1)), and log for a count of 1
			maxBitsOut := uint32(t.log)
			if n > 1 {
				maxBitsOut = uint32(t.log) + 1 - uint32(bits.Len32(uint32(n-1)))
			}
			d.nbBits = maxBitsOut<<16 - uint32(n)<<maxBitsOut
			d.findState = int32(cumul[s]) - int32(n)
		}
		t.delta[s] = d
	}
}

// fseState is the encoder's state in one table: a value in [size, 2*size).
type fseState struct {
	t     *fseTable
	value uint32
}

// init starts the state at symbol s without writing bits (the first
// symbol encoded is the last the decoder reads).
func (st *fseState) init(t *fseTable, s uint8) {
	st.t = t
	d := t.delta[s]
	nb := (d.nbBits + 1<<15) >> 16
	v := nb<<16 - d.nbBits
	st.value = uint32(t.state[int32(v>>nb)+d.findState])
}

// step is one encoding step from state v to symbol s: the bits that take
// the decoder from s's state to v, their number (at most the table's log)
// and the next state, s's. The masks keep the indexes in the arrays; a
// table that build made never needs them.
func (t *fseTable) step(v uint32, s uint8) (bits uint64, nb uint, next uint32) {
	d := t.delta[s&(maxSymbols-1)]
	n := (v + d.nbBits) >> 16
	return uint64(v & (1<<n - 1)), uint(n), uint32(t.state[uint32(int32(v>>n)+d.findState)&(maxStates-1)])
}

// flush writes the final state, which the decoder reads first.
func (st *fseState) flush(w *bitWriter) { w.add(uint64(st.value), st.t.log) }

// writeDescription appends t's FSE table description (RFC 8878 4.1.1):
// the accuracy log, then each symbol's count + 1 in as many bits as the
// probability still to be distributed needs, a zero count followed by
// 2-bit flags for the zero counts that follow it.
func (t *fseTable) writeDescription(w *bitWriter) {
	w.add(uint64(t.log-5), 4)
	remaining := int32(1)<<t.log + 1
	threshold := int32(1) << t.log
	nbBits := t.log + 1
	last := len(t.norm) - 1
	for last > 0 && t.norm[last] == 0 {
		last--
	}
	for s := 0; s <= last; {
		n := int32(t.norm[s])
		v := n + 1
		limit := 2*threshold - 1 - remaining
		switch {
		case v < limit:
			w.add(uint64(v), nbBits-1)
		case v < threshold:
			w.add(uint64(v), nbBits)
		default:
			w.add(uint64(v+limit), nbBits)
		}
		remaining -= n
		for remaining < threshold {
			nbBits--
			threshold >>= 1
		}
		s++
		if n == 0 {
			zeros := 0
			for s+zeros <= last && t.norm[s+zeros] == 0 {
				zeros++
			}
			s += zeros
			for ; zeros >= 3; zeros -= 3 {
				w.add(3, 2)
			}
			w.add(uint64(zeros), 2)
		}
	}
	w.pad()
}

// grow returns b resized to n, reallocated only if too small.
func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}
