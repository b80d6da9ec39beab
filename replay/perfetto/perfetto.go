// Package perfetto writes a capture as a Perfetto trace (the protobuf
// perfetto.protos.Trace that ui.perfetto.dev and trace_processor open): a
// time line per thread, entry/return pairs as nested slices (paired by
// replay.Pairing, as `bpftape latency` pairs them), every other event as an
// instant, chosen fields as counters, stacks as interned callstacks, loss
// records on a "bpftape" track. docs/analyses.md says what a user sees.
//
// The trace is written with protowire, packet by packet, in the field
// order the protobuf library marshals Perfetto's messages in, so that
// memory grows with threads, open calls and tracks, not with events.
// Building the library's messages took two thirds of an export's CPU, and
// linking the code generated from the vendored protos cost every bpftape
// process 3.5 ms to start (bench/README.md, "Perfetto export"). That code
// (internal/perfettopb) is the tests': every trace a test reads must be,
// byte for byte, what the library marshals of it (checkLibraryBytes).
// Knowing that an entry never returns takes a first pass that only pairs.
//
// Times stay on the capture's boot clock (timestamp_clock_id BOOTTIME), a
// ClockSnapshot maps it to the wall clock. A capture's rows merge per-CPU
// rings and may step back in time, and a packet sequence is one writer's
// stream in time order: each packet goes to the open sequence whose last
// time is the latest not after its own, or to a new one (at most
// MaxSequences). A pair whose slices overlap another's without nesting
// gets a track of its own under each thread, and keyed pairs go on
// "lanes" of one slice at a time, so that every end closes its own begin.
package perfetto

import (
	"bufio"
	"cmp"
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
	// LeftOut are the entry/return pairs of the capture not drawn as
	// slices because a pair of Options.Pairs takes one of their probes,
	// each as "START,END (in --pair A,B)".
	LeftOut []string `json:"left_out,omitempty"`
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
	pairs, left, err := resolvePairs(c, &o)
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
	res := x.result()
	res.LeftOut = left
	return res, p, err
}

// resolvePairs returns the pairs o asks for and those the capture has.
func resolvePairs(c *replay.Capture, o *Options) ([]*pairSpec, []string, error) {
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
			return nil, nil, usage.Errorf("pair %q,%q: want START,END", p.Start, p.End)
		}
		if err := add(p.Start, p.End, len(o.Key) > 0); err != nil {
			return nil, nil, err
		}
	}
	if len(o.Key) > 0 && len(o.Pairs) == 0 && len(report.Pairs(m)) == 0 {
		return nil, nil, usage.Errorf("--key %s: the capture has no entry/return pair to pair by key: give START,END", strings.Join(o.Key, ","))
	}
	var left []string
	for _, f := range report.Pairs(m) {
		if in := cmp.Or(used[f.Entry], used[f.Return]); in != "" {
			if name := f.Entry + "," + f.Return; in != name {
				left = append(left, name+" (--pair "+in+" takes a probe of it)")
			}
			continue
		}
		if err := add(f.Entry, f.Return, len(o.Key) > 0 && len(o.Pairs) == 0); err != nil {
			return nil, nil, err
		}
	}
	return out, left, nil
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
