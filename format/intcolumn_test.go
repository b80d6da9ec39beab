package format

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestGather: Gather reads every type's rows as Int reads them, from any
// base, for rows in any order and repeated.
func TestGather(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	const n = 300
	buf := make([]byte, 8*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint64(buf[8*i:], rng.Uint64())
	}
	for typ := Int8; typ <= Uint64; typ++ {
		c := intColumn(typ, nil, buf, n)
		base := rng.IntN(n / 2)
		rows := make([]int32, rng.IntN(n-base))
		for j := range rows {
			rows[j] = int32(rng.IntN(n - base))
		}
		dst := make([]int64, len(rows))
		c.Gather(dst, base, rows)
		for j, i := range rows {
			if want := c.Int(base + int(i)); dst[j] != want {
				t.Fatalf("%v: row %d: Gather %d, Int %d", typ, base+int(i), dst[j], want)
			}
		}
	}
}
