package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bpftape/bpftape/internal/textsafe"
	"github.com/bpftape/bpftape/replay"
)

// progressLine draws how far a verb has read its capture on standard error
// when that is a terminal, as curl and zstd draw theirs: a line redrawn in
// place, "bpftape report: 45% of cap.arrow read, about 4 s left", from a
// second into a pass (a shorter one draws nothing) and at most 4 times a
// second, erased when the pass is over. It goes between the batches of
// the pass (replay.Progress), so that reading a billion events, a minute
// or more, is not a silent wait. Whatever the verb writes to standard
// error erases the line first (the line comes back at the next batch),
// and so does its first write to a standard output that is a terminal,
// which stops the line for good: what a verb prints there is its answer.
// A verb sent to the background draws nothing until it is back in the
// foreground, as pv does.
type progressLine struct {
	mu    sync.Mutex
	w     io.Writer // the terminal
	verb  string
	now   func() time.Time
	after time.Duration // into a pass before the line is drawn
	every time.Duration // between two drawings
	// foreground reports whether the verb is in the terminal's
	// foreground job (nil: it is), asked before each drawing and erasure.
	foreground func() bool
	// restore, if not nil, gives the terminal back the mode it had
	// before the line (a Windows console's VT processing): Stop calls it.
	restore func()

	last       time.Time // the line's last drawing
	drawn, off bool
}

// newProgressLine returns the progress line of verb on terminal w.
func newProgressLine(w io.Writer, verb string) *progressLine {
	return &progressLine{w: w, verb: verb, now: time.Now, after: time.Second, every: time.Second / 4}
}

// progressOutputs returns the progress line of verb and the writers its
// standard output and error go through: with standard error a terminal
// that takes VT escape sequences, a line there (but for record, whose
// status line is its own), and writers that erase it first; otherwise no
// line (nil) and the files themselves. Nor is there a line when standard
// output is a pipe, as zstd draws none then: the reader of the pipe may
// be a pager on the same terminal (events | less), and one that quits
// early ends the verb with SIGPIPE, which would leave the line drawn.
func progressOutputs(verb string, stdout, stderr *os.File) (p *progressLine, out, errs io.Writer) {
	if verb == "record" || !isTerminal(stderr) || isPipe(stdout) {
		return nil, stdout, stderr
	}
	escapes, restore := terminalEscapes(stderr)
	if !escapes {
		return nil, stdout, stderr
	}
	p = newProgressLine(stderr, verb)
	p.restore = restore
	p.foreground = func() bool { return foreground(stderr) }
	out = stdout
	if isTerminal(stdout) {
		out = progressWriter{w: stdout, p: p, stop: true}
	}
	return p, out, progressWriter{w: stderr, p: p}
}

// isPipe reports whether f is a pipe or a socket.
func isPipe(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0
}

// captureProgress is the replay.Progress of one capture of a progress
// line: its passes, the first from when the capture was opened.
type captureProgress struct {
	line  *progressLine
	name  string    // the capture's, as the line shows it
	pass  int       // passes over, before this one
	start time.Time // this pass's first batch's (zero: none yet)
	first int       // the batches read then
}

// of returns the replay.Progress of the capture at path, of p (nil: none).
func (p *progressLine) of(path string) replay.Progress {
	if p == nil {
		return nil
	}
	return &captureProgress{line: p, name: lineName(path)}
}

// lineName is the name of the capture at path on a progress line: its
// base name, escaped (a name is anyone's bytes: none of its own escape
// sequences reaches the terminal), at most 28 bytes, cut between runes:
// the line fits in 80 columns, which it must not wrap past (\r would
// go back to the start of its last row only).
func lineName(path string) string {
	name := textsafe.Escape(filepath.Base(path))
	if len(name) > 28 {
		cut := 25
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut] + "..."
	}
	return name
}

