package replay

import (
	"cmp"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/humanfmt"
	"github.com/bpftape/bpftape/internal/textsafe"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay/symbolize"
)

// StackMode says which of a probe's stacks a stack analysis uses.
type StackMode uint8

// Stack modes.
const (
	StacksRecorded StackMode = iota // whichever the probe recorded, both if both
	StacksUser
	StacksKernel
	StacksBoth
)

// StacksOptions configure Stacks and OffCPU.
type StacksOptions struct {
	Rows RowFilter
	// Probe is the probe whose stacks are counted; "" is the capture's
	// only probe with stacks.
	Probe string
	Mode  StackMode
	// By puts a frame on top of each stack's root: the event's "comm",
	// "pid", "tid" or the value of a field of the probe, as BCC's
	// profile -f puts the process name.
	By string
	// Offsets writes function+0xOFF instead of the function alone.
	Offsets bool
	// BuildIDs names a frame that did not resolve by its object's build id
	// too, [OBJECT@BUILDID+0xOFFSET], so that the frames of one build read
	// alike on every host and those of two builds never do.
	BuildIDs bool
	// Samples also lists every stack of every thread with its frames and
	// the thread's pid, tid and comm (StackCounts.Samples), for profile
	// formats that keep addresses, mappings and labels.
	Samples bool
}

// FoldedStack is one line of folded output: frames root first, and the
// events counted on that stack (or, for off-CPU time, nanoseconds).
type FoldedStack struct {
	Frames []string
	Value  uint64
}

// StackCounts is what Stacks and OffCPU found.
type StackCounts struct {
	Probe  string
	Mode   StackMode
	Unit   string // "events" or "ns"
	Stacks []FoldedStack
	Total  uint64
	// Events is the number of events counted on a stack; NoStack those
	// without one (the ring had no room for it, or the table lacks its
	// id).
	Events, NoStack uint64
	// Unresolved counts, by reason, the frames that did not resolve
	// (each unique frame of each stack once).
	Unresolved map[string]uint64
	// Empty is the value of the stacks of no frames, shown as
	// EmptyStackFrame.
	Empty uint64
	// SwitchesKept, from OffCPU, says why the capture may lack
	// switch-ins ("" if it kept every sched_switch event).
	SwitchesKept string
	// SwitchInsMissing, from OffCPU, counts the switch-outs of a picked
	// thread that came with no switch-in since its previous switch-out:
	// the switch-in was lost, or the kernel ran no program for it (the
	// thread it replaced is one whose tracepoints do not fire). The
	// interval it would have closed is left out, as offcputime leaves it.
	SwitchInsMissing uint64
	// Samples, with StacksOptions.Samples, holds every stack of every
	// thread, in no particular order.
	Samples []StackSample
}

// StackSample is one stack of one thread, as a profile keeps it: its
// frames with their addresses and mappings, and what was counted on it.
type StackSample struct {
	// User and Kernel are the frames, innermost first; nil where the mode
	// leaves the stack out or the event has none.
	User, Kernel []symbolize.Frame
	By           string // the StacksOptions.By value, "" without By
	PID, TID     uint32
	Comm         string
	Events       uint64 // the events (switch-outs, calls) counted
	Value        uint64 // their value in StackCounts.Unit
}

// EmptyStackFrame stands for a stack of no frames, so that its events
// still show (flamegraph.pl drops a line without frames).
const EmptyStackFrame = "[no frames]"

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// stackCols are the columns of a probe's stack fields, -1 when absent.
type stackCols struct{ user, kernel int }

