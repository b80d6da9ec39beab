package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/boottime"
	"github.com/bpftape/bpftape/internal/outfile"
	"github.com/bpftape/bpftape/internal/usage"
)

// DefaultFlightSize is Options.FlightSize when it is 0: the most the
// flight recorder's ring holds of compressed batches.
const DefaultFlightSize = 256 << 20

// SnapshotName is the name of snapshot n (from 1) of a flight recording
// into path: c.arrow gives c-0001.arrow.
func SnapshotName(path string, n int) string {
	ext := filepath.Ext(path)
	return fmt.Sprintf("%s-%04d%s", strings.TrimSuffix(path, ext), n, ext)
}

// LatencyTrigger is Options.TriggerLatency parsed: a pair of START and
// END events of one thread further apart than Threshold.
type LatencyTrigger struct {
	Start, End string
	Threshold  time.Duration
}

// ParseLatencyTrigger parses 'START END > DURATION' (10ms, 1.5s, 250us).
func ParseLatencyTrigger(s string) (LatencyTrigger, error) {
	f := strings.Fields(s)
	if len(f) == 4 && f[2] == ">" {
		d, err := time.ParseDuration(f[3])
		if err == nil && d > 0 {
			return LatencyTrigger{Start: f[0], End: f[1], Threshold: d}, nil
		}
	}
	return LatencyTrigger{}, fmt.Errorf("--trigger-latency %q: want 'START END > DURATION', e.g. 'f f:return > 10ms'", s)
}

func (t LatencyTrigger) String() string {
	return fmt.Sprintf("%s %s > %s", t.Start, t.End, t.Threshold)
}

// flightOptions checks the flight recorder's options.
func (o *Options) flightOptions() error {
	triggers := o.Trigger != "" || o.TriggerLatency != nil
	switch {
	case o.Flight < 0 || o.FlightSize < 0 || o.After < 0 || o.TriggerHoldoff < 0 || o.MaxSnapshots < 0:
		return usage.Errorf("negative --flight, --flight-size, --after, --trigger-holdoff or --max-snapshots")
	case o.Flight == 0 && (o.FlightSize > 0 || triggers || o.After > 0 || o.TriggerHoldoff > 0 || o.MaxSnapshots > 0):
		return usage.Errorf("--flight-size, --trigger, --trigger-latency, --after, --trigger-holdoff and --max-snapshots need --flight DURATION")
	case o.Flight == 0:
		return nil
	case o.MaxSize > 0:
		return usage.Errorf("--flight keeps the last %s in memory: --max-size and --rotate are for recordings into a file", o.Flight)
	case o.Live != nil:
		return usage.Errorf("--print needs a recording into a file, not --flight")
	case (o.After > 0 || o.TriggerHoldoff > 0) && !triggers:
		return usage.Errorf("--after and --trigger-holdoff need --trigger or --trigger-latency")
	}
	if st, err := os.Stat(o.Output); err == nil && !st.Mode().IsRegular() {
		return usage.Errorf("--flight writes numbered files FILE-0001%s...: -o %s is not a file", filepath.Ext(o.Output), o.Output)
	}
	if o.FlightSize == 0 {
		o.FlightSize = DefaultFlightSize
	}
	if o.FlightSize < MinMaxSize {
		return usage.Errorf("--flight-size %d is below the minimum, %d bytes", o.FlightSize, MinMaxSize)
	}
	if !o.Force {
		ext := filepath.Ext(o.Output)
		old, _ := filepath.Glob(strings.TrimSuffix(o.Output, ext) + "-[0-9][0-9][0-9][0-9]" + ext)
		if len(old) > 0 {
			return usage.Errorf("output: %s exists (a flight recorder's snapshot): give --force to overwrite it, or another -o", old[0])
		}
	}
	return nil
}

