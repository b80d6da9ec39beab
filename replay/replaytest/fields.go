package replaytest

import (
	"math/rand"

	"github.com/bpftape/bpftape/format"
)

// RandomFields gives e one value for each field of p, drawn with rng: a
// string field one of strs, an integer field one of ints or, as often, any
// 40-bit signed value (negative ones too).
func RandomFields(rng *rand.Rand, e *format.Event, p *format.Probe, ints []uint64, strs []string) {
	nf := len(p.Fields)
	e.Ints, e.Strs = make([]uint64, nf), make([][]byte, nf)
	for f := range nf {
		if p.Fields[f].Type == format.String {
			e.Strs[f] = []byte(strs[rng.Intn(len(strs))])
			continue
		}
		v := ints[rng.Intn(len(ints))]
		if rng.Intn(2) == 0 {
			v = uint64(rng.Int63n(1<<40) - 1<<39)
		}
		e.Ints[f] = v
	}
}