// stackProbe finds the probe and its stack columns, and settles the mode.
func stackProbe(c *Capture, o *StacksOptions) (int, stackCols, error) {
	m := c.Meta()
	cols := stackCols{-1, -1}
	pi := -1
	var withStacks []string
	for i := range m.Probes {
		p := &m.Probes[i]
		has := probeHasStacks(p)
		if has {
			withStacks = append(withStacks, p.Name)
		}
		if (o.Probe == "" && has && pi < 0) || p.Name == o.Probe {
			pi = i
		}
	}
	switch {
	case len(withStacks) == 0:
		return 0, cols, usage.Errorf("the capture has no stacks: record them with a stack field, e.g. u:./app:leaf(ustack), t:sched:sched_switch(kstack) or profile:hz:49")
	case o.Probe == "" && len(withStacks) > 1:
		return 0, cols, usage.Errorf("the capture has stacks of several probes (%s): name one", strings.Join(quoteAll(withStacks), ", "))
	case pi < 0:
		return 0, cols, usage.Errorf("no probe %q: the probes with stacks are %s", o.Probe, strings.Join(quoteAll(withStacks), ", "))
	}
	p := &m.Probes[pi]
	for _, f := range p.Fields {
		switch f.Type {
		case format.UserStack:
			cols.user = c.Column(f.Column)
		case format.KernelStack:
			cols.kernel = c.Column(f.Column)
		}
	}
	if cols.user < 0 && cols.kernel < 0 {
		return 0, cols, usage.Errorf("probe %q recorded no stacks: the probes with stacks are %s", p.Name, strings.Join(quoteAll(withStacks), ", "))
	}
	switch o.Mode {
	case StacksRecorded:
		switch {
		case cols.user >= 0 && cols.kernel >= 0:
			o.Mode = StacksBoth
		case cols.user >= 0:
			o.Mode = StacksUser
		default:
			o.Mode = StacksKernel
		}
	case StacksUser, StacksBoth:
		if cols.user < 0 {
			return 0, cols, usage.Errorf("probe %q recorded no user stack (ustack): use --kernel", p.Name)
		}
	}
	if (o.Mode == StacksKernel || o.Mode == StacksBoth) && cols.kernel < 0 {
		return 0, cols, usage.Errorf("probe %q recorded no kernel stack (kstack): use --user", p.Name)
	}
	if o.Mode == StacksKernel {
		cols.user = -1
	}
	if o.Mode == StacksUser {
		cols.kernel = -1
	}
	return pi, cols, nil
}

func quoteAll(s []string) []string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = strconv.Quote(v)
	}
	return q
}

// byKey returns the function that gives an event's By value.
func byKey(c *Capture, pi int, by string) (func(b *format.Batch, i int) string, error) {
	switch by {
	case "":
		return nil, nil
	case "comm":
		return func(b *format.Batch, i int) string { return b.Comm(i) }, nil
	case "pid":
		return func(b *format.Batch, i int) string { return strconv.FormatUint(uint64(b.PID[i]), 10) }, nil
	case "tid":
		return func(b *format.Batch, i int) string { return strconv.FormatUint(uint64(b.TID[i]), 10) }, nil
	}
	p := &c.Meta().Probes[pi]
	fi := p.Field(by)
	if fi < 0 || p.Fields[fi].Type.IsStack() {
		return nil, usage.Errorf("--by %q: want comm, pid, tid or a field of probe %q", by, p.Name)
	}
	ci := c.Column(p.Fields[fi].Column)
	if p.Fields[fi].Type == format.String {
		return func(b *format.Batch, i int) string { return b.Col(ci).Str(i) }, nil
	}
	return func(b *format.Batch, i int) string { return strconv.FormatInt(b.Col(ci).Int(i), 10) }, nil
}

// stackKey is one stack of one process (a user stack's addresses mean
// something only in its process) with its By value.
type stackKey struct {
	user, kernel uint64
	pid          uint32
	by           string
	// With StacksOptions.Samples, the thread as well.
	tid  uint32
	comm string
}

// stackAgg counts events and weights by stack, then folds them.
type stackAgg struct {
	res  *StackCounts
	sym  *symbolize.Symbolizer
	opts *StacksOptions
	seen map[stackKey]*stackSeen
	// The stack last added: a thread's events come in runs, often of one
	// stack, and the map lookup was most of the cost of an event.
	lastKey stackKey
	last    *stackSeen
	comms   map[string]string                   // with Samples: the comms seen, interned
	by      func(b *format.Batch, i int) string // the By key, nil without By
}

// stackSeen is what stackAgg holds of one stack.
type stackSeen struct {
	when   int64 // a time the stack was seen, for the mappings of then
	value  uint64
	events uint64
}

func newStackAgg(c *Capture, o *StacksOptions, pi int, unit string) (*stackAgg, error) {
	by, err := byKey(c, pi, o.By)
	if err != nil {
		return nil, err
	}
	sym, err := c.symbolizer()
	if err != nil {
		return nil, err
	}
	return &stackAgg{by: by,
		res:  &StackCounts{Probe: c.Meta().Probes[pi].Name, Mode: o.Mode, Unit: unit, Unresolved: map[string]uint64{}},
		sym:  sym,
		opts: o, seen: map[stackKey]*stackSeen{}, comms: map[string]string{},
	}, nil
}