// flight is what the drain loop keeps of a flight recording: the
// triggers, and the snapshot waiting for its --after period.
type flight struct {
	w    *format.Writer
	opts *Options
	// trigger is the --trigger probe's id, -1 for none; start and end
	// those of --trigger-latency's pair, -1 for none.
	trigger    int
	start, end int
	threshold  int64
	open       map[uint32][]int64 // per thread, the times of its open START events
	last       int64              // boot-clock time of the last trigger that took a snapshot, 0 before
	pending    *pendingSnap
	asked      <-chan struct{} // Options.Snapshot
	taken      int
	out        chan *takenSnap // to the writer goroutine
	done       chan struct{}   // closed when the writer goroutine ends
	written    []string
	skipped    int // snapshots not taken while two were being written
	// counts reads the kernel's counts of events not sent (nil when no
	// probe has any); samples holds them every countsEvery, so that a
	// snapshot carries those of its window.
	counts  func() kernelCounts
	samples []countsSample
	errs    []error
	stopped bool // --max-snapshots reached
}

// countsSample is the kernel's counts at boot-clock time t.
type countsSample struct {
	t int64
	c kernelCounts
}

// countsEvery is how often a flight recorder reads the kernel's counts of
// events not sent: a snapshot's counts are those of its window to this.
const countsEvery = 100 * time.Millisecond

// sample reads the kernel's counts every countsEvery, and forgets those
// older than a snapshot can reach back, but the newest of them.
func (f *flight) sample() {
	if f.counts == nil {
		return
	}
	now := boottime.Now()
	if n := len(f.samples); n > 0 && now-f.samples[n-1].t < countsEvery.Nanoseconds() {
		return
	}
	f.samples = append(f.samples, countsSample{now, f.counts()})
	keep := now - (f.opts.Flight + f.opts.After + 2*time.Second).Nanoseconds()
	n := 0
	for n+1 < len(f.samples) && f.samples[n+1].t <= keep {
		n++
	}
	f.samples = slices.Delete(f.samples, 0, n)
}

// windowCounts returns the kernel's counts between the sample at or
// before start (none before: the recording's start) and now.
func (f *flight) windowCounts(start int64) kernelCounts {
	c := f.counts()
	var base kernelCounts
	for _, s := range f.samples {
		if s.t > start {
			break
		}
		base = s.c
	}
	return c.since(base)
}

// pendingSnap is a snapshot asked for, to be taken once the ring holds
// every event up to due.
type pendingSnap struct {
	due, at int64
	why     string
	latency int64
	cut     bool // the batch ended before the first event after due
}

// takenSnap is a snapshot taken, to be written as file name.
type takenSnap struct {
	snap *format.FlightSnapshot
	name string
}

// maxOpenPerThread bounds the START events a thread keeps open for
// --trigger-latency: past it the oldest is forgotten, as latency does.
const maxOpenPerThread = 64

// maxOpenThreads bounds the threads with open START events; past it they
// are all forgotten (a pair then straddling it is not seen).
const maxOpenThreads = 1 << 16

// newFlight returns the flight state of a recording of probes names into
// w, its triggers resolved to probe ids; counts, if not nil, reads the
// kernel's counts of events not sent.
func newFlight(w *format.Writer, o *Options, names []string, counts func() kernelCounts) (*flight, error) {
	f := &flight{w: w, opts: o, asked: o.Snapshot, out: make(chan *takenSnap, 1), done: make(chan struct{}), counts: counts}
	var err error
	if f.trigger, f.start, f.end, err = o.triggerProbes(names); err != nil {
		return nil, err
	}
	if t := o.TriggerLatency; t != nil {
		f.threshold = t.Threshold.Nanoseconds()
		f.open = map[uint32][]int64{}
	}
	go f.writeSnapshots()
	return f, nil
}

