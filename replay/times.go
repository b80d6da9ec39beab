package replay

import (
	"fmt"
	"io"

	"github.com/bpftape/bpftape/format"
)

// backwardSlack is how far an event may come before one read earlier
// without counting as going back: the recorder merges its per-CPU rings by
// time pass by pass, and a sample still being written is left for the next
// pass, so a real capture can step back by a few milliseconds.
const backwardSlack = format.CountsBackwardNs

// TimeAnomalies tallies event times that a recorded capture does not have:
// before the capture started (or its window opened) by more than
// backwardSlack, or more than backwardSlack before an event read earlier.
// The analyses saturate their time arithmetic, so such times are drawn at
// the edges or left out rather than crash; the tally makes them say so.
type TimeAnomalies struct {
	Early, Backward uint64
	seen            bool
	latest          int64
}

// Check tallies the time t of the next event of a capture with metadata m.
func (a *TimeAnomalies) Check(t int64, m *format.Meta) {
	a.check(t, timesStart(m))
}

// CheckRun tallies the times ts of the next events, as Check does each.
func (a *TimeAnomalies) CheckRun(ts []int64, m *format.Meta) {
	a.CheckRunOrdered(ts, sorted(ts), m)
}

// CheckRunOrdered is CheckRun for times ts of which ordered says whether
// they never decrease: times in order from a first one that passes are
// all good, and only the latest moves, so that only the first and last
// are read.
func (a *TimeAnomalies) CheckRunOrdered(ts []int64, ordered bool, m *format.Meta) {
	if len(ts) == 0 {
		return
	}
	start := timesStart(m)
	if ordered && a.good(ts[0], start) {
		if last := ts[len(ts)-1]; !a.seen || last > a.latest {
			a.latest, a.seen = last, true
		}
		return
	}
	for _, t := range ts {
		a.check(t, start)
	}
}

// good reports whether check would count nothing for t, and nothing for
// a later time not below it.
func (a *TimeAnomalies) good(t, start int64) bool {
	if t < start && uint64(start)-uint64(t) > uint64(backwardSlack) {
		return false
	}
	return !a.seen || t >= a.latest || uint64(a.latest)-uint64(t) <= uint64(backwardSlack)
}

// timesStart is when the events of a capture with metadata m start.
func timesStart(m *format.Meta) int64 {
	if m.Window != nil && m.Window.Start > m.StartBoot {
		return m.Window.Start
	}
	return m.StartBoot
}

func (a *TimeAnomalies) check(t, start int64) {
	// The differences as uint64s: exact, where an int64 one wraps for
	// times near the ends of int64 (a forged file's).
	if t < start && uint64(start)-uint64(t) > uint64(backwardSlack) {
		a.Early++
	}
	if a.seen && t < a.latest && uint64(a.latest)-uint64(t) > uint64(backwardSlack) {
		a.Backward++
	}
	if !a.seen || t > a.latest {
		a.latest, a.seen = t, true
	}
}

// Warn prints a warning for the capture name if any time was anomalous.
func (a *TimeAnomalies) Warn(w io.Writer, name string) {
	if a.Early == 0 && a.Backward == 0 {
		return
	}
	fmt.Fprintf(w, "WARNING: %s: %d events are timed before the capture started and %d more than 1s before an earlier event: "+
		"the file's times are damaged or forged; times and latencies from them are not to be trusted.\n", name, a.Early, a.Backward)
}
