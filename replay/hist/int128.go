package hist

import (
	"math/big"
	"math/bits"
)

// int128 is a two's complement 128-bit integer, wide enough to hold the exact
// sum of 2^64 values of 64 bits each.
type int128 struct {
	hi, lo uint64
}

// addUint64 adds v*n, treating both as unsigned.
func (s *int128) addUint64(v, n uint64) {
	phi, plo := bits.Mul64(v, n)
	var c uint64
	s.lo, c = bits.Add64(s.lo, plo, 0)
	s.hi, _ = bits.Add64(s.hi, phi, c)
}

// addInt64 adds the signed value v.
func (s *int128) addInt64(v int64) {
	var c uint64
	s.lo, c = bits.Add64(s.lo, uint64(v), 0)
	s.hi, _ = bits.Add64(s.hi, uint64(v>>63), c)
}

// addInt64N adds the signed value v n times.
func (s *int128) addInt64N(v int64, n uint64) {
	m := uint64(v)
	if v < 0 {
		m = -m
	}
	phi, plo := bits.Mul64(m, n)
	if v < 0 { // two's complement of the 128-bit product
		var c uint64
		plo, c = bits.Add64(^plo, 1, 0)
		phi, _ = bits.Add64(^phi, 0, c)
	}
	s.add(int128{hi: phi, lo: plo})
}

// add adds o.
func (s *int128) add(o int128) {
	var c uint64
	s.lo, c = bits.Add64(s.lo, o.lo, 0)
	s.hi, _ = bits.Add64(s.hi, o.hi, c)
}

// big returns s as a big.Int, interpreting it as signed if signed is set.
func (s int128) big(signed bool) *big.Int {
	hi := new(big.Int).SetUint64(s.hi)
	r := new(big.Int).Lsh(hi, 64)
	r.Or(r, new(big.Int).SetUint64(s.lo))
	if signed && int64(s.hi) < 0 {
		r.Sub(r, new(big.Int).Lsh(big.NewInt(1), 128))
	}
	return r
}

// mean returns sum/count correctly rounded to float64, or 0 if count is 0.
func mean(sum *big.Int, count uint64) float64 {
	if count == 0 {
		return 0
	}
	q := new(big.Float).SetPrec(53).Quo(
		new(big.Float).SetInt(sum),
		new(big.Float).SetUint64(count))
	f, _ := q.Float64()
	return f
}