// triggerProbes returns the ids of the --trigger probe and of the
// --trigger-latency pair among the probes names, -1 for none.
func (o *Options) triggerProbes(names []string) (trigger, start, end int, err error) {
	id := func(flag, name string) int {
		if err != nil {
			return -1
		}
		for i, n := range names {
			if n == name {
				return i
			}
		}
		err = usage.Errorf("%s: no probe named %q in this recording (its probes: %s)", flag, name, strings.Join(names, ", "))
		return -1
	}
	trigger, start, end = -1, -1, -1
	if o.Trigger != "" {
		trigger = id("--trigger", o.Trigger)
	}
	if t := o.TriggerLatency; t != nil {
		start, end = id("--trigger-latency", t.Start), id("--trigger-latency", t.End)
		if err == nil && start == end {
			err = usage.Errorf("--trigger-latency %q: START and END are the same probe", t.String())
		}
	}
	return trigger, start, end, err
}

// cut ends the current batch before the first event after a pending
// snapshot's due time, so that the snapshot, which takes the batches that
// begin by then, ends at its due time (--after) and not at the event the
// recorder had read when it saw the time pass, up to a drain interval
// later. An event of the snapshot's read after the cut (the rings are
// read out of order by a little) goes in a batch of its own, which the
// snapshot takes without the later events around it: alone says to end
// the batch after it too.
func (f *flight) cut(ev *format.Event) (alone bool, err error) {
	p := f.pending
	switch {
	case p == nil:
	case !p.cut && ev.Time > p.due:
		p.cut = true
		return false, f.w.Flush()
	case p.cut && ev.Time <= p.due:
		return true, f.w.Flush()
	}
	return false, nil
}

// event looks at an event appended: a trigger's event asks for a
// snapshot, due --after later.
func (f *flight) event(ev *format.Event) {
	if f.stopped {
		return
	}
	p := int(ev.Probe)
	if p == f.trigger {
		f.fire(ev.Time, "probe "+f.opts.Trigger, 0)
	}
	if p == f.start {
		s := f.open[ev.TID]
		if len(s) == maxOpenPerThread {
			s = append(s[:0], s[1:]...)
		}
		if s == nil && len(f.open) >= maxOpenThreads {
			clear(f.open)
		}
		f.open[ev.TID] = append(s, ev.Time)
	}
	if p == f.end {
		s := f.open[ev.TID]
		if len(s) == 0 {
			return
		}
		t0 := s[len(s)-1]
		if len(s) == 1 {
			delete(f.open, ev.TID)
		} else {
			f.open[ev.TID] = s[:len(s)-1]
		}
		if d := ev.Time - t0; d > f.threshold {
			f.fire(ev.Time, "latency "+f.opts.TriggerLatency.String(), d)
		}
	}
}

// fire asks for a snapshot for a trigger at t: the first trigger, or one
// at least --trigger-holdoff after the last that took one, unless one is
// already waiting.
func (f *flight) fire(t int64, why string, latency int64) {
	if f.pending != nil || f.last != 0 && (f.opts.TriggerHoldoff == 0 || t-f.last < f.opts.TriggerHoldoff.Nanoseconds()) {
		return
	}
	f.last = t
	f.pending = &pendingSnap{due: t + f.opts.After.Nanoseconds(), at: t, why: why, latency: latency}
}

// cycle takes the snapshot asked for by a signal, or the pending one once
// every event up to its due time has been drained (seen: the boot-clock
// time before which the rings have passed on everything). The drain loop
// calls it after each pass over the rings, and under a load it never
// catches up with, every few thousand events with seen a second ago.
func (f *flight) cycle(seen int64) error {
	f.sample()
	select {
	case <-f.asked:
		if f.pending == nil {
			now := boottime.Now()
			f.pending = &pendingSnap{due: now, at: now, why: "signal"}
		}
	default:
	}
	if f.pending == nil || f.stopped || seen < f.pending.due {
		return nil
	}
	return f.take()
}

