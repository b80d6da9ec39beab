package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/humanfmt"
	"github.com/bpftape/bpftape/internal/textsafe"
	"github.com/bpftape/bpftape/probespec"
)

// InfoResult is what info reports about a capture.
type InfoResult struct {
	File        string            `json:"file"`
	Meta        *format.Meta      `json:"meta"`
	Events      uint64            `json:"events"`
	PerProbe    map[string]uint64 `json:"events_per_probe"`
	FirstNs     int64             `json:"first_event_ns,omitempty"`
	LastNs      int64             `json:"last_event_ns,omitempty"`
	Losses      Losses            `json:"losses"`
	Batches     int               `json:"batches"`
	FileBytes   int64             `json:"file_bytes"`
	RawBytes    int64             `json:"uncompressed_bytes"`
	Ratio       float64           `json:"compression_ratio"`
	BytesPerEvt float64           `json:"bytes_per_event"`
	Recovered   bool              `json:"recovered"`
	RecoverNote string            `json:"recover_note,omitempty"`
	Captured    string            `json:"captured"`
	// Stacks counts the stack table of a capture with stacks (a stack
	// field, or a table); nil for one without.
	Stacks *StackInfo `json:"stacks,omitempty"`
}

// StackInfo counts what a capture's stack table (format.StackTable) holds.
type StackInfo struct {
	Unique  int `json:"unique"` // stacks, each once
	User    int `json:"user"`
	Kernel  int `json:"kernel"`
	Objects int `json:"objects"`
	Symbols int `json:"symbols"`
	// Processes is how many processes have mappings in the table;
	// Unmapped how many could not be read (their user frames do not
	// resolve: format.ProcessNote).
	Processes int `json:"processes_mapped"`
	Unmapped  int `json:"processes_unmapped"`
	// Error says why the table could not be read; the counts are then 0.
	Error string `json:"error,omitempty"`
}

// hasStacks reports whether a probe of m records a stack.
func hasStacks(m *format.Meta) bool {
	return slices.ContainsFunc(m.Probes, func(p format.Probe) bool { return probeHasStacks(&p) })
}

// probeHasStacks reports whether probe p records a stack.
func probeHasStacks(p *format.Probe) bool {
	return slices.ContainsFunc(p.Fields, func(f format.Field) bool { return f.Type.IsStack() })
}

// stackInfo counts c's stack table; nil for a capture without stacks.
func stackInfo(c *Capture) *StackInfo {
	has := hasStacks(c.Meta())
	t, err := c.StackTable()
	if err != nil {
		return &StackInfo{Error: err.Error()}
	}
	if !has && t.Empty() {
		return nil
	}
	si := &StackInfo{Unique: len(t.Stacks), Objects: len(t.Objects), Symbols: len(t.Symbols), Unmapped: len(t.Processes)}
	for _, st := range t.Stacks {
		if st.Kernel {
			si.Kernel++
		} else {
			si.User++
		}
	}
	pids := map[uint32]bool{}
	for _, m := range t.Maps {
		pids[m.PID] = true
	}
	si.Processes = len(pids)
	return si
}

// String is info's line: "1 unique (1 user, 0 kernel), 2 objects, 5
// symbols, 1 process mapped".
func (si *StackInfo) String() string {
	if si.Error != "" {
		return "unreadable: " + si.Error
	}
	s := fmt.Sprintf("%d unique (%d user, %d kernel), %s, %s, %s mapped", si.Unique, si.User, si.Kernel,
		humanfmt.Plural(uint64(si.Objects), "object", "objects"), humanfmt.Plural(uint64(si.Symbols), "symbol", "symbols"),
		humanfmt.Plural(uint64(si.Processes), "process", "processes"))
	if si.Unmapped > 0 {
		s += fmt.Sprintf(", %s without mappings", humanfmt.Plural(uint64(si.Unmapped), "process", "processes"))
	}
	return s
}

