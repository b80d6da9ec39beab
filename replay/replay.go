// Package replay answers questions about a capture offline: histograms,
// per-request totals, latencies, comparisons, event listings and facts.
// Every analysis streams the file batch by batch, so memory does not grow
// with the capture, and tallies the loss records it passes.
package replay

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/textsafe"
	"github.com/bpftape/bpftape/internal/usage"
)

// Filter selects events by process, thread, command and time window.
// Empty lists match everything; From and To are offsets from the capture start.
type Filter struct {
	PIDs  []uint32
	TIDs  []uint32
	Comms []string
	From  time.Duration
	To    time.Duration // 0: no end
}

// Match reports whether event row i of b passes the filter; startBoot is
// the capture's Meta.StartBoot, from which From and To are measured.
func (f *Filter) Match(b *format.Batch, i int, startBoot int64) bool {
	if len(f.PIDs) > 0 && !contains(f.PIDs, b.PID[i]) {
		return false
	}
	if len(f.TIDs) > 0 && !contains(f.TIDs, b.TID[i]) {
		return false
	}
	if len(f.Comms) > 0 {
		c := b.Comm(i)
		ok := false
		for _, want := range f.Comms {
			ok = ok || c == want
		}
		if !ok {
			return false
		}
	}
	if f.From != 0 || f.To != 0 {
		off := time.Duration(b.Time[i] - startBoot)
		if off < f.From || (f.To != 0 && off >= f.To) {
			return false
		}
	}
	return true
}