// take takes the pending snapshot now and hands it to the writer goroutine.
func (f *flight) take() error {
	p := f.pending
	f.pending = nil
	if f.stopped {
		return nil
	}
	s, err := f.w.FlightSnapshot(p.due)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	// One snapshot waits while another is written, no more: each keeps
	// its batches in memory until it is on disk.
	if len(f.out) == cap(f.out) {
		f.skipped++
		fmt.Fprintf(f.opts.Log, "bpftape record: WARNING: a snapshot (%s) was skipped: two are still being written\n", p.why)
		return nil
	}
	f.taken++
	m := &s.Meta
	if m.Extra == nil {
		m.Extra = map[string]string{}
	}
	m.Extra[format.ExtraFlightTrigger] = p.why
	m.Extra[format.ExtraFlightTime] = strconv.FormatInt(p.at, 10)
	m.Extra[format.ExtraFlightWindow] = f.opts.Flight.String()
	m.Extra[format.ExtraFlightSnapshot] = strconv.Itoa(f.taken)
	if f.opts.After > 0 {
		m.Extra[format.ExtraFlightAfter] = f.opts.After.String()
	}
	if p.latency > 0 {
		m.Extra[format.ExtraFlightLatency] = strconv.FormatInt(p.latency, 10)
	}
	// Of the events the programs did not send, those of its window.
	if f.counts != nil {
		f.windowCounts(m.Window.Start).setMeta(m.Probes)
	}
	// Its times are its own, as a rotated part's: from its window's start.
	m.StartWall = m.WallTime(m.Window.Start)
	m.StartBoot = m.Window.Start
	f.out <- &takenSnap{snap: s, name: SnapshotName(f.opts.Output, f.taken)}
	if f.opts.MaxSnapshots > 0 && f.taken >= f.opts.MaxSnapshots {
		f.stopped = true
		return errMaxSnapshots
	}
	return nil
}

// errMaxSnapshots stops a flight recording that took --max-snapshots.
var errMaxSnapshots = errors.New("the recording took --max-snapshots snapshots")

// finish takes, when the recording ends, a snapshot still waiting for its
// --after period, and one of the last --flight if nothing can trigger one
// (signals only) and none was taken; then waits for every snapshot to be
// written.
func (f *flight) finish() {
	if f.pending == nil && f.taken == 0 && f.trigger < 0 && f.start < 0 {
		now := boottime.Now()
		f.pending = &pendingSnap{due: now, at: now, why: "end of recording"}
	}
	if f.pending != nil && !f.stopped {
		if err := f.take(); err != nil && !errors.Is(err, errMaxSnapshots) {
			f.errs = append(f.errs, err)
		}
	}
	close(f.out)
	<-f.done
}

// writeSnapshots writes the snapshots taken, one at a time, each to a new
// file (or over an old one with --force, through a temporary file).
func (f *flight) writeSnapshots() {
	defer close(f.done)
	for t := range f.out {
		if err := f.write(t); err != nil {
			f.errs = append(f.errs, fmt.Errorf("snapshot %s: %w", t.name, err))
			fmt.Fprintf(f.opts.Log, "bpftape record: snapshot %s: %v\n", t.name, err)
			continue
		}
		f.written = append(f.written, t.name)
		m := t.snap.Meta
		fmt.Fprintf(f.opts.Log, "[ bpftape record: snapshot %s: %s, %s events over %.3fs before %s ]\n", t.name,
			m.Extra[format.ExtraFlightTrigger], count(uint64(t.snap.Rows)), float64(m.Window.End-m.Window.Start)/1e9,
			m.WallTime(m.Window.End).Format("15:04:05.000"))
	}
}

func (f *flight) write(t *takenSnap) error {
	// Written beside its name and renamed into place: a snapshot is
	// there whole or not at all.
	out, err := outfile.Create(t.name, outfile.Options{Force: f.opts.Force})
	if err != nil {
		return err
	}
	if err := f.opts.Owner.give(out); err != nil {
		out.Discard()
		return err
	}
	if _, err := t.snap.WriteTo(out); err != nil {
		out.Discard()
		return err
	}
	return out.Commit()
}
