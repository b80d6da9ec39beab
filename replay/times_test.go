package replay

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bpftape/bpftape/format"
)

// TestCheckRun: CheckRun tallies a run of times exactly as Check does each,
// on runs in order, out of order, before the start, around the largest
// and smallest times, and split into runs at random.
func TestCheckRun(t *testing.T) {
	const start = int64(5e9)
	m := &format.Meta{StartBoot: start}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(prev int64) int64 {
		switch rng.IntN(12) {
		case 0:
			return prev - backwardSlack - 1 - rng.Int64N(10)
		case 1:
			return prev - rng.Int64N(backwardSlack)
		case 2:
			return start - backwardSlack - 1 - rng.Int64N(1e9)
		case 3:
			return math.MinInt64 + rng.Int64N(10)
		case 4:
			return math.MaxInt64 - rng.Int64N(10)
		case 5:
			return prev
		}
		return prev + rng.Int64N(1e6)
	}
	for round := 0; round < 2000; round++ {
		ts := make([]int64, rng.IntN(40))
		prev := start + rng.Int64N(1e9) - 5e8
		ordered := rng.IntN(2) == 0
		for i := range ts {
			if ordered {
				prev += rng.Int64N(1e6)
			} else {
				prev = pick(prev)
			}
			ts[i] = prev
		}
		var want, got TimeAnomalies
		for _, x := range ts {
			want.Check(x, m)
		}
		for rest := ts; len(rest) > 0; {
			n := 1 + rng.IntN(len(rest))
			got.CheckRun(rest[:n], m)
			rest = rest[n:]
		}
		got.CheckRun(nil, m)
		if got != want {
			t.Fatalf("round %d: CheckRun %+v, Check %+v, times %v", round, got, want, ts)
		}
	}
}
