// Package perfetto writes a capture as a Perfetto trace (the protobuf
// perfetto.protos.Trace that ui.perfetto.dev and trace_processor open), a
// time line per thread: entry/return pairs as nested slices, every other
// event as an instant, chosen fields as counters, stacks as callstacks.
// The protobuf is written by the protobuf library from Perfetto's own
// definitions (internal/perfettopb), one packet at a time, so that memory
// grows with the threads, open calls and tracks, not with the events.
//
// What the trace holds:
//
//   - A process track per pid and a thread track per tid, named from the
//     comm of their events. A thread renamed (or a process exec'd) during
//     the capture gets a new descriptor where its comm changes, and
//     Perfetto shows the last one. A process is named after its leader
//     thread (tid = pid) once that has an event, until then after the
//     first thread seen; in a merged capture the host follows the name.
//   - Slices from entry/return pairs, paired as `bpftape latency` pairs
//     them (replay.Pairing): every entry probe and the return probe of
//     its function (as `bpftape report` finds them), plus Options.Pairs.
//     A slice's arguments are the entry's fields and, prefixed "return.",
//     the return's. A pair's slices nest on the thread's track, unless
//     somewhere in the capture one of its slices overlaps a slice of
//     another pair without nesting (a lost event, a longjmp): that pair's
//     slices then go on a track of their own under each thread, so that
//     every end closes the slice its begin opened. With Options.Key the
//     slices may start and end on different threads: they go on "lanes",
//     global tracks of the pair's name (which the UI shows as one), each
//     holding one slice at a time, since a track per key would be one per
//     sector or request and a track per starting thread would overlap.
//   - Entries that never return, returns without entry, entries beyond
//     replay.MaxDepth open calls and (with a Key) starts replaced by a
//     later start of their key: instants with an "unmatched" argument
//     saying which. Knowing an entry never returns takes a first pass over
//     the capture, which pairs and keeps nothing else.
//   - Every other event: an instant on its thread's track named after its
//     probe, its fields as arguments (integers as integers, strings as
//     strings, addresses as pointers) with its cpu.
//   - Options.Counters: a counter track per PROBE.FIELD.
//   - Stack fields (ustack, kstack): the event's callstack, symbolized from
//     the capture as `bpftape stacks` symbolizes it (user frames, then
//     kernel frames), interned per packet sequence.
//   - A "bpftape" track with an instant "lost N events" per loss record and
//     a slice over the capture's window (or its first to last event).
//
// Times: a capture's times are boot-clock nanoseconds (CLOCK_BOOTTIME),
// and so are the packets' (timestamp_clock_id BUILTIN_CLOCK_BOOTTIME); a
// ClockSnapshot maps the capture's start in the boot clock to its wall
// clock time (CLOCK_REALTIME), so that the UI can show real times. A time
// before the clock's zero (only a forged capture has one) is written as 0.
//
// Order: trace_processor sorts a trace's events by time before it makes
// slices of them (a file without the tracing service's flush marks is
// sorted whole, ties kept in file order), so it does not need the file in
// time order; but a packet sequence is one writer's stream, which Perfetto's
// own writers emit in time order, and readers that merge sequences as they
// stream rely on that. A capture's rows come in batch order, which merges
// the per-CPU rings and may step back, so each packet goes to the open
// sequence whose last time is the latest not after its own, or to a new
// sequence where none is: every sequence runs forward, and a capture merged
// from N sorted rings takes about N of them. At most MaxSequences are open;
// beyond that the one that ran furthest ahead is closed for a new one.
// The begins and ends of a track must also run forward, or the sort would
// close the wrong slice: those of a thread whose events are out of time
// order (a damaged capture) are moved to the track's latest time
// (Result.Clamped counts them); instants keep their times.
package perfetto

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/report"
)

// Options say what a trace holds besides the events.
type Options struct {
	// Rows selects the events; loss records are selected by its time
	// window only.
	Rows replay.RowFilter
	// Pairs are START,END pairs besides the entry/return pairs found in
	// the capture (a found pair that shares a probe with one of these is
	// left out). A probe is in one pair at most.
	Pairs []Pair
	// Key pairs by the values of these fields of both probes instead of by
	// thread (`bpftape latency --key`): the Pairs' probes, or the found
	// pairs' when Pairs is empty.
	Key []string
	// Counters are PROBE.FIELD names of integer fields, each drawn as a
	// counter track.
	Counters []string
}

// Pair names a start probe and the end probe that closes its slices.
type Pair struct{ Start, End string }

// Result counts what Write wrote.
type Result struct {
	Slices      uint64 `json:"slices"`
	Instants    uint64 `json:"instants"`  // events of no pair
	Unmatched   uint64 `json:"unmatched"` // events of a pair that made no slice
	Counters    uint64 `json:"counters"`  // counter values
	LossRecords uint64 `json:"loss_records"`
	// Clamped counts slice begins and ends moved forward to their track's
	// latest time (events of a thread out of time order).
	Clamped uint64 `json:"clamped,omitempty"`
	// Sequences is the number of packet sequences written.
	Sequences uint32 `json:"sequences"`
}

// pairSpec is one pair, resolved.
type pairSpec struct {
	name       string // the slices' name: the start probe's
	start, end uint16
	keyed      bool
	p          *replay.Pairing
}

// counterSpec is one counter, resolved.
type counterSpec struct {
	name  string
	probe uint16
	col   int
	typ   format.Type
}