func (a *stackAgg) add(k stackKey, t int64, v uint64) {
	if k.user == 0 && k.kernel == 0 {
		a.res.NoStack++
		return
	}
	s := a.last
	if s == nil || k != a.lastKey {
		if s = a.seen[k]; s == nil {
			s = &stackSeen{when: t}
			a.seen[k] = s
		}
		a.lastKey, a.last = k, s
	}
	s.value = format.AddCount(s.value, v)
	s.events++
	a.res.Events++
}

// addSpan counts the events of probe in rows [lo, hi) of b, as add with
// key does, in a loop of its own where neither By nor Samples adds to the
// key: an event's key is its stacks and its process, and events of one
// stack come in runs, which cost a comparison each. Without b's times
// (Symbolizer.Timeless) a stack is first seen at time 0.
func (a *stackAgg) addSpan(b *format.Batch, lo, hi int, probe uint16, cols stackCols) {
	var user, kernel *format.IntColumn
	if cols.user >= 0 {
		user = b.Col(cols.user).Ints()
	}
	if cols.kernel >= 0 {
		kernel = b.Col(cols.kernel).Ints()
	}
	for i, p := range b.Probe[lo:hi] {
		if p != probe {
			continue
		}
		var k stackKey
		if user != nil {
			k.user, k.pid = uint64(user.Int(lo+i)), b.PID[lo+i]
		}
		if kernel != nil {
			k.kernel = uint64(kernel.Int(lo + i))
		}
		if a.last != nil && k.user == a.lastKey.user && k.kernel == a.lastKey.kernel && k.pid == a.lastKey.pid && k.user|k.kernel != 0 {
			a.last.value = format.AddCount(a.last.value, 1)
			a.last.events++
			a.res.Events++
			continue
		}
		var t int64
		if b.Time != nil {
			t = b.Time[lo+i]
		}
		a.add(k, t, 1)
	}
}

// key returns the stack key of event row i of b: its stacks of cols, its
// By value and, with Samples, its thread.
func (a *stackAgg) key(b *format.Batch, i int, cols stackCols) stackKey {
	var k stackKey
	if cols.user >= 0 {
		k.user, k.pid = uint64(b.Col(cols.user).Int(i)), b.PID[i]
	}
	if cols.kernel >= 0 {
		k.kernel = uint64(b.Col(cols.kernel).Int(i))
	}
	if a.by != nil {
		k.by = a.by(b, i)
	}
	if a.opts.Samples {
		k.pid, k.tid, k.comm = b.PID[i], b.TID[i], b.Comm(i)
		if k.comm == a.lastKey.comm {
			k.comm = a.lastKey.comm
		} else if c, ok := a.comms[k.comm]; ok {
			k.comm = c
		} else {
			// A map key outlives the batch.
			k.comm = strings.Clone(k.comm)
			a.comms[k.comm] = k.comm
		}
	}
	return k
}

// columns are the columns key reads besides the stacks and By's.
func (a *stackAgg) columns() []int {
	if a.opts.Samples {
		return []int{format.ColPID, format.ColTID, format.ColComm}
	}
	return nil
}