// Info prints what the capture is and what it holds. The counts, times,
// losses and sizes of a capture whose footer has them (format.Counts,
// checked by format.Reader.Counts) are the footer's, and no batch is read;
// those of a capture without (a recovered file, one written before they
// were, or one whose counts do not hold together: forged or damaged),
// or with times a scan would warn about (footerCounts), come from reading
// every batch. Both print the same, so info does not say which it did.
func Info(c *Capture, asJSON bool, out io.Writer) (*InfoResult, *Pass, error) {
	m := c.Meta()
	res := &InfoResult{File: c.Name, Meta: m, PerProbe: map[string]uint64{}}
	counts := make([]uint64, len(m.Probes))
	first, last := int64(0), int64(0)
	if cn, p := footerCounts(c); cn != nil {
		for i := range cn.Probes {
			counts[i] = cn.Probes[i].Events
		}
		var stacks *StackInfo
		if cn.StackParts > 0 || hasStacks(m) {
			stacks = stackInfo(c) // a table that is not there reads as none
		}
		return info(c, res, counts, cn.First, cn.Last, p, stacks, asJSON, out)
	}
	p, err := c.Scan(nil, func(b *format.Batch, i int) {
		counts[b.Probe[i]]++
		t := b.Time[i]
		if first == 0 || t < first {
			first = t
		}
		last = max(last, t)
	})
	if err != nil {
		return nil, p, err
	}
	return info(c, res, counts, first, last, p, stackInfo(c), asJSON, out)
}

// snapshotLine says what took a flight recorder's snapshot, when, and of
// how long a ring.
func snapshotLine(m *format.Meta, why string) string {
	x := m.Extra
	s := "taken on " + why
	if t, err := strconv.ParseInt(x[format.ExtraFlightTime], 10, 64); err == nil && t > 0 {
		s += " at " + offset(t, m)
	}
	if ns, err := strconv.ParseInt(x[format.ExtraFlightLatency], 10, 64); err == nil && ns > 0 {
		s += fmt.Sprintf(" (the pair took %s)", time.Duration(ns))
	}
	if a := x[format.ExtraFlightAfter]; a != "" {
		s += ", with " + a + " after it"
	}
	if n := x[format.ExtraFlightSnapshot]; n != "" {
		s += "; snapshot " + n
	}
	if d := x[format.ExtraFlightWindow]; d != "" {
		s += " of a flight recorder keeping the last " + d
	}
	return s
}

