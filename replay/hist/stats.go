package hist

import (
	"math"
	"math/big"
	"math/bits"
)

// Stats summarizes signed values: exact count, sum, minimum and maximum, and
// percentiles estimated from a log-linear histogram whose size does not
// depend on the number of values.
//
// Magnitudes below 128 are counted exactly; larger ones in 128 buckets per
// power of two, each 1/128 of its lower bound wide. A percentile is reported
// as the middle of its bucket, clamped to [Min, Max], so it differs from the
// exact nearest-rank percentile by less than 1/256 (0.4%) of the latter's
// magnitude, and not at all below 128.
//
// The zero value is empty and ready to use.
type Stats struct {
	count    uint64
	sum      int128
	min, max int64
	// chunks[neg][c] counts the values of sign neg whose magnitude is
	// below 128 (c == 0) or has its top bit at 2^(c+6), 128 per chunk.
	chunks [2][statsChunks]*[statsSub]uint64
}

const (
	statsSubBits = 7
	statsSub     = 1 << statsSubBits // sub-buckets per power of two
	statsChunks  = 64 - statsSubBits + 1
)

// statsBucket returns where magnitude m is counted.
func statsBucket(m uint64) (chunk, sub int) {
	if m < statsSub {
		return 0, int(m)
	}
	e := bits.Len64(m) - 1 // statsSubBits..63
	return e - statsSubBits + 1, int(m>>(e-statsSubBits)) - statsSub
}

// statsMid returns the middle magnitude of a bucket.
func statsMid(chunk, sub int) uint64 {
	if chunk == 0 {
		return uint64(sub)
	}
	shift := chunk - 1
	low := uint64(statsSub+sub) << shift
	return low + (uint64(1)<<shift-1)/2
}

// Add records v. It allocates only the first time a value falls into a new
// power of two, at most 116 times over the life of s.
func (s *Stats) Add(v int64) {
	s.tally(v, 1)
	s.sum.addInt64(v)
}

// AddN records n occurrences of v, as n calls of Add would.
func (s *Stats) AddN(v int64, n uint64) {
	if n == 0 {
		return
	}
	s.tally(v, n)
	s.sum.addInt64N(v, n)
}

// AddAll records each of vs, as Add would one by one: the values that are
// not negative and fall in buckets already made in a loop of their own
// (addMade), with the count, sum, minimum and maximum kept over the slice
// (latency's durations, a stretch of rows at a time); another value goes
// through Add.
func (s *Stats) AddAll(vs []int64) {
	var slots [Log2Slots]uint64
	for len(vs) > 0 {
		n, _, _, _ := s.addMade(vs, &slots)
		vs = vs[n:]
		if len(vs) > 0 {
			s.Add(vs[0])
			vs = vs[1:]
		}
	}
}

// AddAllLog2 records each of vs in s, as s.AddAll(vs) would, and in h, as
// h.AddInt64s(vs) would, in one loop: the two kept the same count, sum,
// minimum and maximum and read the values twice (latency and requests
// count their durations and sizes in both; BenchmarkStatsAddAll,
// durations: 2.83-2.90 ns a value one after the other, 1.83-1.89 in one
// loop).
func AddAllLog2(s *Stats, h *Log2, vs []int64) {
	for len(vs) > 0 {
		n, lo, hi, sum := s.addMade(vs, &h.slots)
		if n > 0 {
			h.summarize(uint64(n), uint64(lo), uint64(hi), sum)
		}
		vs = vs[n:]
		if len(vs) > 0 {
			s.Add(vs[0])
			h.Add(uint64(vs[0]))
			vs = vs[1:]
		}
	}
}

// addMade records vs's values up to the first that is negative or falls in
// a chunk not yet made, and returns how many it recorded, and their
// minimum, maximum and sum; it counts each in its slot of slots too
// (Log2Slot). Its loop calls nothing, so the compiler keeps its sums in
// registers, where a chunk made in the loop sent them to the stack and back
// every value (BenchmarkStatsAddAll: 2.6-3.2 ns a value before, 1.9-2.5
// after).
func (s *Stats) addMade(vs []int64, slots *[Log2Slots]uint64) (n int, lo, hi int64, sum int128) {
	lo = math.MaxInt64
	var sumLo, sumHi, c uint64
	chunks := &s.chunks[0]
	for _, v := range vs {
		if v < 0 {
			break
		}
		ch, i := statsBucket(uint64(v))
		p := chunks[ch]
		if p == nil {
			break
		}
		p[i]++
		slots[bits.Len64(uint64(v)|1)]++
		lo, hi = min(lo, v), max(hi, v)
		sumLo, c = bits.Add64(sumLo, uint64(v), 0)
		sumHi += c
		n++
	}
	if n == 0 {
		return 0, 0, 0, int128{}
	}
	if s.count == 0 || lo < s.min {
		s.min = lo
	}
	if s.count == 0 || hi > s.max {
		s.max = hi
	}
	s.count += uint64(n)
	sum = int128{hi: sumHi, lo: sumLo}
	s.sum.add(sum)
	return n, lo, hi, sum
}