// fold symbolizes every stack, root first (user frames, then kernel
// frames, marked "_[k]" when both are shown, as stackcollapse-perf.pl
// does), and merges the stacks whose frames read the same.
func (a *stackAgg) fold() *StackCounts {
	merged := map[string]*FoldedStack{}
	// In the order of their keys, not the map's: Samples (a pprof
	// export's samples, and so its location and mapping ids) come out
	// the same from run to run.
	keys := make([]stackKey, 0, len(a.seen))
	for k := range a.seen {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y stackKey) int {
		return cmp.Or(cmp.Compare(x.pid, y.pid), cmp.Compare(x.tid, y.tid), strings.Compare(x.comm, y.comm),
			strings.Compare(x.by, y.by), cmp.Compare(x.user, y.user), cmp.Compare(x.kernel, y.kernel))
	})
	for _, k := range keys {
		s := a.seen[k]
		v := s.value
		var frames []string
		if k.by != "" {
			frames = append(frames, k.by)
		}
		missing := false
		var sample StackSample
		add := func(id uint64, kernel bool) {
			if id == 0 {
				missing = true
				return
			}
			fs, ok := a.sym.Frames(k.pid, s.when, id)
			if !ok {
				missing = true
				return
			}
			if kernel {
				sample.Kernel = fs
			} else {
				sample.User = fs
			}
			for i := len(fs) - 1; i >= 0; i-- {
				f := fs[i]
				if !f.Resolved {
					a.res.Unresolved[f.Reason]++
				}
				name := f.Name
				switch {
				case a.opts.Offsets && f.Resolved:
					name += fmt.Sprintf("+%#x", f.Offset)
				case a.opts.BuildIDs && !f.Resolved && f.Object != "" && f.BuildID != "":
					name = fmt.Sprintf("[%s@%s+%#x]", path.Base(f.Object), f.BuildID, f.Offset)
				}
				if kernel && a.opts.Mode == StacksBoth {
					name += "_[k]"
				}
				frames = append(frames, name)
			}
		}
		if a.opts.Mode != StacksKernel {
			add(k.user, false)
		}
		if a.opts.Mode != StacksUser {
			add(k.kernel, true)
		}
		if missing && len(frames) == 0 {
			a.res.NoStack += s.events
			a.res.Events -= s.events
			continue
		}
		if a.opts.Samples {
			sample.By, sample.PID, sample.TID, sample.Comm = k.by, k.pid, k.tid, k.comm
			sample.Events, sample.Value = s.events, v
			a.res.Samples = append(a.res.Samples, sample)
		}
		if !missing && len(frames) == boolInt(k.by != "") {
			// Stacks of no frames: a profile sample in user mode has no
			// kernel stack; syscall tracepoints have none before 6.x
			// (their perf handler passes the user registers).
			frames = append(frames, EmptyStackFrame)
			a.res.Empty = format.AddCount(a.res.Empty, v)
		}
		line := strings.Join(frames, ";")
		fs := merged[line]
		if fs == nil {
			fs = &FoldedStack{Frames: frames}
			merged[line] = fs
		}
		fs.Value = format.AddCount(fs.Value, v)
		a.res.Total = format.AddCount(a.res.Total, v)
	}
	// In the order of their lines, joined once (a comparison that joined
	// them cost a join per comparison of 1,024-frame stacks).
	lines := make([]string, 0, len(merged))
	for line := range merged {
		lines = append(lines, line)
	}
	sort.Strings(lines)
	for _, line := range lines {
		a.res.Stacks = append(a.res.Stacks, *merged[line])
	}
	return a.res
}

// Stacks counts the events of a probe by stack, as BCC's stackcount and
// profile and bpftrace's @[ustack] = count() do, symbolized from the
// capture alone.
func Stacks(c *Capture, o StacksOptions) (*StackCounts, *Pass, error) {
	pi, cols, err := stackProbe(c, &o)
	if err != nil {
		return nil, nil, err
	}
	agg, err := newStackAgg(c, &o, pi, "events")
	if err != nil {
		return nil, nil, err
	}
	probe := uint16(pi)
	need := slices.Concat(cols.columns(), byFieldColumns(c, pi, o.By), agg.columns(), []int{format.ColTime})
	var p *Pass
	if c.SpansWhere(&o.Rows) && agg.by == nil && !o.Samples {
		if agg.sym.Timeless() {
			// The stacks read the same whenever they were taken: the
			// times, most of the bytes of a capture, are not decoded.
			need = need[:len(need)-1]
		}
		// A row the filter leaves out is of no probe: addSpan passes it.
		p, err = c.ScanSpansWhere(need, &o.Rows, func(b *format.Batch, lo, hi int) error {
			agg.addSpan(b, lo, hi, probe, cols)
			return nil
		})
	} else {
		p, err = c.ScanColumns(need, &o.Rows, func(b *format.Batch, i int) {
			if b.Probe[i] != probe {
				return
			}
			agg.add(agg.key(b, i, cols), b.Time[i], 1)
		})
	}
	if err != nil {
		return nil, p, err
	}
	return agg.fold(), p, nil
}

// WriteFolded writes one line per stack, as FlameGraph's stackcollapse
// scripts do: the frames root first, separated by ';', a space and the
// value. Frame names are escaped for the terminal; a ';' in a name (C++
// templates may hold none, but a hostile capture may) becomes ':'.
func (r *StackCounts) WriteFolded(w io.Writer) error {
	for _, s := range r.Stacks {
		names := make([]string, len(s.Frames))
		for i, f := range s.Frames {
			names[i] = strings.ReplaceAll(textsafe.Escape(f), ";", ":")
		}
		if _, err := fmt.Fprintf(w, "%s %d\n", strings.Join(names, ";"), s.Value); err != nil {
			return err
		}
	}
	return nil
}

