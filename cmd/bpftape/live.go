//go:build linux && (amd64 || arm64)

package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/boottime"
	"github.com/bpftape/bpftape/internal/humanfmt"
	"github.com/bpftape/bpftape/internal/shellwords"
	"github.com/bpftape/bpftape/internal/usage"
)

// The live view of a recording (record --print VERB ARGS --interval D)
// runs the offline analysis verbs themselves, unchanged, every interval:
// each interval's events are written, as the recorder hands them to the
// capture (record.Live), into a capture of their own in memory (a memfd),
// which the verb then reads like any other capture. What an interval
// prints is therefore what 'bpftape VERB FILE ARGS --from A --to B'
// prints of the finished capture for that interval, by construction: the
// same writer, reader and analysis. The capture itself is written as
// without --print (the interval captures are apart from it, so its
// batches keep their size and cadence).
//
// Intervals are cut by event time, from the capture's start (the times
// --from and --to count from), not by when the events were drained: an
// interval is printed once the ring buffers were read to their end
// liveMargin after it ended (record.Live's Seen).

// liveVerbs are the verbs --print runs: those whose result over an
// interval's events means something on its own and that read nothing but
// the capture (no stack table, no output file).
var liveVerbs = []string{"compare", "count", "events", "hist", "latency", "requests"}

// liveMargin is how long after an interval's end its events may still
// come: a program reads an event's time a few microseconds before it
// reserves its ring record, and a record still being written when the
// rings are read waits for the next read. An event later than that is
// counted (late) and left out of the printed interval.
const liveMargin = 20 * time.Millisecond

// minInterval bounds --interval: each interval is a capture of its own
// and a run of every --print.
const minInterval = 100 * time.Millisecond

// liveQueue is how many finished intervals may wait for the printer: a
// stdout nobody reads never stalls the recorder, it skips intervals.
const liveQueue = 8

// livePrint is one --print: a verb and its arguments without the FILE.
type livePrint struct {
	text string
	verb string
	args []string
}

// parsePrint checks the verb of a --print; the arguments are checked
// against the probes (liveView.Check).
func parsePrint(text string) (livePrint, error) {
	if strings.TrimSpace(text) == "" {
		return livePrint{}, usage.Errorf("--print %q: want an analysis verb and its arguments without the FILE, e.g. 'hist PROBE FIELD'", text)
	}
	words, err := shellwords.Split(text)
	if err != nil {
		return livePrint{}, usage.Errorf("--print %q: %w", text, err)
	}
	if !slices.Contains(liveVerbs, words[0]) {
		return livePrint{}, usage.Errorf("--print %q: %q is not a verb --print runs; it runs %s", text, words[0], strings.Join(liveVerbs, ", "))
	}
	for _, w := range words[1:] {
		if w == "-h" || w == "-help" || w == "--help" {
			return livePrint{}, usage.Errorf("--print %q: see 'bpftape %s --help'", text, words[0])
		}
		if w == "--" {
			break
		}
	}
	return livePrint{text: text, verb: words[0], args: words[1:]}, nil
}

// liveView is the record.Live of --print.
type liveView struct {
	prints      []livePrint
	interval    time.Duration
	out, errOut io.Writer

	// From Start on.
	meta   *format.Meta // a copy of the capture's
	origin int64        // its start, boot-clock ns: interval k is [origin+k*interval, origin+(k+1)*interval)
	queue  chan *liveInterval
	done   chan struct{}

	// The drainer's, while recording; Finish's after.
	open    map[int64]*liveInterval
	next    int64 // the first interval not yet handed to the printer
	late    uint64
	skipped int
	err     error // the first failure of an interval capture: the view stops
}

// liveInterval is one interval's capture, in memory.
type liveInterval struct {
	k        int64
	end      int64 // boot-clock ns
	last     bool
	f        *os.File
	w        *format.Writer
	writeErr error
}

func newLiveView(prints []livePrint, interval time.Duration, out, errOut io.Writer) *liveView {
	return &liveView{prints: prints, interval: interval, out: out, errOut: errOut, open: map[int64]*liveInterval{}}
}

// Check runs every --print over an empty capture of the probes, so that a
// probe or field they lack, or a bad flag, stops the recording before
// anything is attached.
func (v *liveView) Check(probes []format.Probe) error {
	m := &format.Meta{Tool: "bpftape " + Version, Probes: probes, StartWall: time.Now()}
	f, w, err := newMemCapture(m)
	if err != nil {
		return fmt.Errorf("--print: %w", err)
	}
	defer f.Close()
	if err := w.Close(); err != nil {
		return fmt.Errorf("--print: %w", err)
	}
	for _, p := range v.prints {
		code, errText := v.run(p, f, io.Discard)
		if code == exitOK || (code == exitDiffer && p.verb == "compare") {
			continue
		}
		msg := lastLine(errText)
		msg = strings.TrimPrefix(msg, "bpftape "+p.verb+": ")
		if code == exitUsage {
			return usage.Errorf("--print %q: %s", p.text, msg)
		}
		return fmt.Errorf("--print %q: %s", p.text, msg)
	}
	return nil
}

