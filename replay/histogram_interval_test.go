package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/usage"
)

// intervalCapture has a window from 1 µs to 4 s after the capture start,
// at 03:04:05 UTC, and events of p (v, dev) at random times in it, none
// from 2 s to 3 s: with 1 s intervals, aligned to the capture's start, the
// third is empty.
func intervalCapture(t *testing.T) (*Capture, *format.Meta) {
	const sb = 1_000_000
	m := &format.Meta{Host: "h", StartBoot: sb, StartWall: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Window: &format.Window{Start: sb + 1000}, Probes: []format.Probe{
			{Name: "p", Fields: []format.Field{{Name: "v", Type: format.Uint64}, {Name: "dev", Type: format.Uint32}}},
			{Name: "q", Fields: []format.Field{{Name: "v", Type: format.Uint64}}},
		}}
	rng := rand.New(rand.NewSource(5))
	var rows []row
	for tm := int64(sb + 1000); tm < sb+4e9; tm += 1 + rng.Int63n(20e6) {
		if tm >= sb+2e9 && tm < sb+3e9 {
			continue
		}
		rows = append(rows, row{probe: uint16(rng.Intn(2)), tid: 1, t: tm, ints: []uint64{uint64(rng.Int63n(1 << uint(rng.Intn(20)))), uint64(1 + rng.Intn(2))}})
	}
	return writeCaptureMeta(t, m, rows, sb+4e9), m
}

// TestHistInterval: with --interval, each interval's histogram is the one
// the same hist prints for that interval alone (--from and --to, read by
// the projected path), in every style and with --by; intervals start at
// the capture's start, the empty one prints its time alone, each time is
// when its interval ended (the last clipped at the window's end).
func TestHistInterval(t *testing.T) {
	c, _ := intervalCapture(t)
	wantStamps := []string{"03:04:06", "03:04:07", "03:04:08", "03:04:09"}
	for _, tc := range []struct {
		name string
		o    HistOptions
	}{
		{"bcc", HistOptions{}},
		{"bcc by dev", HistOptions{By: "dev", Stats: true}},
		{"bpftrace by dev", HistOptions{Style: "bpftrace", By: "dev"}},
		{"linear", HistOptions{Linear: &Linear{0, 100000, 10000}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Probe, o.Field, o.Interval = "p", "v", time.Second
			var out bytes.Buffer
			if _, err := Hist(c, o, &out); err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			for k, stamp := range wantStamps {
				// BCC's -T: a blank line, then the time; bpftrace's
				// time("%H:%M:%S\n") prints the time alone.
				if o.Style != "bpftrace" {
					want.WriteString("\n")
				}
				fmt.Fprintf(&want, "%s\n", stamp)
				if k == 2 {
					continue // no event: the time alone
				}
				alone := o
				alone.Interval = 0
				alone.Rows = RowFilter{From: time.Duration(int64(k) * 1e9), To: time.Duration(int64(k+1) * 1e9)}
				if _, err := Hist(c, alone, &want); err != nil {
					t.Fatal(err)
				}
			}
			if out.String() != want.String() {
				t.Errorf("got\n%s\nwant, from the intervals' --from and --to:\n%s", out.String(), want.String())
			}
		})
	}
}

type bccJSONHist struct {
	Data []struct {
		Start uint64 `json:"interval-start"`
		Count uint64 `json:"count"`
	} `json:"data"`
	Dev string `json:"dev"`
}