// WriteText writes stackcount's view: each stack innermost frame first,
// one frame a line, then its count (or time), the most frequent last.
func (r *StackCounts) WriteText(w io.Writer) error {
	stacks := append([]FoldedStack(nil), r.Stacks...)
	sort.SliceStable(stacks, func(i, j int) bool { return stacks[i].Value < stacks[j].Value })
	for _, s := range stacks {
		for i := len(s.Frames) - 1; i >= 0; i-- {
			if _, err := fmt.Fprintf(w, "  %s\n", textsafe.Escape(s.Frames[i])); err != nil {
				return err
			}
		}
		v := strconv.FormatUint(s.Value, 10)
		if r.Unit == "ns" {
			v = fmt.Sprintf("%d us", s.Value/1000)
		}
		if _, err := fmt.Fprintf(w, "    %s\n\n", v); err != nil {
			return err
		}
	}
	return nil
}

// Notes writes what a reader of the stacks should know: events without a
// stack, and frames that did not resolve, by reason.
func (r *StackCounts) Notes(w io.Writer) {
	if r.SwitchesKept != "" {
		fmt.Fprintf(w, "WARNING: off-CPU times are too low: the capture kept only the sched_switch events of %s, and a thread's switch-in is the event of the thread it replaces; record system-wide and pick threads with --pid or --comm here\n",
			textsafe.Escape(r.SwitchesKept))
	}
	if r.SwitchInsMissing > 0 {
		fmt.Fprintf(w, "note: %s of the picked threads' switch-outs followed another with no switch-in between (lost events, or a switch the kernel ran no program for); the off-CPU time each switch-in would have ended is left out\n",
			humanfmt.Commas(r.SwitchInsMissing))
	}
	if r.NoStack > 0 {
		fmt.Fprintf(w, "note: %s events of %s have no stack (the ring had no room for it, or the capture's stack table lacks it)\n",
			humanfmt.Commas(r.NoStack), textsafe.Escape(r.Probe))
	}
	if r.Empty > 0 {
		what := "events"
		if r.Unit == "ns" {
			what = "ns off CPU"
		}
		fmt.Fprintf(w, "note: %s %s of %s are on stacks of no frames, shown as %s (a sample taken in user mode has no kernel stack; syscall tracepoints give none on kernels whose perf handler passes the user registers, as 5.10 and 6.1 do, not 6.12)\n",
			humanfmt.Commas(r.Empty), what, textsafe.Escape(r.Probe), EmptyStackFrame)
	}
	reasons := make([]string, 0, len(r.Unresolved))
	for k := range r.Unresolved {
		reasons = append(reasons, k)
	}
	sort.Slice(reasons, func(i, j int) bool { return r.Unresolved[reasons[i]] > r.Unresolved[reasons[j]] })
	for i, k := range reasons {
		if i == 5 {
			fmt.Fprintf(w, "note: and %d more reasons\n", len(reasons)-5)
			break
		}
		fmt.Fprintf(w, "note: %d frames shown as [OBJECT+0xOFFSET] or [0xADDRESS]: %s\n", r.Unresolved[k], textsafe.Escape(k))
	}
}

