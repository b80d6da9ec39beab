// Package replay answers questions about a capture offline: histograms,
// per-request totals, latencies, comparisons, event listings and facts.
//
// A Capture is opened once and read in passes, each from its first batch.
// A pass streams the file batch by batch, so memory does not grow with the
// capture, and returns what it found besides the events it handed on: the
// loss records it passed, implausible times, and how far a file without
// footer could be read (Pass). Several analyses can share one pass: each
// has a value that is fed the events (Latencies, RequestTotals,
// Comparison), and the verb functions (Latency, Requests, Compare...) run
// one alone.
//
// Every pass goes one way (ScanColumns, WalkColumns; Scan and Walk for
// every column): it decodes only the columns its analyses name, and other
// CPUs decode the batches ahead of it, handed on in file order, so that
// an analysis that keeps state from batch to batch (a thread's open
// calls) needs no merging, and one that only adds (hist, compare) takes a
// stretch of rows between loss records at a time. Decoding is the cost: a
// column is zstd-decoded once per pass that names it. BPFTAPE_DECODE_ALL
// decodes every column of every pass instead, with the same results.
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
	"github.com/bpftape/bpftape/probespec"
)

// RowFilter selects the rows (events) an analysis reads by process,
// thread, command and time window: the --pid, --tid, --comm, --from and --to
// of the analysis verbs. Empty lists match everything; From and To are
// offsets from the capture start. (A probe's own filter, which the kernel
// applied while recording, is probespec's.)
type RowFilter struct {
	PIDs  []uint32
	TIDs  []uint32
	Comms []string
	From  time.Duration
	To    time.Duration // 0: no end
}

// Match reports whether event row i of b is selected; startBoot is
// the capture's Meta.StartBoot, from which From and To are measured.
func (f *RowFilter) Match(b *format.Batch, i int, startBoot int64) bool {
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

// InWindow reports whether boot-clock time t is within f's From and To;
// it selects loss records, which have no process.
func (f *RowFilter) InWindow(t, startBoot int64) bool {
	off := time.Duration(t - startBoot)
	return off >= f.From && (f.To == 0 || off < f.To)
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

// Cast reinterprets a value as another integer type, as a C cast would:
// "s32" keeps the low 32 bits and sign-extends them.
type Cast struct {
	size   int
	signed bool
}

// none reports whether c leaves every value as it is.
func (c Cast) none() bool { return c.size == 0 || c.size == 64 }

// ParseCast parses s8, u8, s16, u16, s32, u32, s64 or u64, the names
// probespec.ParseType takes; "" is no cast.
func ParseCast(s string) (Cast, error) {
	if s == "" {
		return Cast{}, nil
	}
	t, err := probespec.ParseType(s)
	if err != nil {
		return Cast{}, fmt.Errorf("cast %q: want %s", s, probespec.FieldTypeNames)
	}
	return Cast{size: 8 * t.Size(), signed: t.Signed()}, nil
}

// Apply casts v.
func (c Cast) Apply(v int64) int64 {
	if c.none() {
		return v
	}
	shift := 64 - c.size
	if c.signed {
		return v << shift >> shift
	}
	return int64(uint64(v) << shift >> shift)
}