// copying returns the progress func of merge or repair (format's
// MergeOptions and RepairOptions) reading path (a capture, or what the
// line calls the inputs), and the func to call when it is over; with no
// line, nil and a no-op.
func (p *progressLine) copying(path string) (progress func(read, of int), done func()) {
	if p == nil {
		return nil, func() {}
	}
	c := &captureProgress{line: p, name: lineName(path)}
	return c.Read, c.Done
}

// Read is told after each batch of a pass (replay.Progress).
func (c *captureProgress) Read(batches, of int) {
	p := c.line
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.now()
	if c.start.IsZero() {
		// The pass's clock starts at its first batch: not at the
		// capture's opening, which may come long before (compare
		// opens both captures, then reads one after the other).
		c.start, c.first = t, batches
	}
	if p.off || of <= 0 || t.Sub(c.start) < p.after || t.Sub(p.last) < p.every {
		return
	}
	p.last = t // asked at most as often as drawn, in the background too
	if !p.inForeground() {
		// A line drawn before the job went to the background is left
		// where it is: the cursor is now on the shell's line.
		p.drawn = false
		return
	}
	line := fmt.Sprintf("bpftape %s: %d%% of %s read", p.verb, 100*batches/of, c.name)
	if c.pass > 0 {
		line = fmt.Sprintf("bpftape %s: pass %d: %d%% of %s read", p.verb, c.pass+1, 100*batches/of, c.name)
	}
	if batches > c.first && batches < of {
		left := time.Duration(float64(t.Sub(c.start)) * float64(of-batches) / float64(batches-c.first))
		if left >= time.Second {
			line += fmt.Sprintf(", about %s left", roundLeft(left))
		}
	}
	// \r to the line's start, the line, and \x1b[K erases what is left
	// of a longer line before it.
	fmt.Fprintf(p.w, "\r%s\x1b[K", line)
	p.drawn = true
}

// Done is told when a pass is over (replay.Progress): the line is erased.
func (c *captureProgress) Done() {
	p := c.line
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
	c.pass++
	c.start, p.last = time.Time{}, time.Time{}
}

// roundLeft rounds the time left as a person would say it.
func roundLeft(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%d s", int(d.Round(time.Second)/time.Second))
	case d < 2*time.Minute:
		return fmt.Sprintf("%d s", int(d.Round(5*time.Second)/time.Second))
	default:
		return fmt.Sprintf("%d min", int(d.Round(time.Minute)/time.Minute))
	}
}

// Stop erases the line for good and gives the terminal back its mode, as
// the verb ends or an interrupt ends it: unless a write to the terminal
// holds the line (a terminal stopped with Ctrl-S blocks its writes),
// which it does not wait for, so that the interrupt still ends the verb.
func (p *progressLine) Stop() {
	if p == nil || !p.mu.TryLock() {
		return
	}
	defer p.mu.Unlock()
	p.erase()
	p.off = true
	if p.restore != nil {
		p.restore()
		p.restore = nil
	}
}

// erase erases the line if it is drawn, unless the verb is now in the
// background (the line on the terminal's current row is then the
// shell's, or what the user types); p.mu is held.
func (p *progressLine) erase() {
	if p.drawn {
		if p.inForeground() {
			io.WriteString(p.w, "\r\x1b[K")
		}
		p.drawn = false
	}
}

// inForeground reports whether the verb is in its terminal's foreground
// job; p.mu is held.
func (p *progressLine) inForeground() bool {
	return p.foreground == nil || p.foreground()
}

// progressWriter is a writer to the terminal of progress line p or to a
// terminal beside it, that erases the line before each write, and with
// stop set, stops it.
type progressWriter struct {
	w    io.Writer
	p    *progressLine
	stop bool
}

func (pw progressWriter) Write(b []byte) (int, error) {
	pw.p.mu.Lock()
	defer pw.p.mu.Unlock()
	pw.p.erase()
	if pw.stop {
		pw.p.off = true
	}
	return pw.w.Write(b)
}