// tally counts n occurrences of v in its bucket, the minimum, the
// maximum and the count; the caller adds them to the sum.
func (s *Stats) tally(v int64, n uint64) {
	neg, m := 0, uint64(v)
	if v < 0 {
		neg, m = 1, -m
	}
	c, i := statsBucket(m)
	p := s.chunks[neg][c]
	if p == nil {
		p = new([statsSub]uint64)
		s.chunks[neg][c] = p
	}
	p[i] += n
	if s.count == 0 || v < s.min {
		s.min = v
	}
	if s.count == 0 || v > s.max {
		s.max = v
	}
	s.count += n
}

// Reset empties s, keeping the memory of the buckets it has counted in.
func (s *Stats) Reset() {
	for neg := range s.chunks {
		for _, p := range s.chunks[neg] {
			if p != nil {
				clear(p[:])
			}
		}
	}
	s.count, s.sum, s.min, s.max = 0, int128{}, 0, 0
}

// Merge adds all values recorded in o to s.
func (s *Stats) Merge(o *Stats) {
	if o.count == 0 {
		return
	}
	for neg := range o.chunks {
		for c, op := range o.chunks[neg] {
			if op == nil {
				continue
			}
			p := s.chunks[neg][c]
			if p == nil {
				p = new([statsSub]uint64)
				s.chunks[neg][c] = p
			}
			for i, n := range op {
				p[i] += n
			}
		}
	}
	if s.count == 0 || o.min < s.min {
		s.min = o.min
	}
	if s.count == 0 || o.max > s.max {
		s.max = o.max
	}
	s.count += o.count
	s.sum.add(o.sum)
}

// Count returns the number of values recorded.
func (s *Stats) Count() uint64 { return s.count }

// Sum returns the exact sum of the values recorded.
func (s *Stats) Sum() *big.Int { return s.sum.big(true) }

// Mean returns the mean of the values recorded, or 0 if there are none.
func (s *Stats) Mean() float64 { return mean(s.Sum(), s.count) }

// Min returns the smallest value recorded, or 0 if there are none.
func (s *Stats) Min() int64 { return s.min }

// Max returns the largest value recorded, or 0 if there are none.
func (s *Stats) Max() int64 { return s.max }

// Percentile estimates the p-th percentile, 0 <= p <= 100, by nearest rank:
// the value at rank ceil(p/100*Count) in increasing order. It returns Min
// for ranks 1 and below, Max for the last rank, and 0 if s is empty.
func (s *Stats) Percentile(p float64) int64 {
	r := rank(p, s.count)
	switch {
	case s.count == 0:
		return 0
	case r <= 1:
		return s.min
	case r >= s.count:
		return s.max
	}
	var seen uint64
	// Negative values, from the largest magnitude down.
	for c := statsChunks - 1; c >= 0; c-- {
		ch := s.chunks[1][c]
		if ch == nil {
			continue
		}
		for i := statsSub - 1; i >= 0; i-- {
			if seen += ch[i]; seen >= r {
				m := statsMid(c, i)
				if m > 1<<63 {
					return s.min
				}
				return max(-int64(m), s.min)
			}
		}
	}
	// Then zero and positive values, from the smallest up.
	for c := range statsChunks {
		ch := s.chunks[0][c]
		if ch == nil {
			continue
		}
		for i := range statsSub {
			if seen += ch[i]; seen >= r {
				return min(int64(statsMid(c, i)), s.max)
			}
		}
	}
	return s.max // not reached
}

// rank returns the 1-based nearest rank of the p-th percentile of n values.
func rank(p float64, n uint64) uint64 {
	if n == 0 || !(p > 0) {
		return 0
	}
	if p >= 100 {
		return n
	}
	return uint64(math.Ceil(p * float64(n) / 100))
}
