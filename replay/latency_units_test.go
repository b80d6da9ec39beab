package replay

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
)

// Durations of the capture unitCapture writes: many calls shorter than a
// millisecond, whose total is not.
const (
	shortNs, shortN = 123_000, 1000
	longNs, longN   = 657_000, 20
	unitSumNs       = shortN*shortNs + longN*longNs // 136_140_000
)

// unitCapture writes shortN calls of shortNs and then longN calls of
// longNs, one after another on one thread, by the comm "app".
func unitCapture(t *testing.T) *Capture {
	t.Helper()
	probes := []format.Probe{
		{Name: "f", Fields: []format.Field{{Name: "arg0", Type: format.Int64}}},
		{Name: "f_ret", Fields: []format.Field{{Name: "retval", Type: format.Int64}}},
	}
	var rows []row
	ts := int64(10_000)
	call := func(d int64) {
		rows = append(rows, row{probe: 0, tid: 1, t: ts, ints: []uint64{1}}, row{probe: 1, tid: 1, t: ts + d, ints: []uint64{uint64(d)}})
		ts += d + 1000
	}
	for range shortN {
		call(shortNs)
	}
	for range longN {
		call(longNs)
	}
	return writeCapture(t, probes, rows)
}

// TestLatencyUnitStats: in usecs and msecs the histogram buckets each
// duration truncated to the unit, as funclatency -u and -m do, but the
// summary is computed from the nanoseconds: a thousand calls of 123 µs
// total 136.14 ms in msecs, not 0.
func TestLatencyUnitStats(t *testing.T) {
	c := unitCapture(t)
	for _, tc := range []struct {
		unit  string
		slots map[int]uint64 // the histogram's nonzero slots
		text  []string
		stats StatsJSON
	}{
		{"ns", map[int]uint64{17: shortN, 20: longN}, // 65536..131071, 524288..1048575
			[]string{
				"\navg = 133471 nsecs, total: 136140000 nsecs, count: 1020\n",
				"\ncount 1020, sum 136140000, min 123000, mean 133470.6, p50 123135, p90 123135, p99 657000, max 657000\n",
			},
			StatsJSON{Count: 1020, Sum: "136140000", Min: "123000", Mean: 133470.58823529413, P50: "123135", P90: "123135", P99: "657000", Max: "657000"}},
		{"us", map[int]uint64{7: shortN, 10: longN}, // 64..127, 512..1023
			[]string{
				"\navg = 133.471 usecs, total: 136140.000 usecs, count: 1020\n",
				"\ncount 1020, sum 136140.000, min 123.000, mean 133.471, p50 123.135, p90 123.135, p99 657.000, max 657.000\n",
			},
			StatsJSON{Count: 1020, Sum: "136140", Min: "123", Mean: 133.47058823529412, P50: "123.135", P90: "123.135", P99: "657", Max: "657"}},
		{"ms", map[int]uint64{1: shortN + longN}, // 0 -> 1: every call is 0 ms, truncated
			[]string{
				"\navg = 0.133 msecs, total: 136.140 msecs, count: 1020\n",
				"\ncount 1020, sum 136.140, min 0.123, mean 0.133, p50 0.123, p90 0.123, p99 0.657, max 0.657\n",
			},
			StatsJSON{Count: 1020, Sum: "136.14", Min: "0.123", Mean: 0.13347058823529412, P50: "0.123135", P90: "0.123135", P99: "0.657", Max: "0.657"}},
	} {
		t.Run(tc.unit, func(t *testing.T) {
			var out bytes.Buffer
			res, _, err := Latency(c, LatencyOptions{Entry: "f", Return: "f_ret", Unit: tc.unit}, &out)
			if err != nil {
				t.Fatal(err)
			}
			s := &res.Stats
			if s.Count() != shortN+longN || s.Sum().Cmp(big.NewInt(unitSumNs)) != 0 || s.Min() != shortNs || s.Max() != longNs || s.Percentile(99) != longNs {
				t.Errorf("stats in ns: count %d, sum %s, min %d, max %d, p99 %d; want %d, %d, %d, %d, %d",
					s.Count(), s.Sum(), s.Min(), s.Max(), s.Percentile(99), shortN+longN, unitSumNs, shortNs, longNs, longNs)
			}
			for i, n := range res.Hist.Slots() {
				if n != tc.slots[i] {
					t.Errorf("slot %d: %d, want %d", i, n, tc.slots[i])
				}
			}
			for _, want := range tc.text {
				if !strings.Contains(out.String(), want) {
					t.Errorf("no %q in:\n%s", want, out.String())
				}
			}
			checkLatencyJSON(t, c, LatencyOptions{Entry: "f", Return: "f_ret", Unit: tc.unit, JSON: true}, tc.stats)
		})
	}
}

