package format

import (
	"math/rand"
	"testing"
)

// TestMaxProbe: maxProbe finds the largest value wherever it lies, in
// slices of every length around its four-at-a-time loop.
func TestMaxProbe(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for n := 0; n <= 11; n++ {
		for at := 0; at < n; at++ {
			ps := make([]uint16, n)
			for i := range ps {
				ps[i] = uint16(r.Intn(100))
			}
			ps[at] = 60000
			if got := maxProbe(ps); got != 60000 {
				t.Errorf("%d values, the largest at %d: got %d", n, at, got)
			}
		}
	}
	if got := maxProbe(nil); got != 0 {
		t.Errorf("no values: got %d", got)
	}
}

// BenchmarkMaxProbe: a batch's probe column, two probes alternating.
func BenchmarkMaxProbe(b *testing.B) {
	ps := make([]uint16, 32<<10)
	for i := range ps {
		ps[i] = uint16(i % 2)
	}
	b.SetBytes(int64(2 * len(ps)))
	for range b.N {
		if maxProbe(ps) != 1 {
			b.Fatal("wrong maximum")
		}
	}
}