// OffCPU sums the time threads spent off CPU by their stack when they
// left it, as BCC's offcputime does, from a sched_switch probe with
// prev_pid, next_pid and stacks. A sched_switch event runs in the thread
// leaving the CPU (its tid is prev_pid, its stacks are that thread's);
// the thread's time off CPU ends at the next event whose next_pid is its
// tid, which runs in another thread. The row filter (o.Rows) picks the
// threads whose time is summed (by the switch-out's pid, tid, comm and
// time), not the events read: every switch-in is needed. Values are
// nanoseconds. A
// capture that kept some threads' events only (-p, -c, a filter on the
// probe) lacks the switch-ins that other threads' events carry:
// SwitchesKept then says so, and Notes warns.
func OffCPU(c *Capture, o StacksOptions) (*StackCounts, *Pass, error) {
	pi, cols, err := stackProbe(c, &o)
	if err != nil {
		return nil, nil, err
	}
	p := &c.Meta().Probes[pi]
	next, prev := p.Field("next_pid"), p.Field("prev_pid")
	if next < 0 || prev < 0 || !p.Fields[next].Type.IsInt() {
		return nil, nil, usage.Errorf("off-CPU time needs a sched_switch probe with prev_pid and next_pid, e.g. t:sched:sched_switch(prev_pid,next_pid,kstack,ustack); probe %q has no such fields", p.Name)
	}
	nextCol := c.Column(p.Fields[next].Column)
	var kept string // why switch-ins may be missing
	switch m := c.Meta(); {
	case m.Extra["command"] != "":
		kept = "the -c command's processes"
	case m.Extra["pid"] != "":
		kept = "the -p process"
	case p.Filter != "":
		kept = "the events its filter passed (" + p.Filter + ")"
	case p.MaxRate > 0:
		kept = "the events its --max-rate of " + humanfmt.Rate(p.MaxRate) + "/s let through"
	}
	agg, err := newStackAgg(c, &o, pi, "ns")
	if err != nil {
		return nil, nil, err
	}
	type out struct {
		t int64
		k stackKey
	}
	away := map[uint32]out{} // by tid: the switch-out not yet matched
	var missing uint64
	rows := o.Rows
	start := c.Meta().StartBoot
	probe := uint16(pi)
	need := slices.Concat(cols.columns(), byFieldColumns(c, pi, o.By), agg.columns(), []int{nextCol, format.ColTID, format.ColTime})
	pass, err := c.ScanColumns(append(need, rows.columns()...), &RowFilter{}, func(b *format.Batch, i int) {
		if b.Probe[i] != probe {
			return
		}
		t := b.Time[i]
		if in := uint32(b.Col(nextCol).Int(i)); in != 0 {
			if w, ok := away[in]; ok {
				delete(away, in)
				if t > w.t {
					agg.add(w.k, w.t, uint64(t-w.t))
				}
			}
		}
		tid := b.TID[i]
		if tid == 0 || !rows.Match(b, i, start) {
			return
		}
		k := agg.key(b, i, cols)
		if _, ok := away[tid]; ok {
			missing++
		}
		away[tid] = out{t, k}
	})
	if err != nil {
		return nil, pass, err
	}
	r := agg.fold()
	r.SwitchesKept, r.SwitchInsMissing = kept, missing
	return r, pass, nil
}

// StackDiff is one stack of a comparison: its value in the base profile
// and in the new one.
type StackDiff struct {
	Frames      []string
	Base, Value uint64
}

// DiffStacks pairs the stacks of a base profile and a new one, as
// FlameGraph's difffolded.pl does: every stack of either, with its value
// in each (0 where it is absent). With normalize, the base values are
// scaled to the new profile's total (difffolded.pl -n), so that profiles
// of different lengths compare.
func DiffStacks(base, cur *StackCounts, normalize bool) []StackDiff {
	byLine := map[string]*StackDiff{}
	var order []string
	add := func(fs []FoldedStack, isBase bool) {
		for _, s := range fs {
			line := strings.Join(s.Frames, ";")
			d := byLine[line]
			if d == nil {
				d = &StackDiff{Frames: s.Frames}
				byLine[line] = d
				order = append(order, line)
			}
			if isBase {
				d.Base = format.AddCount(d.Base, s.Value)
			} else {
				d.Value = format.AddCount(d.Value, s.Value)
			}
		}
	}
	add(base.Stacks, true)
	add(cur.Stacks, false)
	sort.Strings(order)
	out := make([]StackDiff, len(order))
	for i, line := range order {
		out[i] = *byLine[line]
		if normalize && base.Total > 0 {
			out[i].Base = uint64(float64(out[i].Base)*float64(cur.Total)/float64(base.Total) + 0.5)
		}
	}
	return out
}

// WriteFoldedDiff writes difffolded.pl's output: the folded stack, then
// its value in the base profile and in the new one.
func WriteFoldedDiff(w io.Writer, d []StackDiff) error {
	for _, s := range d {
		names := make([]string, len(s.Frames))
		for i, f := range s.Frames {
			names[i] = strings.ReplaceAll(textsafe.Escape(f), ";", ":")
		}
		if _, err := fmt.Fprintf(w, "%s %d %d\n", strings.Join(names, ";"), s.Base, s.Value); err != nil {
			return err
		}
	}
	return nil
}