// TestHistIntervalJSON: the JSON array's intervals tile the window, each
// with its bounds, count and histograms, and add up bucket by bucket to
// the histogram of the whole capture; --from starts at the interval it
// falls in.
func TestHistIntervalJSON(t *testing.T) {
	c, m := intervalCapture(t)
	var out, whole bytes.Buffer
	if _, err := Hist(c, HistOptions{Probe: "p", Field: "v", By: "dev", JSON: true, Interval: time.Second}, &out); err != nil {
		t.Fatal(err)
	}
	if _, err := Hist(c, HistOptions{Probe: "p", Field: "v", JSON: true}, &whole); err != nil {
		t.Fatal(err)
	}
	var ivs []IntervalJSON
	if err := json.Unmarshal(out.Bytes(), &ivs); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if len(ivs) != 4 {
		t.Fatalf("%d intervals, want 4", len(ivs))
	}
	sum := map[uint64]uint64{}
	var n uint64
	for k, iv := range ivs {
		wantStart := int64(k) * 1e9
		wantEnd := min(wantStart+1e9, 4e9)
		if iv.StartOffset != wantStart || iv.EndOffset != wantEnd || !iv.Start.Equal(m.WallTime(m.StartBoot+wantStart)) || !iv.End.Equal(m.WallTime(m.StartBoot+wantEnd)) {
			t.Errorf("interval %d: %+v, want offsets %d to %d", k, iv, wantStart, wantEnd)
		}
		var c uint64
		devs := map[string]bool{}
		for _, raw := range iv.Hists {
			var h bccJSONHist
			if err := json.Unmarshal(raw, &h); err != nil {
				t.Fatal(err)
			}
			devs[h.Dev] = true
			for _, d := range h.Data {
				sum[d.Start] += d.Count
				c += d.Count
			}
		}
		if c != iv.Count || (k == 2) != (c == 0) || (c > 0 && (!devs["1"] || !devs["2"])) {
			t.Errorf("interval %d: count %d, buckets add up to %d, keys %v", k, iv.Count, c, devs)
		}
		n += c
	}
	var w bccJSONHist
	if err := json.Unmarshal(whole.Bytes(), &w); err != nil {
		t.Fatal(err)
	}
	var wn uint64
	for _, d := range w.Data {
		wn += d.Count
		if sum[d.Start] != d.Count {
			t.Errorf("bucket %d: intervals add up to %d, the whole capture has %d", d.Start, sum[d.Start], d.Count)
		}
	}
	if n != wn || n == 0 {
		t.Errorf("intervals count %d values, the whole capture %d", n, wn)
	}

	out.Reset()
	if _, err := Hist(c, HistOptions{Probe: "p", Field: "v", JSON: true, Interval: time.Second, Rows: RowFilter{From: 1600 * time.Millisecond, To: 3 * time.Second}}, &out); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out.Bytes(), &ivs); err != nil {
		t.Fatal(err)
	}
	if len(ivs) != 2 || ivs[0].StartOffset != 1e9 || ivs[1].Count != 0 {
		t.Errorf("--from 1.6s --to 3s: %+v, want the intervals from 1 s and 2 s, the second empty", ivs)
	}
}

// TestIntervalErrors: an interval of nothing, or one that cuts the capture
// into more than MaxIntervals, is a usage error.
func TestIntervalErrors(t *testing.T) {
	c, _ := intervalCapture(t)
	for _, d := range []time.Duration{time.Nanosecond, -time.Second} {
		_, err := Hist(c, HistOptions{Probe: "p", Field: "v", Interval: d}, &bytes.Buffer{})
		if !usage.Is(err) || (d > 0 && !errors.Is(err, ErrTooManyIntervals)) {
			t.Errorf("hist --interval %v: %v", d, err)
		}
		_, _, err = Latency(c, LatencyOptions{Entry: "p", Return: "q", Interval: d}, &bytes.Buffer{})
		if !usage.Is(err) || (d > 0 && !errors.Is(err, ErrTooManyIntervals)) {
			t.Errorf("latency --interval %v: %v", d, err)
		}
	}
}