// Start takes a copy of the capture's metadata and starts the printer.
func (v *liveView) Start(m *format.Meta) {
	v.meta = copyMeta(m)
	v.origin = m.StartBoot
	v.queue = make(chan *liveInterval, liveQueue)
	v.done = make(chan struct{})
	go v.printer()
}

// index is the interval of boot time t.
func (v *liveView) index(t int64) int64 {
	d, iv := t-v.origin, int64(v.interval)
	k := d / iv
	if d < 0 && d%iv != 0 {
		k--
	}
	return k
}

// get returns interval k's capture, started if need be; nil once an
// interval capture failed (v.err).
func (v *liveView) get(k int64) *liveInterval {
	if iv := v.open[k]; iv != nil {
		return iv
	}
	iv := v.newInterval(k)
	if iv != nil {
		v.open[k] = iv
	}
	return iv
}

func (v *liveView) newInterval(k int64) *liveInterval {
	if v.err != nil {
		return nil
	}
	m := copyMeta(v.meta)
	start := v.origin + k*int64(v.interval)
	m.Window = &format.Window{Start: start, End: start + int64(v.interval)}
	f, w, err := newMemCapture(m)
	if err != nil {
		v.err = err
		return nil
	}
	return &liveInterval{k: k, end: m.Window.End, f: f, w: w}
}

// Event appends e to its interval's capture.
func (v *liveView) Event(e *format.Event) {
	k := v.index(e.Time)
	if k < v.next {
		v.late++
		return
	}
	if iv := v.get(k); iv != nil && iv.writeErr == nil {
		iv.writeErr = iv.w.Append(e)
	}
}

// Lost appends a loss record to its interval's capture.
func (v *liveView) Lost(probe, cpu uint16, t int64, n uint64) {
	k := v.index(t)
	if k < v.next {
		// Read after its interval was printed: the next one warns.
		k = v.next
	}
	if iv := v.get(k); iv != nil && iv.writeErr == nil {
		iv.writeErr = iv.w.Lost(probe, cpu, t, n)
	}
}

// Seen hands every interval that ended liveMargin before t to the printer.
func (v *liveView) Seen(t int64) {
	for v.origin+(v.next+1)*int64(v.interval) <= t-int64(liveMargin) {
		v.ship(v.next, false)
	}
}

// ship hands interval k, the next one, to the printer; with wait, it
// waits for room, else an interval that finds the queue full is skipped.
func (v *liveView) ship(k int64, wait bool) {
	iv := v.open[k]
	delete(v.open, k)
	v.next = k + 1
	if iv == nil {
		if !wait && len(v.queue) == cap(v.queue) {
			v.skipped++ // an empty one: not even started
			return
		}
		if iv = v.newInterval(k); iv == nil {
			return
		}
	}
	if wait {
		v.queue <- iv
		return
	}
	select {
	case v.queue <- iv:
	default:
		v.skipped++
		go iv.discard()
	}
}

// Finish prints what is left once the recording ended at boot time end
// (its window's end; 0 if unknown): the last, partial interval, and any
// before it still waiting. It notes on stderr what the view left out.
func (v *liveView) Finish(end int64) {
	if v.queue == nil {
		return // the recording never started
	}
	if end == 0 {
		end = boottime.Now()
	}
	last := v.index(end - 1)
	for k := v.next; k <= last; k++ {
		if k == last {
			if iv := v.get(k); iv != nil {
				iv.last = true
				iv.end = max(min(iv.end, end), v.origin+k*int64(v.interval))
				iv.w.Meta().Window.End = iv.end
			}
		}
		v.ship(k, true)
	}
	// Intervals after the end: events of implausible times, which the
	// capture has too.
	for _, k := range slices.Sorted(maps.Keys(v.open)) {
		v.ship(k, true)
	}
	close(v.queue)
	<-v.done
	if v.err != nil {
		fmt.Fprintf(v.errOut, "bpftape record: --print: %v: the intervals after were not printed (the capture is complete)\n", v.err)
	}
	if v.late > 0 {
		fmt.Fprintf(v.errOut, "bpftape record: --print: %s after its interval was printed, left out of it (the capture has it all)\n",
			humanfmt.Plural(v.late, "event came", "events came"))
	}
	if v.skipped > 0 {
		fmt.Fprintf(v.errOut, "bpftape record: --print: %s not printed: the output was not read fast enough (the capture has it all)\n",
			humanfmt.Plural(uint64(v.skipped), "interval was", "intervals were"))
	}
}

// Discard ends a view whose recording failed to start: it prints nothing.
func (v *liveView) Discard() {
	if v.queue == nil {
		return
	}
	for k, iv := range v.open {
		delete(v.open, k)
		iv.discard()
	}
	close(v.queue)
	<-v.done
}

