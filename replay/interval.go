package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/usage"
)

// MaxIntervals bounds the intervals one --interval analysis prints: an
// interval of a nanosecond over an hour's capture (or a forged capture's
// times) must get an error, not billions of empty histograms.
const MaxIntervals = 1_000_000

// ErrTooManyIntervals is the error of an --interval that would print more
// than MaxIntervals intervals.
var ErrTooManyIntervals = errors.New("too many intervals")

// intervalGrid cuts the capture's time into intervals of d, aligned to the
// capture's start, as BCC's -i/-T tools cut theirs at each sleep: the
// origin of --from and --to, so that interval k is --from k*d --to
// (k+1)*d, and of record --print, whose live intervals are these. (The
// window opens microseconds later; no event is before it.)
type intervalGrid struct {
	m    *format.Meta
	d    int64
	base int64 // boot ns of the start of interval 0
	f    *RowFilter
	// last is the latest event time seen: the end of a capture whose
	// window end is not recorded (a killed recorder's).
	last       int64
	seen       bool
	minK, maxK int64 // the intervals that got an event
	counted    bool
}

// newIntervalGrid checks d and starts a grid for a pass over a capture
// with meta m and row filter f.
func newIntervalGrid(m *format.Meta, f *RowFilter, d time.Duration) (*intervalGrid, error) {
	if d <= 0 {
		return nil, usage.Errorf("--interval %v: must be more than 0", d)
	}
	return &intervalGrid{m: m, d: int64(d), base: m.StartBoot, f: f}, nil
}

// see notes the time of an event of the pass (of any probe).
func (g *intervalGrid) see(t int64) {
	if !g.seen || t > g.last {
		g.last, g.seen = t, true
	}
}

// index returns the interval of boot time t, and notes that it has data.
func (g *intervalGrid) index(t int64) int64 {
	k := floorDiv(subSat(t, g.base), g.d)
	if !g.counted {
		g.minK, g.maxK, g.counted = k, k, true
	} else {
		g.minK, g.maxK = min(g.minK, k), max(g.maxK, k)
	}
	return k
}

// subSat is a - b, saturated at the int64 range: a forged capture's
// times must not wrap around to another interval.
func subSat(a, b int64) int64 {
	d := a - b
	if (a >= b) != (d >= 0) {
		if a >= b {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return d
}

// floorDiv is a / b rounded down, toward negative infinity, for b > 0:
// the interval of an event before the grid's base is negative.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// end is the boot time at which the capture stopped: its window's end, or
// the latest event seen.
func (g *intervalGrid) end() int64 {
	if w := g.m.Window; w != nil && w.End != 0 && w.End >= g.base {
		return w.End
	}
	if g.seen && g.last >= g.base {
		return g.last
	}
	return g.base
}

// span returns the first and last interval to print: every interval from
// the window's start (or --from) to its end (or --to), empty ones too, as
// BCC prints every interval, and any interval that got an event outside
// them.
func (g *intervalGrid) span() (first, last int64, err error) {
	lo, hi := g.base, g.end()
	if g.f != nil && g.f.From > 0 {
		lo = max(lo, g.m.StartBoot+int64(g.f.From))
	}
	if g.f != nil && g.f.To > 0 {
		hi = min(hi, g.m.StartBoot+int64(g.f.To))
	}
	// hi is where the capture stopped: an interval starting there would
	// be empty, unless an event came at that very time (counted below).
	first = floorDiv(subSat(lo, g.base), g.d)
	last = first
	if hi > lo {
		last = floorDiv(subSat(hi-1, g.base), g.d)
	}
	if g.counted {
		first, last = min(first, g.minK), max(last, g.maxK)
	}
	if n := subSat(last, first); n < 0 || n >= MaxIntervals {
		return 0, 0, usage.Wrap(fmt.Errorf("--interval %v: the capture spans more than %d intervals: %w; give a longer --interval, or --from and --to", time.Duration(g.d), MaxIntervals, ErrTooManyIntervals))
	}
	return first, last, nil
}

// bounds returns the boot times of interval k: its start, and its end,
// which for the interval in which the capture stopped is that stop.
func (g *intervalGrid) bounds(k int64) (start, end int64) {
	start = g.base + k*g.d
	end = start + g.d
	if e := g.end(); e > start && e < end {
		end = e
	}
	return start, end
}

// stamp is the line BCC's -T prints before each interval's histogram:
// the wall-clock time of the interval's end, as strftime("%H:%M:%S"). An
// interval not a whole number of seconds, which BCC's tools do not take,
// adds what it needs to tell the intervals apart: milliseconds, or
// microseconds or nanoseconds for shorter ones.
func (g *intervalGrid) stamp(k int64) string {
	_, end := g.bounds(k)
	layout := time.TimeOnly
	switch {
	case g.d%1e9 == 0:
	case g.d%1e6 == 0:
		layout += ".000"
	case g.d%1e3 == 0:
		layout += ".000000"
	default:
		layout += ".000000000"
	}
	return g.m.WallTime(end).Format(layout)
}

// IntervalJSON is one interval of an --interval analysis's JSON: its
// bounds as wall-clock times and as offsets from the capture start (as
// --from and --to count), how many values it counted, and its
// histograms, each in the shape the analysis prints without --interval.
type IntervalJSON struct {
	Start       time.Time         `json:"start"`
	End         time.Time         `json:"end"`
	StartOffset int64             `json:"start_offset_ns"`
	EndOffset   int64             `json:"end_offset_ns"`
	Count       uint64            `json:"count"`
	Hists       []json.RawMessage `json:"hists"`
}

func (g *intervalGrid) json(k int64, count uint64, hists []json.RawMessage) IntervalJSON {
	s, e := g.bounds(k)
	if hists == nil {
		hists = []json.RawMessage{}
	}
	return IntervalJSON{Start: g.m.WallTime(s), End: g.m.WallTime(e), StartOffset: s - g.m.StartBoot, EndOffset: e - g.m.StartBoot, Count: count, Hists: hists}
}

// jsonLines splits the JSON values printed one per line into values.
func jsonLines(b []byte) []json.RawMessage {
	var out []json.RawMessage
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(l) > 0 {
			out = append(out, json.RawMessage(bytes.Clone(l)))
		}
	}
	return out
}
