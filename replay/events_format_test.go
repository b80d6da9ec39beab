package replay

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
	"time"
)

// TestEventsRelClock checks the TIME column's seconds against fmt's %.6f
// of the float Events once printed, at half microseconds, around zero,
// across seconds and at the limits where it falls back to floating point.
func TestEventsRelClock(t *testing.T) {
	var c relClock
	check := func(d int64) {
		t.Helper()
		want := fmt.Sprintf("%.6f", float64(d)/1e9)
		if got := string(c.append(nil, d)); got != want {
			t.Fatalf("%d ns: %q, want %q", d, got, want)
		}
	}
	rng := rand.New(rand.NewSource(2))
	for _, d := range []int64{0, 1, -1, 499, 500, 501, -499, -500, -501, 999, 1000, 1499, 1500, 1501, 999_999_499, 999_999_500,
		999_999_501, 1e9, -1e9, 1<<52 - 1, 1 << 52, -(1<<52 - 1), -(1 << 52), 1<<53 + 1, math.MaxInt64, math.MinInt64 + 1,
		int64(86400 * 365 * time.Second), 4_503_599_627_370_495, 2_000_000_000_500} {
		check(d)
	}
	for k := 0; k < 200000; k++ {
		d := rng.Int63n(int64(1) << uint(1+rng.Intn(62)))
		if rng.Intn(2) == 0 {
			d = -d
		}
		if rng.Intn(4) == 0 {
			d = d - d%1000 + 500
		}
		check(d)
	}
	// Times nanoseconds apart, through zero: the microsecond's text is
	// cached, and -0.000000 is not 0.000000.
	for d := int64(-5000); d < 5000; d += 1 + rng.Int63n(90) {
		check(d)
	}
	// Increasing times, as a capture holds them: the seconds are cached.
	for d := int64(-3e9); d < 3e9; d += 1 + rng.Int63n(20e6) {
		check(d)
	}
}

// TestEventsWallClock checks the wall TIME column against Format's.
func TestEventsWallClock(t *testing.T) {
	var c wallClock
	rng := rand.New(rand.NewSource(4))
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		berlin = time.FixedZone("X", 3600)
	}
	for _, start := range []time.Time{time.Time{}, time.Date(2024, 3, 31, 0, 59, 59, 999_999_999, time.UTC).In(berlin), time.Unix(-1, 5)} {
		w := start
		for k := 0; k < 20000; k++ {
			w = w.Add(time.Duration(rng.Int63n(int64(time.Second) / 3)))
			if got, want := string(c.append(nil, w)), w.Format("15:04:05.000000"); got != want {
				t.Fatalf("%v: %q, want %q", w, got, want)
			}
		}
	}
}