// checkLatencyJSON runs Latency with o and compares its "stats" to want,
// as written.
func checkLatencyJSON(t *testing.T, c *Capture, o LatencyOptions, want StatsJSON) {
	t.Helper()
	var out bytes.Buffer
	if _, _, err := Latency(c, o, &out); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Stats json.RawMessage `json:"stats"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(doc.Stats) != string(w) {
		t.Errorf("stats:\n got %s\nwant %s", doc.Stats, w)
	}
}

// TestLatencyUnitSlices: the histograms by key and by interval bucket in
// the unit too, and keep their statistics in nanoseconds.
func TestLatencyUnitSlices(t *testing.T) {
	c := unitCapture(t)
	for _, o := range []LatencyOptions{
		{Entry: "f", Return: "f_ret", Unit: "ms", By: "comm"},
		{Entry: "f", Return: "f_ret", Unit: "us", Interval: time.Hour},
		{Entry: "f", Return: "f_ret", Unit: "us", Interval: time.Hour, By: "tid"},
	} {
		l, err := NewLatencies(c, o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Scan(&o.Rows, l.Add); err != nil {
			t.Fatal(err)
		}
		es := l.slices.entries(0)
		if len(es) != 1 {
			t.Fatalf("%+v: %d keys, want 1", o, len(es))
		}
		a := es[0].acc
		if a.stats.Sum().Cmp(big.NewInt(unitSumNs)) != 0 || a.stats.Max() != longNs {
			t.Errorf("%+v: sum %s max %d, want %d and %d ns", o, a.stats.Sum(), a.stats.Max(), unitSumNs, longNs)
		}
		if got, want := a.log2.Slots(), l.res.Hist.Slots(); got != want {
			t.Errorf("%+v: the key's histogram is not the whole one in the unit:\n%v\n%v", o, got, want)
		}
	}
}

func TestUnitDecimals(t *testing.T) {
	for _, tc := range []struct {
		v            int64
		unit         int64
		exact, fixed string
	}{
		{0, 1000, "0", "0.000"},
		{657_000, 1_000_000, "0.657", "0.657"},
		{657_407, 1_000_000, "0.657407", "0.657"},
		{123_500, 1_000_000, "0.1235", "0.124"},
		{-123_500, 1_000_000, "-0.1235", "-0.124"},
		{-999, 1000, "-0.999", "-0.999"},
		{136_140_000, 1000, "136140", "136140.000"},
		{5, 1_000_000, "0.000005", "0.000"},
	} {
		if got := exactDecimal(big.NewInt(tc.v), tc.unit); got != tc.exact {
			t.Errorf("exactDecimal(%d, %d) = %s, want %s", tc.v, tc.unit, got, tc.exact)
		}
		if got := fixed3(big.NewInt(tc.v), tc.unit); got != tc.fixed {
			t.Errorf("fixed3(%d, %d) = %s, want %s", tc.v, tc.unit, got, tc.fixed)
		}
	}
	if got := exactDecimal(big.NewInt(-42), 1); got != "-42" {
		t.Errorf("exactDecimal(-42, 1) = %s", got)
	}
}

// TestLatencyJSONNow: without Now, latency and requests stamp their JSON
// with the capture's time, as hist does, not with the time of the replay.
func TestLatencyJSONNow(t *testing.T) {
	c := unitCapture(t)
	want := c.EndWall().Format(time.DateTime)
	var lat, req bytes.Buffer
	if _, _, err := Latency(c, LatencyOptions{Entry: "f", Return: "f_ret", JSON: true}, &lat); err != nil {
		t.Fatal(err)
	}
	var ld struct {
		Hist struct {
			TS string `json:"ts"`
		} `json:"hist"`
	}
	if err := json.Unmarshal(lat.Bytes(), &ld); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Requests(c, RequestsOptions{ItemProbe: "f", ItemField: "arg0", EndProbe: "f_ret", EndField: "retval", JSON: true}, &req); err != nil {
		t.Fatal(err)
	}
	var rd struct {
		End struct {
			TS string `json:"ts"`
		} `json:"end"`
	}
	if err := json.Unmarshal(req.Bytes(), &rd); err != nil {
		t.Fatal(err)
	}
	var hist bytes.Buffer
	if _, err := Hist(c, HistOptions{Probe: "f_ret", Field: "retval", JSON: true}, &hist); err != nil {
		t.Fatal(err)
	}
	var hd struct {
		TS string `json:"ts"`
	}
	if err := json.Unmarshal(hist.Bytes(), &hd); err != nil {
		t.Fatal(err)
	}
	if ld.Hist.TS != want || rd.End.TS != want || hd.TS != want {
		t.Errorf("latency ts %q, requests ts %q, hist ts %q: want the capture's end, %q", ld.Hist.TS, rd.End.TS, hd.TS, want)
	}
}