// info fills in res from the counts of events by probe, the first and last
// event times, the Pass and the stack table's counts, and prints it.
func info(c *Capture, res *InfoResult, counts []uint64, first, last int64, p *Pass, stacks *StackInfo, asJSON bool, out io.Writer) (*InfoResult, *Pass, error) {
	m := c.Meta()
	for i, n := range counts {
		res.PerProbe[m.Probes[i].Name] = n
	}
	res.Events = p.Events
	res.FirstNs, res.LastNs = first, last
	res.Losses = p.Losses
	res.Batches = p.Batches
	res.FileBytes = c.Size()
	res.RawBytes = p.RawBytes
	if res.FileBytes > 0 {
		res.Ratio = float64(res.RawBytes) / float64(res.FileBytes)
	}
	if res.Events > 0 {
		res.BytesPerEvt = float64(res.FileBytes) / float64(res.Events)
	}
	res.Captured = Captured(m)
	res.Recovered = p.Recovered
	if p.RecoverErr != nil {
		res.RecoverNote = p.RecoverErr.Error()
	}
	res.Stacks = stacks
	if asJSON {
		return res, p, json.NewEncoder(out).Encode(res)
	}
	// Every string of the capture is escaped (package textsafe): the
	// metadata and probe table come from the file.
	w := func(k, f string, a ...any) {
		for i := range a {
			if s, ok := a[i].(string); ok {
				a[i] = textsafe.Escape(s)
			}
		}
		fmt.Fprintf(out, "%-13s "+f+"\n", append([]any{textsafe.Escape(k) + ":"}, a...)...)
	}
	w("file", "%s", c.Name)
	w("host", "%s", m.Host)
	w("kernel", "%s", m.Kernel)
	w("tool", "%s (capture format version %d)", m.Tool, m.SchemaVersion)
	fmt.Fprintf(out, "%-13s %s\n", "recorded by:", textsafe.ShellQuote(m.CommandLine)) // pasteable
	w("started", "%s", m.StartWall.Local().Format(time.RFC3339Nano))
	if win := m.Window; win != nil {
		if win.End >= win.Start && win.End != 0 {
			w("window", "%s to %s (%.3fs): every probe recording", offset(win.Start, m), offset(win.End, m), float64(win.End-win.Start)/1e9)
		} else {
			w("window", "from %s; its end is not recorded (a recorder killed before it finished the file, or a rotated part before the last)", offset(win.Start, m))
		}
	}
	if why := m.Extra[format.ExtraFlightTrigger]; why != "" {
		w("snapshot", "%s", snapshotLine(m, why))
	}
	if res.Events > 0 {
		w("events", "%d from %s to %s (%.3fs)", res.Events, offset(first, m), offset(last, m), float64(last-first)/1e9)
	} else {
		w("events", "0")
	}
	w("lost", "%d", res.Losses.Total)
	if n := filteredProbes(m); n > 0 {
		w("filtered", "a subset: %d of %d probes recorded only the events their filter passed (see below)", n, len(m.Probes))
	}
	if n := len(RateLimitedProbes(m)); n > 0 {
		w("rate-limited", "a subset: %d of %d probes recorded at most their --max-rate events a second (see below)", n, len(m.Probes))
	}
	w("captured", "%s", res.Captured)
	w("file size", "%d bytes, %s, %s, %s", res.FileBytes, humanfmt.Plural(uint64(res.Batches), "batch", "batches"),
		compressionText(m.Compression), sizeRatio(res))
	w("readers", "%s", readers(m.Compression))
	if res.Recovered {
		note := "complete batches recovered from a file without footer"
		if res.RecoverNote != "" {
			note += "; dropped " + res.RecoverNote
		}
		w("recovered", "%s", note)
	}
	if res.Stacks != nil {
		w("stacks", "%s", res.Stacks.String())
	}
	for _, k := range sortedKeys(m.Extra) {
		w(k, "%s", m.Extra[k])
	}
	width := len("PROBE")
	for _, p := range m.Probes {
		width = max(width, len(textsafe.Escape(p.Name)))
	}
	esc := textsafe.Escape
	fmt.Fprintf(out, "\n%-*s %-10s %10s %8s  %s\n", width, "PROBE", "KIND", "EVENTS", "LOST", "SPEC")
	for i, p := range m.Probes {
		fmt.Fprintf(out, "%-*s %-10s %10d %8d  %s\n", width, esc(p.Name), esc(p.Kind), counts[i], res.Losses.ByProbe[p.Name], esc(p.Spec))
		if p.Target != "" {
			bid := p.BuildID
			if bid == "" {
				bid = "none"
			}
			fmt.Fprintf(out, "%-*s target %s (build id %s)\n", width, "", esc(p.Target), esc(bid))
		}
		var fs []string
		for _, f := range p.Fields {
			fs = append(fs, esc(f.Name)+" "+f.Type.String())
		}
		if len(fs) > 0 {
			fmt.Fprintf(out, "%-*s fields %s\n", width, "", strings.Join(fs, ", "))
		}
		if params := probespec.Params(&p); params != nil {
			for i := range params {
				params[i] = esc(params[i])
			}
			fmt.Fprintf(out, "%-*s args   %s\n", width, "", ArgsNote(params))
		}
		if p.Filter != "" {
			fmt.Fprintf(out, "%-*s filter %s: %s\n", width, "", esc(p.Filter), filteredNote(m, &p))
		}
		if p.MaxRate > 0 {
			fmt.Fprintf(out, "%-*s rate   at most %s events/s (--max-rate): %s\n", width, "", humanfmt.Rate(p.MaxRate), rateLimitedNote(m, &p))
		}
		if p.RecorderSwitches > 0 {
			fmt.Fprintf(out, "%-*s own    %d switches of the recorder's own (between its threads and the idle task) left out in the kernel\n",
				width, "", p.RecorderSwitches)
		}
	}
	return res, p, nil
}

// filteredProbes counts the probes with a filter.
func filteredProbes(m *format.Meta) int {
	n := 0
	for _, p := range m.Probes {
		if p.Filter != "" {
			n++
		}
	}
	return n
}

// filteredNote says how many events a probe's filter rejected.
func filteredNote(m *format.Meta, p *format.Probe) string {
	if m.Window != nil && m.Window.End == 0 {
		return "how many events it rejected is not recorded (the file has no footer)"
	}
	return fmt.Sprintf("%d more events were filtered out in the kernel", p.Filtered)
}

// RateLimitedProbes lists the probes of m with a rate limit (record
// --max-rate), whose events are a subset.
func RateLimitedProbes(m *format.Meta) []*format.Probe {
	var ps []*format.Probe
	for i := range m.Probes {
		if m.Probes[i].MaxRate > 0 {
			ps = append(ps, &m.Probes[i])
		}
	}
	return ps
}

// footerless reports whether m is the metadata of a capture without its
// footer (the counts only the footer holds are missing).
func footerless(m *format.Meta) bool { return m.Window != nil && m.Window.End == 0 }

