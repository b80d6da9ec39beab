package decimal

import (
	"math"
	"math/rand"
	"strconv"
	"testing"
)

// TestAppend checks AppendUint, AppendInt and AppendBits against strconv: around
// every power of ten, at the limits, and at random lengths, after a
// prefix and into buffers with and without room.
func TestAppend(t *testing.T) {
	check := func(u uint64) {
		t.Helper()
		for _, b := range [][]byte{nil, []byte("x="), make([]byte, 3, 9)} {
			prefix := string(b)
			if got, want := string(AppendUint(b, u)), prefix+strconv.FormatUint(u, 10); got != want {
				t.Fatalf("AppendUint(%q, %d) = %q", prefix, u, got)
			}
			for _, x := range []int64{int64(u), -int64(u)} {
				if got, want := string(AppendInt(b, x)), prefix+strconv.FormatInt(x, 10); got != want {
					t.Fatalf("AppendInt(%q, %d) = %q", prefix, x, got)
				}
				if got, want := string(AppendBits(b, uint64(x), 0)), prefix+strconv.FormatUint(uint64(x), 10); got != want {
					t.Fatalf("AppendBits(%q, %d, 0) = %q", prefix, uint64(x), got)
				}
			}
		}
	}
	for u := uint64(0); u < 20000; u++ {
		check(u)
	}
	for p := uint64(1); p <= 1e19 && p != 0; p *= 10 {
		for _, d := range []int64{-2, -1, 0, 1, 2} {
			check(uint64(int64(p) + d))
		}
		if p > math.MaxUint64/10 {
			break
		}
	}
	for _, u := range []uint64{math.MaxUint64, math.MaxUint64 - 1, 1 << 63, 1<<63 - 1, 1<<63 + 1, math.MaxUint32, 99_999_999, 100_000_000} {
		check(u)
	}
	rng := rand.New(rand.NewSource(1))
	for k := 0; k < 200000; k++ {
		check(rng.Uint64() >> uint(rng.Intn(64)))
	}
	if got := string(Append8([]byte("."), 1234)); got != ".00001234" {
		t.Errorf("Append8(1234) = %q", got)
	}
}

// TestRising checks Rising against strconv on rising times, through 10^8
// and its multiples, and on negative and unordered values.
func TestRising(t *testing.T) {
	var r Rising
	rng := rand.New(rand.NewSource(2))
	check := func(x int64) {
		t.Helper()
		if got, want := string(r.AppendInt([]byte("t="), x)), "t="+strconv.FormatInt(x, 10); got != want {
			t.Fatalf("Rising.AppendInt(%d) = %q", x, got)
		}
	}
	for x := int64(99_999_000); x < 1_000_000_000; x += rng.Int63n(3_000_000) {
		check(x)
	}
	for x := int64(1_700_000_000_000_000_000); x < 1_700_000_010_000_000_000; x += rng.Int63n(30_000_000) {
		check(x)
	}
	for _, x := range []int64{0, -1, math.MinInt64, math.MaxInt64, 1e8, 1e8 - 1, 5, 2e8, 1e8} {
		check(x)
	}
	for k := 0; k < 100000; k++ {
		check(rng.Int63() >> uint(rng.Intn(63)))
	}
}
