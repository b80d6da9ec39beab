// Package pprof turns a capture's stacks into a pprof profile
// (profile.proto), the format go tool pprof, Pyroscope, Parca, Grafana and
// speedscope read. The profile is built and encoded by
// github.com/google/pprof/profile, the format's own library, so that what
// those tools accept is what it writes.
//
// A sample is one stack of one thread, aggregated as bpftape stacks
// aggregates it, with the thread's comm and the probe as labels and its
// pid and tid as numeric labels. Its locations, innermost first (kernel
// frames above user frames, as perf shows them), keep the frame's runtime
// address and its mapping: the object's path and build id and, for a user
// frame, the mapping's start, limit and file offset, so that a symbol
// server can symbolize the profile again. A frame bpftape resolved also
// has its function; every mapping whose frames all resolved says so
// (HasFunctions), so pprof does not look for a binary that may be gone.
// With StacksOptions.By, a frame naming the key sits at the root, as in
// bpftape stacks.
package pprof

import (
	"cmp"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"

	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/symbolize"
)

// Weight is what a sample's value measures.
type Weight string

// Weights.
const (
	// Events counts the probe's events by stack (samples/count), and for a
	// profile:hz:N probe also the CPU time they stand for (cpu/nanoseconds,
	// one period per sample), as perf's and Go's CPU profiles do.
	Events Weight = "events"
	// OffCPU sums the time threads spent off CPU by the stack they left it
	// with (off-cpu/nanoseconds), from a sched_switch probe, as bpftape
	// stacks --offcpu does; switches/count counts the intervals.
	OffCPU Weight = "offcpu"
	// Latency sums the duration of the calls an entry and a return probe
	// pair (latency/nanoseconds) by the stack of the call, as bpftape
	// latency pairs them; calls/count counts them.
	Latency Weight = "latency"
)

// ParseWeight checks a --weight value.
func ParseWeight(s string) (Weight, error) {
	switch w := Weight(s); w {
	case Events, OffCPU, Latency:
		return w, nil
	case "":
		return Events, nil
	}
	return "", usage.Errorf("--weight %q: use events, offcpu or latency", s)
}

// Options select the stacks of a profile and what they weigh.
type Options struct {
	Stacks replay.StacksOptions
	Weight Weight // "" is Events
	// Latency names the entry and return probes (and Key) of the calls
	// for Weight Latency.
	Latency replay.LatencyOptions
}

// Build reads the stacks of c that o selects and returns them as a profile,
// with the stack analysis it was built from (for its notes).
func Build(c *replay.Capture, o Options) (*profile.Profile, *replay.StackCounts, *replay.Pass, error) {
	o.Stacks.Samples = true
	var sc *replay.StackCounts
	var pass *replay.Pass
	var err error
	switch o.Weight {
	case "", Events:
		sc, pass, err = replay.Stacks(c, o.Stacks)
	case OffCPU:
		sc, pass, err = replay.OffCPU(c, o.Stacks)
	case Latency:
		sc, pass, err = replay.LatencyStacks(c, o.Stacks, o.Latency)
	default:
		err = usage.Errorf("weight %q: use events, offcpu or latency", o.Weight)
	}
	if err != nil {
		return nil, nil, pass, err
	}
	b := newBuilder()
	p := b.p
	switch o.Weight {
	case OffCPU:
		p.SampleType = []*profile.ValueType{{Type: "switches", Unit: "count"}, {Type: "off-cpu", Unit: "nanoseconds"}}
		p.DefaultSampleType = "off-cpu"
	case Latency:
		p.SampleType = []*profile.ValueType{{Type: "calls", Unit: "count"}, {Type: "latency", Unit: "nanoseconds"}}
		p.DefaultSampleType = "latency"
	default:
		p.SampleType = []*profile.ValueType{{Type: "samples", Unit: "count"}}
		p.PeriodType, p.Period = &profile.ValueType{Type: "samples", Unit: "count"}, 1
		if period := profilePeriod(c, sc.Probe); period > 0 {
			p.SampleType = append(p.SampleType, &profile.ValueType{Type: "cpu", Unit: "nanoseconds"})
			p.PeriodType, p.Period = &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, period
		}
	}
	m := c.Meta()
	p.TimeNanos = m.StartWall.UnixNano()
	if w := m.Window; w != nil && w.End > w.Start {
		p.DurationNanos = w.End - w.Start
	}
	p.Comments = append(p.Comments, fmt.Sprintf("capture %s, probe %s (bpftape export)", path.Base(c.Name), sc.Probe))
	if m.Host != "" {
		p.Comments = append(p.Comments, "host "+m.Host)
	}
	for _, s := range sc.Samples {
		values := []int64{clampInt64(s.Events)}
		switch {
		case o.Weight == OffCPU || o.Weight == Latency:
			values = append(values, clampInt64(s.Value))
		case len(p.SampleType) == 2:
			values = append(values, clampInt64(s.Events)*p.Period)
		}
		p.Sample = append(p.Sample, b.sample(s, sc.Probe, sc.Mode, values))
	}
	b.finish()
	if err := p.CheckValid(); err != nil {
		return nil, nil, pass, fmt.Errorf("building the profile: %w", err)
	}
	return p, sc, pass, nil
}