// Write writes c as a Perfetto trace to w, and returns what it wrote and
// its last pass over c.
func Write(c *replay.Capture, w io.Writer, o Options) (*Result, *replay.Pass, error) {
	pairs, err := resolvePairs(c, &o)
	if err != nil {
		return nil, nil, err
	}
	counters, err := resolveCounters(c, o.Counters)
	if err != nil {
		return nil, nil, err
	}
	x, err := newExporter(c, w, &o, pairs, counters)
	if err != nil {
		return nil, nil, err
	}
	// Thread pairs need to know, at an entry, whether it will return, and
	// whether a pair's slices nest with the others': a first pass pairs.
	if x.threadPairs() {
		if p, err := x.firstPass(); err != nil {
			return nil, p, err
		}
	}
	p, err := x.secondPass()
	// Every packet is whole in the buffer: what a failed pass wrote is a
	// trace too, cut short.
	if ferr := x.flush(); err == nil {
		err = ferr
	}
	return x.result(), p, err
}

// resolvePairs returns the pairs o asks for and those the capture has.
func resolvePairs(c *replay.Capture, o *Options) ([]*pairSpec, error) {
	m := c.Meta()
	used := map[string]string{} // probe -> the pair it is in
	var out []*pairSpec
	add := func(start, end string, keyed bool) error {
		for _, probe := range []string{start, end} {
			if other, ok := used[probe]; ok {
				return usage.Errorf("probe %q is in two pairs (%s and %s,%s): a probe pairs once", probe, other, start, end)
			}
		}
		var key []string
		if keyed {
			key = o.Key
		}
		p, err := replay.NewPairing(c, start, end, key)
		if err != nil {
			return fmt.Errorf("pair %s,%s: %w", start, end, err)
		}
		s, _ := c.ResolveProbe(start)
		e, _ := c.ResolveProbe(end)
		used[start], used[end] = start+","+end, start+","+end
		out = append(out, &pairSpec{name: start, start: s, end: e, keyed: keyed, p: p})
		return nil
	}
	for _, p := range o.Pairs {
		if p.Start == "" || p.End == "" {
			return nil, usage.Errorf("pair %q,%q: want START,END", p.Start, p.End)
		}
		if err := add(p.Start, p.End, len(o.Key) > 0); err != nil {
			return nil, err
		}
	}
	if len(o.Key) > 0 && len(o.Pairs) == 0 && len(report.Pairs(m)) == 0 {
		return nil, usage.Errorf("--key %s: the capture has no entry/return pair to pair by key: give START,END", strings.Join(o.Key, ","))
	}
	for _, f := range report.Pairs(m) {
		if used[f.Entry] != "" || used[f.Return] != "" {
			continue
		}
		if err := add(f.Entry, f.Return, len(o.Key) > 0 && len(o.Pairs) == 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// resolveCounters resolves PROBE.FIELD names to integer fields.
func resolveCounters(c *replay.Capture, names []string) ([]counterSpec, error) {
	m := c.Meta()
	var out []counterSpec
	for _, name := range names {
		// A probe's name may hold dots: take the first split whose probe exists.
		probe, field := "", ""
		for i := 0; i < len(name); i++ {
			if name[i] == '.' {
				if _, p := m.Probe(name[:i]); p != nil {
					probe, field = name[:i], name[i+1:]
					break
				}
			}
		}
		if probe == "" {
			if !strings.Contains(name, ".") {
				return nil, usage.Errorf("counter %q: want PROBE.FIELD", name)
			}
			probe, field = name[:strings.LastIndexByte(name, '.')], name[strings.LastIndexByte(name, '.')+1:]
		}
		r, err := c.Resolve(probe, field)
		if err != nil {
			return nil, fmt.Errorf("counter %s: %w", name, err)
		}
		pi := r.ProbeIndex()
		p := &m.Probes[pi]
		f := p.Fields[p.Field(r.Field)]
		if !r.IsInt() || f.Type.IsStack() {
			return nil, usage.Errorf("counter %s: field %s of probe %s is a %s, not an integer", name, r.Field, probe, f.Type)
		}
		out = append(out, counterSpec{name: probe + "." + r.Field, probe: uint16(pi), col: r.Column(), typ: f.Type})
	}
	return out, nil
}

// newExporter sets up the state of both passes.
func newExporter(c *replay.Capture, w io.Writer, o *Options, pairs []*pairSpec, counters []counterSpec) (*exporter, error) {
	m := c.Meta()
	x := &exporter{
		c: c, o: o, pairs: pairs, counters: counters,
		out:     &packetWriter{w: bufio.NewWriterSize(w, 1<<16)},
		pairOf:  make([]int, len(m.Probes)),
		probes:  make([]probeCols, len(m.Probes)),
		procs:   map[procKey]*process{},
		threads: map[threadKey]*thread{},
		res:     &Result{},
	}
	for i := range x.pairOf {
		x.pairOf[i] = -1
	}
	for i, p := range pairs {
		x.pairOf[p.start], x.pairOf[p.end] = i, i
	}
	stacks := false
	for pi := range m.Probes {
		pc, err := newProbeCols(c, pi)
		if err != nil {
			return nil, err
		}
		x.probes[pi] = pc
		stacks = stacks || pc.user >= 0 || pc.kernel >= 0
	}
	for i := range counters {
		x.probes[counters[i].probe].counters = append(x.probes[counters[i].probe].counters, i)
	}
	if stacks {
		n, err := replay.NewStackNamer(c)
		if err != nil {
			return nil, fmt.Errorf("stacks: %w", err)
		}
		x.names = n
	}
	return x, nil
}