func contains(s []uint32, v uint32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Losses tallies the loss records of a capture: they are data, and every
// analysis reports them so that an undercounted histogram is never silent.
type Losses struct {
	Total   uint64            `json:"total"`
	ByProbe map[string]uint64 `json:"by_probe,omitempty"`
	ByCPU   map[uint16]uint64 `json:"by_cpu,omitempty"`
	First   int64             `json:"first_ns,omitempty"` // boot-clock time of the first loss record
	Last    int64             `json:"last_ns,omitempty"`
}

// Add tallies a loss record of n events of probe on cpu at time t. Counts
// saturate (format.AddCount): a forged capture cannot wrap them to 0.
func (l *Losses) Add(probe string, cpu uint16, t int64, n uint64) {
	if l.ByProbe == nil {
		l.ByProbe = map[string]uint64{}
		l.ByCPU = map[uint16]uint64{}
		l.First, l.Last = t, t
	}
	l.Total = format.AddCount(l.Total, n)
	l.ByProbe[probe] = format.AddCount(l.ByProbe[probe], n)
	l.ByCPU[cpu] = format.AddCount(l.ByCPU[cpu], n)
	l.First = min(l.First, t)
	l.Last = max(l.Last, t)
}

// Warn prints a loss warning for the capture name, if it lost anything.
func (l *Losses) Warn(w io.Writer, name string, m *format.Meta) {
	if l.Total == 0 {
		return
	}
	var parts []string
	for _, p := range sortedKeys(l.ByProbe) {
		parts = append(parts, fmt.Sprintf("%s %d", textsafe.Escape(p), l.ByProbe[p]))
	}
	var cpus []string
	for _, c := range sortedKeys(l.ByCPU) {
		cpus = append(cpus, fmt.Sprintf("cpu%d %d", c, l.ByCPU[c]))
	}
	total := fmt.Sprint(l.Total)
	if l.Total == math.MaxUint64 {
		total = "at least " + total + " (the capture's loss counts overflow a 64-bit sum: forged or damaged?)"
	}
	fmt.Fprintf(w, "WARNING: %s: %s events were lost (%s; %s) between %s and %s: counts from these probes are too low.\n",
		name, total, strings.Join(parts, ", "), strings.Join(cpus, ", "),
		offset(l.First, m), offset(l.Last, m))
}

func offset(t int64, m *format.Meta) string {
	return fmt.Sprintf("+%.3fs", float64(t-m.StartBoot)/1e9)
}

func sortedKeys[K string | uint16 | uint32 | int64, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// Capture is an open capture being analysed.
type Capture struct {
	Name   string
	R      *format.Reader
	Losses Losses
	// Times tallies implausible event times, in the verbs that read every
	// event's time (Scan).
	Times TimeAnomalies
	// unmatched says what a filter that matched no event left out (see
	// Notes).
	unmatched unmatched
	// Events counts the event rows read (loss records excluded), before filtering.
	Events uint64

	noProject bool // read with Scan even where a projection would do
	workers   int  // goroutines of a projected read; 0: one per CPU
	// projected is set when an analysis read the capture by projection
	// (whose Reader then read no batch), with what it found of a footerless one.
	projected      bool
	projBatches    int
	projRecoverErr error
}

// Open opens a capture for analysis.
func Open(path string) (*Capture, error) {
	r, err := format.Open(path)
	if err != nil {
		return nil, err
	}
	return &Capture{Name: path, R: r}, nil
}

// Meta is the capture's metadata.
func (c *Capture) Meta() *format.Meta { return c.R.Meta }

// EndWall is the wall-clock time at which the capture stopped recording:
// when its window closed, or where that is not recorded, when it started.
// JSON that BCC stamps with the time it prints gets this time instead, so
// that a replay says when the data is from.
func (c *Capture) EndWall() time.Time {
	m := c.Meta()
	if m.Window != nil && m.Window.End != 0 {
		return m.WallTime(m.Window.End)
	}
	return m.StartWall
}

// Close closes the capture.
func (c *Capture) Close() error { return c.R.Close() }

// Notes prints what the reader of an analysis must know: losses and recovery.
func (c *Capture) Notes(w io.Writer) {
	if c.R.Recovered {
		batches, cut := c.R.Batches(), c.R.RecoverErr
		if c.projected {
			batches, cut = c.projBatches, c.projRecoverErr
		}
		fmt.Fprintf(w, "NOTE: %s has no footer (was the recorder killed?): read its %d complete batches", c.Name, batches)
		if cut != nil {
			fmt.Fprintf(w, ", dropped the %v", cut)
		}
		fmt.Fprintf(w, "; 'bpftape repair' writes a standard file.\n")
	}
	c.Losses.Warn(w, c.Name, c.R.Meta)
	c.Times.Warn(w, c.Name)
	c.unmatched.note(w, c.Name)
}

// unmatched gathers, while a filter has matched nothing, a few of the
// values the capture has instead, for the note that says so: a filter that
// selects nothing otherwise prints an empty result and exits 0.
type unmatched struct {
	filtered, matched bool
	pids              map[uint32]bool
	comms             map[string]bool
}

const unmatchedValues = 8

func (u *unmatched) saw(f *Filter, b *format.Batch, i int) {
	u.filtered = true
	if u.matched {
		return
	}
	if u.pids == nil {
		u.pids, u.comms = map[uint32]bool{}, map[string]bool{}
	}
	if len(f.PIDs) > 0 && len(u.pids) < unmatchedValues {
		u.pids[b.PID[i]] = true
	}
	if len(f.Comms) > 0 && len(u.comms) < unmatchedValues {
		u.comms[b.Comm(i)] = true
	}
}

func (u *unmatched) note(w io.Writer, name string) {
	if !u.filtered || u.matched {
		return
	}
	var has []string
	if len(u.pids) > 0 {
		var ps []string
		for _, p := range sortedKeys(u.pids) {
			ps = append(ps, fmt.Sprint(p))
		}
		has = append(has, "pids "+strings.Join(ps, ", "))
	}
	if len(u.comms) > 0 {
		has = append(has, "comms "+strings.Join(textsafe.Strings(sortedKeys(u.comms)), ", "))
	}
	msg := ""
	if len(has) > 0 {
		msg = " (it has " + strings.Join(has, "; ") + ")"
	}
	fmt.Fprintf(w, "NOTE: %s: no event matches the --pid, --tid, --comm, --from and --to filters%s.\n", name, msg)
}

// Scan calls fn for every event row that passes f, and tallies loss records.
func (c *Capture) Scan(f *Filter, fn func(b *format.Batch, i int)) error {
	m := c.R.Meta
	for c.R.Next() {
		b := c.R.Batch()
		for i := 0; i < b.Len; i++ {
			if n, ok := b.Lost(i); ok {
				c.Losses.Add(m.Probes[b.Probe[i]].Name, b.CPU[i], b.Time[i], n)
				continue
			}
			c.Events++
			c.Times.Check(b.Time[i], m)
			if f == nil || f.Match(b, i, m.StartBoot) {
				c.unmatched.matched = true
				fn(b, i)
			} else {
				c.unmatched.saw(f, b, i)
			}
		}
	}
	if err := c.R.Err(); err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	return nil
}

// Ref names one field of one probe, resolved against a capture.
type Ref struct {
	Probe string
	Field string
	probe uint16
	col   int
	typ   format.Type
}

// Resolve finds probe and field in the capture, with the names that do exist
// in the error when they do not.
func (c *Capture) Resolve(probe, field string) (Ref, error) {
	m := c.R.Meta
	pi, p := m.Probe(probe)
	if p == nil {
		return Ref{}, usage.Errorf("%s: no probe %q; the capture has: %s", c.Name, probe, strings.Join(m.ProbeNames(), ", "))
	}
	fi := p.Field(field)
	if fi < 0 {
		var names []string
		for _, f := range p.Fields {
			names = append(names, f.Name)
		}
		return Ref{}, usage.Errorf("%s: probe %s has no field %q; its fields: %s", c.Name, probe, field, strings.Join(names, ", "))
	}
	f := p.Fields[fi]
	return Ref{Probe: probe, Field: field, probe: uint16(pi), col: c.R.Column(f.Column), typ: f.Type}, nil
}

// ResolveProbe finds a probe by name.
func (c *Capture) ResolveProbe(probe string) (uint16, error) {
	pi, p := c.R.Meta.Probe(probe)
	if p == nil {
		return 0, usage.Errorf("%s: no probe %q; the capture has: %s", c.Name, probe, strings.Join(c.R.Meta.ProbeNames(), ", "))
	}
	return uint16(pi), nil
}

// Int reads the referenced integer field of row i; ok is false when row i
// is another probe's event.
func (r *Ref) Int(b *format.Batch, i int) (v int64, ok bool) {
	if b.Probe[i] != r.probe {
		return 0, false
	}
	return b.Col(r.col).Int(i), true
}

// IsInt reports whether the field is an integer.
func (r *Ref) IsInt() bool { return r.typ.IsInt() }

// Cast reinterprets a value as another integer type, as a C cast would:
// "s32" keeps the low 32 bits and sign-extends them.
type Cast struct {
	size   int
	signed bool
}

// ParseCast parses s8, u8, s16, u16, s32, u32, s64 or u64; "" is no cast.
func ParseCast(s string) (Cast, error) {
	if s == "" {
		return Cast{}, nil
	}
	var c Cast
	if _, err := fmt.Sscanf(s[1:], "%d", &c.size); err != nil || (s[0] != 's' && s[0] != 'u') {
		return c, fmt.Errorf("cast %q: want s8, u8, s16, u16, s32, u32, s64 or u64", s)
	}
	c.signed = s[0] == 's'
	switch c.size {
	case 8, 16, 32, 64:
	default:
		return c, fmt.Errorf("cast %q: want s8, u8, s16, u16, s32, u32, s64 or u64", s)
	}
	return c, nil
}

// Apply casts v.
func (c Cast) Apply(v int64) int64 {
	if c.size == 0 || c.size == 64 {
		return v
	}
	shift := 64 - c.size
	if c.signed {
		return v << shift >> shift
	}
	return int64(uint64(v) << shift >> shift)
}