// printer closes each interval's capture, runs every --print over it and
// writes their output under a header naming the interval.
func (v *liveView) printer() {
	defer close(v.done)
	first := true
	for iv := range v.queue {
		err := iv.w.Close()
		if err == nil {
			err = iv.writeErr
		}
		if err != nil {
			fmt.Fprintf(v.errOut, "bpftape record: --print: interval %s: %v\n", v.span(iv), err)
			iv.f.Close()
			continue
		}
		var b bytes.Buffer
		if !first {
			b.WriteByte('\n')
		}
		first = false
		layout := "15:04:05"
		if v.interval%time.Second != 0 {
			layout = "15:04:05.000"
		}
		fmt.Fprintf(&b, "--- %s (%s) ---\n", v.meta.WallTime(iv.end).Format(layout), v.span(iv))
		var notes strings.Builder
		seen := map[string]bool{} // each --print warns of the interval's losses
		for _, p := range v.prints {
			if len(v.prints) > 1 {
				fmt.Fprintf(&b, "# %s\n", p.text)
			}
			code, errText := v.run(p, iv.f, &b)
			for _, l := range strings.SplitAfter(errText, "\n") {
				// An empty interval is no news.
				if l != "" && !seen[l] && !strings.Contains(l, ": the histogram is empty.") {
					notes.WriteString(l)
				}
				seen[l] = true
			}
			if code != exitOK && !(code == exitDiffer && p.verb == "compare") && errText == "" {
				fmt.Fprintf(&notes, "bpftape record: --print %q: exit status %d\n", p.text, code)
			}
		}
		iv.f.Close()
		v.out.Write(b.Bytes())
		io.WriteString(v.errOut, notes.String())
	}
}

// span names an interval by the filters that select it from the capture.
func (v *liveView) span(iv *liveInterval) string {
	from := time.Duration(iv.k) * v.interval
	if iv.last {
		return fmt.Sprintf("--from %v", from)
	}
	return fmt.Sprintf("--from %v --to %v", from, from+v.interval)
}

// run runs p over the capture in f, with its output to out; it returns
// the verb's exit status and what it wrote on stderr, the capture named
// "the recording" there.
func (v *liveView) run(p livePrint, f *os.File, out io.Writer) (int, string) {
	path := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	var errb bytes.Buffer
	code := verbs[p.verb].run(append([]string{path}, p.args...), out, &errb)
	s := strings.ReplaceAll(errb.String(), path+": ", "")
	return code, strings.ReplaceAll(s, path, "the recording")
}

// discard frees an interval nobody will print.
func (iv *liveInterval) discard() {
	iv.w.Close()
	iv.f.Close()
}

// newMemCapture starts a capture of m in memory (a memfd, which the verbs
// open as /proc/self/fd/N): LZ4 and small batches, as it lives for one
// interval.
func newMemCapture(m *format.Meta) (*os.File, *format.Writer, error) {
	fd, err := unix.MemfdCreate("bpftape-live", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "bpftape-live")
	w, err := format.NewWriter(f, m, format.WriterOptions{Compression: format.LZ4, BatchRows: 4096})
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, w, nil
}

// copyMeta copies m deeply enough for a writer of its own (which fills in
// columns) while the recorder changes m.
func copyMeta(m *format.Meta) *format.Meta {
	c := *m
	if m.Window != nil {
		w := *m.Window
		c.Window = &w
	}
	c.Probes = slices.Clone(m.Probes)
	for i := range c.Probes {
		c.Probes[i].Fields = slices.Clone(c.Probes[i].Fields)
	}
	c.Extra = make(map[string]string, len(m.Extra))
	for k, val := range m.Extra {
		c.Extra[k] = val
	}
	c.CommandLine = slices.Clone(m.CommandLine)
	c.Inputs = nil
	return &c
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// newLiveFlags checks --print and --interval, with the capture going to
// output; it returns nil without --print.
func newLiveFlags(prints []string, interval, output string, stdout, stderr io.Writer) (*liveView, error) {
	if len(prints) == 0 {
		if interval != "" {
			return nil, usage.Errorf("--interval needs --print")
		}
		return nil, nil
	}
	if f, ok := stdout.(*os.File); ok {
		st, err1 := f.Stat()
		ost, err2 := os.Stat(output)
		if err1 == nil && err2 == nil && os.SameFile(st, ost) {
			return nil, usage.Errorf("--print writes to standard output, which is the capture (-o %s)", output)
		}
	}
	d := time.Second
	if interval != "" {
		var err error
		if d, err = parseDuration(interval); err != nil {
			return nil, usage.Errorf("--interval: %w", err)
		}
		if d < minInterval {
			return nil, usage.Errorf("--interval %v: at least %v", d, minInterval)
		}
	}
	ps := make([]livePrint, len(prints))
	for i, text := range prints {
		var err error
		if ps[i], err = parsePrint(text); err != nil {
			return nil, err
		}
	}
	return newLiveView(ps, d, stdout, stderr), nil
}

// isTerminalWriter reports whether w is a terminal.
func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}
