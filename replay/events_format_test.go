package replay

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/decimal"
	"github.com/bpftape/bpftape/internal/usage"
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

// TestEventsProbePatterns: events takes probe names and glob patterns,
// as count does; a name holding a pattern's characters is taken as the
// name first, and a pattern that matches no probe is a usage error.
func TestEventsProbePatterns(t *testing.T) {
	probes := []format.Probe{{Name: "vfs_read"}, {Name: "vfs_write"}, {Name: "tcp[1]"}, {Name: "other"}}
	var rows []row
	for i := range 8 {
		rows = append(rows, row{probe: uint16(i % 4), tid: 1, t: int64(1000 + i)})
	}
	c := writeCapture(t, probes, rows)
	for _, tc := range []struct {
		probes []string
		want   map[string]int
	}{
		{[]string{"vfs_*"}, map[string]int{"vfs_read": 2, "vfs_write": 2}},
		{[]string{"tcp[1]"}, map[string]int{"tcp[1]": 2}},
		{[]string{"o*", "vfs_read"}, map[string]int{"other": 2, "vfs_read": 2}},
	} {
		var out bytes.Buffer
		if _, err := Events(c, EventsOptions{Probes: tc.probes, Time: "none"}, &out); err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
			got[strings.Fields(l)[3]]++
		}
		if !maps.Equal(got, tc.want) {
			t.Errorf("%q: listed %v, want %v", tc.probes, got, tc.want)
		}
	}
	for _, bad := range []string{"z*", "["} {
		if _, err := Events(c, EventsOptions{Probes: []string{bad}}, io.Discard); !usage.Is(err) {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
}

// TestEventsLimitStops: a listing with a limit stops reading the capture
// once it has listed that many events (it read all of it before), in each
// of its passes: text by stretches, text row by row (a filter on the
// comm), JSON lines; its notes still tell of every loss, from the footer.
func TestEventsLimitStops(t *testing.T) {
	probes := []format.Probe{{Name: "f", Fields: []format.Field{{Name: "x", Type: format.Int64}}}}
	var rows []row
	for i := 0; i < 300; i++ {
		rows = append(rows, row{probe: 0, tid: 1, t: int64(2000 + i), ints: []uint64{uint64(i)}})
	}
	rows = append(rows, row{probe: 0, t: 2400, lost: 9}) // after the rows listed
	c := writeCapture(t, probes, rows)                   // batches of 3 rows
	for _, o := range []EventsOptions{
		{Limit: 4},
		{Limit: 4, Rows: RowFilter{Comms: []string{"app"}}},
		{Limit: 4, JSONL: true},
	} {
		var out bytes.Buffer
		p, err := Events(c, o, &out)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Count(out.String(), "\n")
		if !o.JSONL {
			lines-- // the header
		}
		if lines != 4 || p.Batches > 3 {
			t.Errorf("%+v: %d lines, %d batches of 100 read", o, lines, p.Batches)
		}
		// The notes tell of the losses after them too: the footer's.
		var notes bytes.Buffer
		p.Notes(&notes)
		if !strings.Contains(notes.String(), "9 events were lost") {
			t.Errorf("%+v: notes %q", o, notes.String())
		}
	}
}

// TestEventsRepeatedValue checks a field's remembered text of its last
// long value against decimal.AppendBits, row by row, as values repeat,
// change, shrink below the length remembered and turn negative.
func TestEventsRepeatedValue(t *testing.T) {
	vals := []int64{
		math.MaxInt64, math.MaxInt64, 12345, 12345, 7, 12345, math.MinInt64,
		math.MinInt64, -99999, -99999, 1234, -1, 10000, 10000, 9999,
	}
	for _, sign := range []int64{0, -1} {
		f := textField{kind: textBits, bits: bits64(vals), sign: sign}
		var got, want []byte
		for i := range vals {
			got = append(f.appendBits(got, i), ' ')
			want = append(decimal.AppendBits(want, f.bits[i], sign), ' ')
		}
		if !bytes.Equal(got, want) {
			t.Errorf("sign %d:\n got %s\nwant %s", sign, got, want)
		}
	}
}