// rateLimitedNote says how many events a probe's rate limit rejected.
func rateLimitedNote(m *format.Meta, p *format.Probe) string {
	if footerless(m) {
		return "how many events it rejected is not recorded (the file has no footer)"
	}
	return fmt.Sprintf("%d more events were rate-limited in the kernel", p.RateLimited)
}

// readers says which readers other than bpftape open a capture of this
// compression as it is, and how the others get at it.
func readers(compression string) string {
	if compression == "none" {
		return "polars, pyarrow, Arrow C++, Go and JS as is; DuckDB and Spark through bpftape export -f parquet"
	}
	return "polars, pyarrow, Arrow C++ and Go as is; Arrow JS, which has no codecs, through bpftape export -f arrow --compress none; DuckDB and Spark through bpftape export -f parquet"
}

// compressionText names a capture's body compression for info's file
// size line: "zstd compression", or "uncompressed".
func compressionText(c string) string {
	if c == "" || c == string(format.None) {
		return "uncompressed"
	}
	return c + " compression"
}

// sizeRatio is info's bytes/event and how the file compares with the
// same events as uncompressed Arrow.
func sizeRatio(res *InfoResult) string {
	switch {
	case res.Events == 0 || res.RawBytes == 0:
		return "no events"
	case res.Ratio >= 1.05:
		return fmt.Sprintf("%.1f bytes/event, %.1fx smaller than uncompressed Arrow (%d bytes)", res.BytesPerEvt, res.Ratio, res.RawBytes)
	}
	// A few events: the schema, metadata and footer outweigh the rows.
	return fmt.Sprintf("%.1f bytes/event, no smaller than uncompressed Arrow (%d bytes)", res.BytesPerEvt, res.RawBytes)
}

// FooterCounts returns the counts of the capture's rows that its footer
// holds, checked (format.Reader.Counts), for the analyses that may take
// them instead of reading every batch; nil for a capture without footer
// or counts, for counts that do not hold together, for event times a
// read would warn about, and under DecodeAll, which answers nothing from
// the footer.
func (c *Capture) FooterCounts() *format.Counts {
	cn, _ := footerCounts(c)
	return cn
}

// footerCounts returns the counts of c's rows that its footer holds
// (format.Counts) and the Pass that reading every batch would return
// (format.Reader.Counts checked that they hold together), when info and
// count (per probe, without a row filter) may answer from them without
// reading a batch. It returns nil, and they read the batches, for a
// capture without footer or without counts, for counts that do not hold
// together (a forged or damaged footer: reading tells what the file
// holds), and for event times that the counts do not say all a scan would
// about: not after 0 (info's first time is the first nonzero one), or
// some of them before the capture started by more than the scan's slack
// (TimeAnomalies.Early, which needs every time).
func footerCounts(c *Capture) (*format.Counts, *Pass) {
	if c.Recovered() || c.decodeAll {
		return nil, nil
	}
	cn, err := c.r.Counts()
	if err != nil || cn == nil {
		return nil, nil
	}
	m := c.Meta()
	if cn.Events > 0 {
		start := m.StartBoot
		if m.Window != nil && m.Window.Start > start {
			start = m.Window.Start
		}
		// An event at First or later is early only if First is: by
		// more than the slack (start-First <= 0 when it overflows).
		if d := start - cn.First; cn.First <= 0 || cn.First < start && (d <= 0 || d > backwardSlack) {
			return nil, nil
		}
	}
	p := c.newPass()
	p.Events = cn.Events
	p.Batches, p.RawBytes = cn.Batches, cn.RawBytes
	// As TimeAnomalies.Check leaves them after every event; nothing is
	// early (above).
	p.Times = TimeAnomalies{Backward: cn.Backward, seen: cn.Events > 0, latest: cn.Last}
	p.unmatched.matched = cn.Events > 0
	if cn.LossRecords > 0 {
		l := Losses{Total: cn.Lost(), ByProbe: map[string]uint64{}, ByCPU: map[uint16]uint64{}, First: cn.LossFirst, Last: cn.LossLast}
		for _, pc := range cn.Probes {
			if pc.LossRecords > 0 {
				l.ByProbe[pc.Name] = pc.Lost
			}
		}
		for _, cl := range cn.CPUs {
			l.ByCPU[cl.CPU] = cl.Lost
		}
		p.Losses = l
	}
	return cn, p
}