// Write writes p gzipped, as pprof reads it: through klauspost's gzip at
// level 7, not the standard library's at its default, which
// profile.Profile.Write uses. A profile of 300 stacks of 1,024 frames in
// distinct mappings (12 MB of protobuf) took 0.91-1.01 s to compress that
// way and takes 0.24 s, 1% larger (5.71 MB against 5.65; klauspost's
// default level: 0.13 s, 8% larger).
func Write(w io.Writer, p *profile.Profile) error {
	zw, err := gzip.NewWriterLevel(w, 7)
	if err != nil {
		return err
	}
	if err := p.WriteUncompressed(zw); err != nil {
		return err
	}
	return zw.Close()
}

// profilePeriod returns the sampling period in nanoseconds of probe name
// when it is a profile:hz:N probe, else 0.
func profilePeriod(c *replay.Capture, name string) int64 {
	for _, p := range c.Meta().Probes {
		if p.Name != name {
			continue
		}
		spec, err := probespec.Parse(p.Spec)
		if err != nil || spec.Kind != probespec.Profile || spec.Hz == 0 {
			return 0
		}
		return int64(1e9 / spec.Hz)
	}
	return 0
}

func clampInt64(v uint64) int64 {
	if v > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(v)
}

// builder interns a profile's mappings, functions and locations.
type builder struct {
	p         *profile.Profile
	mappings  map[mappingKey]*profile.Mapping
	functions map[functionKey]*profile.Function
	locations map[locationKey]*profile.Location
	// unresolved counts, by mapping, its locations without a function.
	unresolved map[*profile.Mapping]int
}

type mappingKey struct {
	file, buildID        string
	start, limit, offset uint64
}

type functionKey struct{ name, file string }

type locationKey struct {
	mapping *profile.Mapping
	addr    uint64
	fn      *profile.Function
}

func newBuilder() *builder {
	return &builder{p: &profile.Profile{},
		mappings: map[mappingKey]*profile.Mapping{}, functions: map[functionKey]*profile.Function{},
		locations: map[locationKey]*profile.Location{}, unresolved: map[*profile.Mapping]int{}}
}

// sample returns the profile sample of s.
func (b *builder) sample(s replay.StackSample, probe string, mode replay.StackMode, values []int64) *profile.Sample {
	ps := &profile.Sample{Value: values,
		Label:    map[string][]string{"probe": {probe}, "comm": {s.Comm}},
		NumLabel: map[string][]int64{"pid": {int64(s.PID)}, "tid": {int64(s.TID)}},
	}
	for _, f := range s.Kernel {
		ps.Location = append(ps.Location, b.location(f, mode == replay.StacksBoth))
	}
	for _, f := range s.User {
		ps.Location = append(ps.Location, b.location(f, false))
	}
	if len(ps.Location) == 0 {
		ps.Location = append(ps.Location, b.named(replay.EmptyStackFrame))
	}
	if s.By != "" {
		ps.Location = append(ps.Location, b.named(s.By))
	}
	return ps
}

