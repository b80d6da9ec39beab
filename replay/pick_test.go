package replay

import (
	"math/rand"
	"slices"
	"testing"
)

// TestPickRows holds PickRows to a plain loop over probes of every length
// from 0 to 67 and of PickMax, with one probe or two picked.
func TestPickRows(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	lengths := []int{PickMax - 1, PickMax}
	for n := range 68 {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		probes := make([]uint16, n)
		for i := range probes {
			probes[i] = uint16(r.Intn(4))
		}
		for _, ab := range [][2]uint16{{0, 1}, {2, 2}, {3, 0}, {5, 6}} {
			var want []int32
			for i, p := range probes {
				if p == ab[0] || p == ab[1] {
					want = append(want, int32(100+i))
				}
			}
			var rows [PickMax]int32
			k := PickRows(&rows, probes, 100, ab[0], ab[1])
			if got := rows[:k]; !slices.Equal(got, want) {
				t.Fatalf("%d probes, %v: picked %v, want %v", n, ab, got, want)
			}
		}
	}
}