// TestLatencyIntervalBy: latency by key, per interval (by the end's time)
// and per dev: every interval's histograms add up to the total, which is
// the latency without --interval and --by.
func TestLatencyIntervalBy(t *testing.T) {
	rows, _ := bioRequests(3000, 4) // 10 µs to 300 µs
	const sb = 1000
	m := &format.Meta{Host: "h", StartBoot: sb, StartWall: time.Unix(1700000000, 0).UTC(), Window: &format.Window{Start: 5000}, Probes: bioProbes}
	c := writeCaptureMeta(t, m, rows, rows[len(rows)-1].t+1)
	o := LatencyOptions{Entry: "issue", Return: "complete", Key: []string{"dev", "sector"}, JSON: true}
	var whole bytes.Buffer
	res, _, err := Latency(c, o, &whole)
	if err != nil {
		t.Fatal(err)
	}
	o.By, o.Interval = "dev", 20*time.Microsecond
	var out bytes.Buffer
	if _, _, err := Latency(c, o, &out); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Calls     uint64         `json:"calls"`
		Intervals []IntervalJSON `json:"intervals"`
		Hist      bccJSONHist    `json:"hist"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	// The last end comes at 10 µs + 3000 × 100 ns + up to 1.5 µs, from the window's 4 µs after the start.
	span := rows[len(rows)-1].t + 1 - 5000
	if want := (span + 19_999) / 20_000; int64(len(doc.Intervals)) != want {
		t.Errorf("%d intervals of 20 µs over %d ns, want %d", len(doc.Intervals), span, want)
	}
	sum := map[uint64]uint64{}
	var n uint64
	for _, iv := range doc.Intervals {
		for _, raw := range iv.Hists {
			var h bccJSONHist
			if err := json.Unmarshal(raw, &h); err != nil {
				t.Fatal(err)
			}
			if h.Dev != "1" && h.Dev != "2" {
				t.Errorf("a histogram of dev %q", h.Dev)
			}
			for _, d := range h.Data {
				sum[d.Start] += d.Count
				n += d.Count
			}
		}
	}
	if n != res.Calls || doc.Calls != res.Calls || n != 3000 {
		t.Errorf("intervals add up to %d calls, the total says %d, without --interval %d; want 3000", n, doc.Calls, res.Calls)
	}
	for _, d := range doc.Hist.Data {
		if sum[d.Start] != d.Count {
			t.Errorf("bucket %d: intervals %d, total %d", d.Start, sum[d.Start], d.Count)
		}
	}
	// In text, every interval has its time line, to the microsecond for
	// intervals of 20µs, and the totals follow.
	o.JSON = false
	out.Reset()
	if _, _, err := Latency(c, o, &out); err != nil {
		t.Fatal(err)
	}
	stamps := regexp.MustCompile(`\n`+regexp.QuoteMeta(time.Unix(1700000000, 0).UTC().Format(time.TimeOnly))+`\.\d{6}\n`).FindAllString(out.String(), -1)
	if len(stamps) != len(doc.Intervals) || len(stamps) != len(slices.Compact(slices.Clone(stamps))) {
		t.Errorf("time lines %q, want %d distinct:\n%s", stamps, len(doc.Intervals), out.String())
	}
	if !strings.Contains(out.String(), fmt.Sprintf("count: %d\n", res.Calls)) {
		t.Errorf("no totals:\n%s", out.String())
	}
}

// TestHistLinearOutsideNote: BCC's linear histogram has no row for the
// values below MIN or at MAX and above, so hist notes how many it leaves
// out, or else, where the keys are not the values, what they count;
// bpftrace's style, JSON and keys that are the values note nothing.
func TestHistLinearOutsideNote(t *testing.T) {
	probes := []format.Probe{{Name: "a", Fields: []format.Field{{Name: "v", Type: format.Int64}}}}
	var rows []row
	for i, v := range []int64{-5, 0, 10, 99, 100, 250, 7} {
		rows = append(rows, row{probe: 0, tid: 1, t: int64(1000 + i), ints: []uint64{uint64(v)}})
	}
	c := writeCapture(t, probes, rows)
	for _, tc := range []struct {
		o    HistOptions
		want string
	}{
		{HistOptions{Linear: &Linear{0, 100, 10}}, "NOTE: 3 of 7 values are outside --linear 0,100,10 and have no row: BCC's linear histogram has key i count [0+i*10, 0+(i+1)*10); --style bpftrace shows them.\n"},
		{HistOptions{Linear: &Linear{0, 300, 50}}, "NOTE: 1 of 7 values are outside --linear 0,300,50 and have no row: BCC's linear histogram has key i count [0+i*50, 0+(i+1)*50); --style bpftrace shows them.\n"},
		{HistOptions{Linear: &Linear{0, 300, 50}, Rows: RowFilter{From: 1}}, "NOTE: BCC's linear histogram has key i count [0+i*50, 0+(i+1)*50); --style bpftrace labels the ranges.\n"}, // -5 is the first event
		{HistOptions{Linear: &Linear{0, 300, 1}, Rows: RowFilter{From: 1}}, ""}, // the keys are the values
		{HistOptions{Linear: &Linear{0, 100, 10}, Style: "bpftrace"}, ""},
		{HistOptions{Linear: &Linear{0, 100, 10}, JSON: true}, ""},
	} {
		var notes strings.Builder
		tc.o.Probe, tc.o.Field, tc.o.Notes = "a", "v", &notes
		if _, err := Hist(c, tc.o, io.Discard); err != nil {
			t.Fatal(err)
		}
		if notes.String() != tc.want {
			t.Errorf("%+v: notes %q, want %q", *tc.o.Linear, notes.String(), tc.want)
		}
	}
}

// TestIntervalStamps: the time line before each interval is BCC's
// %H:%M:%S for whole seconds, and tells shorter intervals apart.
func TestIntervalStamps(t *testing.T) {
	m := &format.Meta{StartBoot: 1e9, StartWall: time.Date(2025, 1, 2, 3, 4, 5, 0, time.Local)}
	for _, c := range []struct {
		d    time.Duration
		want []string
	}{
		{time.Second, []string{"03:04:06", "03:04:07"}},
		{2 * time.Second, []string{"03:04:07", "03:04:09"}},
		{250 * time.Millisecond, []string{"03:04:05.250", "03:04:05.500"}},
		{1500 * time.Microsecond, []string{"03:04:05.001500", "03:04:05.003000"}},
		{1500 * time.Nanosecond, []string{"03:04:05.000001500", "03:04:05.000003000"}},
	} {
		g, err := newIntervalGrid(m, &RowFilter{}, c.d)
		if err != nil {
			t.Fatal(err)
		}
		g.see(m.StartBoot + 100*int64(c.d))
		for k, want := range c.want {
			if got := g.stamp(int64(k)); got != want {
				t.Errorf("--interval %v: interval %d stamped %q, want %q", c.d, k, got, want)
			}
		}
	}
}