// location interns frame f; kernelMark adds "_[k]" to a kernel function's
// name, as bpftape stacks marks kernel frames when it shows both stacks.
func (b *builder) location(f symbolize.Frame, kernelMark bool) *profile.Location {
	m := b.mapping(f)
	var fn *profile.Function
	if f.Resolved {
		name := f.Name
		if kernelMark {
			name += "_[k]"
		}
		fn = b.function(name, f.Object)
	}
	k := locationKey{m, f.Addr, fn}
	if l := b.locations[k]; l != nil {
		return l
	}
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Mapping: m, Address: f.Addr}
	if fn != nil {
		l.Line = []profile.Line{{Function: fn}}
	} else {
		if m != nil {
			b.unresolved[m]++
		}
		// No function: pprof names the frame by its address, or, with a
		// symbol server, by the mapping's build id and offset.
	}
	b.locations[k] = l
	b.p.Location = append(b.p.Location, l)
	return l
}

// named interns a location of a function name that is no code: the
// stacks of no frames and the By key.
func (b *builder) named(name string) *profile.Location {
	fn := b.function(name, "")
	k := locationKey{nil, 0, fn}
	if l := b.locations[k]; l != nil {
		return l
	}
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Line: []profile.Line{{Function: fn}}}
	b.locations[k] = l
	b.p.Location = append(b.p.Location, l)
	return l
}

// mapping interns the mapping of frame f: the user mapping that covers it,
// or one per kernel object; nil for a frame no mapping covers.
func (b *builder) mapping(f symbolize.Frame) *profile.Mapping {
	var k mappingKey
	switch {
	case f.Map != nil:
		k = mappingKey{file: f.Object, buildID: f.BuildID, start: f.Map.Start, limit: f.Map.End, offset: f.Map.Offset}
	case f.Kernel && f.Object != "":
		// Kernel symbols are absolute addresses: the mapping spans them
		// all (perf names it [kernel.kallsyms]).
		k = mappingKey{file: f.Object, buildID: f.BuildID}
	default:
		return nil
	}
	if m := b.mappings[k]; m != nil {
		return m
	}
	m := &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), Start: k.start, Limit: k.limit, Offset: k.offset,
		File: k.file, BuildID: k.buildID}
	if f.Kernel {
		m.Limit = ^uint64(0)
	}
	b.mappings[k] = m
	b.p.Mapping = append(b.p.Mapping, m)
	return m
}

func (b *builder) function(name, file string) *profile.Function {
	k := functionKey{name, file}
	if fn := b.functions[k]; fn != nil {
		return fn
	}
	// No file name: the profile has no source lines, and pprof prints a
	// function's Filename as its source file.
	fn := &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, SystemName: name}
	b.functions[k] = fn
	b.p.Function = append(b.p.Function, fn)
	return fn
}

// finish marks the mappings whose every location has a function, puts
// the main program's mapping first (pprof names the profile after its
// first mapping), and the samples in a stable order (the stack analysis
// lists them in none).
func (b *builder) finish() {
	for _, m := range b.p.Mapping {
		m.HasFunctions = b.unresolved[m] == 0
	}
	// The main program: of the executables that are no library and not
	// the kernel, the one in the most samples.
	in := map[*profile.Mapping]int{}
	for _, s := range b.p.Sample {
		seen := map[*profile.Mapping]bool{}
		for _, l := range s.Location {
			if m := l.Mapping; m != nil && !seen[m] {
				seen[m] = true
				in[m]++
			}
		}
	}
	program := func(m *profile.Mapping) bool {
		base := path.Base(m.File)
		return !strings.HasPrefix(m.File, "[") && !strings.HasSuffix(base, ".so") && !strings.Contains(base, ".so.")
	}
	slices.SortStableFunc(b.p.Mapping, func(x, y *profile.Mapping) int {
		if px, py := program(x), program(y); px != py {
			if px {
				return -1
			}
			return 1
		}
		return cmp.Compare(in[y], in[x])
	})
	for i, m := range b.p.Mapping {
		m.ID = uint64(i + 1)
	}
	slices.SortStableFunc(b.p.Sample, func(x, y *profile.Sample) int {
		if c := cmp.Compare(len(x.Location), len(y.Location)); c != 0 {
			return c
		}
		for i := range x.Location {
			if c := cmp.Compare(x.Location[i].ID, y.Location[i].ID); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(x.NumLabel["pid"][0], y.NumLabel["pid"][0]); c != 0 {
			return c
		}
		if c := cmp.Compare(x.NumLabel["tid"][0], y.NumLabel["tid"][0]); c != 0 {
			return c
		}
		return strings.Compare(x.Label["comm"][0], y.Label["comm"][0])
	})
}
