package format

import (
	"encoding/binary"
	"math/rand"
	"testing"
)

// TestViewRun holds viewRun to a byte comparison of each view with the
// first, from every row to every end, over views in runs of 1 to 9 rows
// of one byte in the second word, some with a byte in the first word too
// (runs of one view end there), and views built to pass a comparison
// that reads ^ and | left to right.
func TestViewRun(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	const n = 300
	views := make([]byte, 16*n)
	for i, c := 0, 0; i < n; c++ {
		k := 1 + r.Intn(9)
		for j := i; j < min(i+k, n); j++ {
			views[16*j+r.Intn(2)*8+3] = byte(c) // one word or the other
			views[16*j+11] = byte(c)
		}
		i += k
	}
	// A view whose words differ from the first's only in bits that the
	// first's second word has: (a^lo)|b == hi, where a^lo|b^hi, read
	// left to right as Go reads it, is 0.
	binary.LittleEndian.PutUint64(views[16*100:], 0x0100)
	binary.LittleEndian.PutUint64(views[16*100+8:], 0x0300)
	for j := 101; j < 110; j++ {
		binary.LittleEndian.PutUint64(views[16*j:], 0)
		binary.LittleEndian.PutUint64(views[16*j+8:], 0x0200)
	}
	for lo := 0; lo < n; lo++ {
		for _, hi := range []int{lo + 1, min(lo+5, n), n} {
			want := lo + 1
			for want < hi && string(views[16*want:16*want+16]) == string(views[16*lo:16*lo+16]) {
				want++
			}
			if got := viewRun(views, lo, hi); got != want {
				t.Fatalf("viewRun(%d, %d) = %d, want %d", lo, hi, got, want)
			}
		}
	}
}

// BenchmarkViewRun finds the runs of one view in a batch of 32Ki views in
// runs of 1 to 64 rows, four comms at random, as count --by comm and the Parquet
// export find them in the synthesized capture: ns a row.
//
//	go test -run '^$' -bench ViewRun -count 4 ./format/
func BenchmarkViewRun(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	const n = 32768
	views := make([]byte, 16*n)
	for i := 0; i < n; {
		k, c := 1+r.Intn(64), byte(r.Intn(4))
		for j := i; j < min(i+k, n); j++ {
			views[16*j], views[16*j+4] = 9, c
		}
		i += k
	}
	runs := 0
	for b.Loop() {
		for i := 0; i < n; runs++ {
			i = viewRun(views, i, n)
		}
	}
	if runs == 0 {
		b.Fatal("no runs")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/row")
}
