package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// fakeClock is a clock a test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }

// TestProgressLine follows the line through two passes, with what the verb
// writes to standard error and to a standard output that is a terminal:
// nothing in a pass's first second, at most 4 drawings a second, the time
// left once a pass has read some, erased at each pass's end and before
// every write, stopped for good by the first write to standard output.
func TestProgressLine(t *testing.T) {
	var term bytes.Buffer
	clock := &fakeClock{t: time.Unix(1000, 0)}
	p := newProgressLine(&term, "latency")
	p.now = clock.now
	c := p.of("/data/caps/cap.arrow")
	step := func(d time.Duration, read, of int, want string) {
		t.Helper()
		clock.add(d)
		term.Reset()
		c.Read(read, of)
		if got := term.String(); got != want {
			t.Errorf("%d of %d batches, %v on: wrote %q, want %q", read, of, d, got, want)
		}
	}
	// The pass's clock starts at its first batch; then 5 batches a
	// second; a drawing at most every 0.25 s; no time left under 1 s.
	step(0, 5, 40, "")
	step(500*time.Millisecond, 8, 40, "")
	step(500*time.Millisecond, 10, 40, "\rbpftape latency: 25% of cap.arrow read, about 6 s left\x1b[K")
	step(100*time.Millisecond, 11, 40, "")
	step(200*time.Millisecond, 20, 40, "\rbpftape latency: 50% of cap.arrow read, about 2 s left\x1b[K")
	step(300*time.Millisecond, 39, 40, "\rbpftape latency: 97% of cap.arrow read\x1b[K")

	// The verb's notes on standard error erase the line first; the next
	// batch draws it again.
	term.Reset()
	errw := progressWriter{w: &term, p: p}
	errw.Write([]byte("NOTE: something\n"))
	if got := term.String(); got != "\r\x1b[KNOTE: something\n" {
		t.Errorf("a write to standard error wrote %q", got)
	}
	step(300*time.Millisecond, 40, 40, "\rbpftape latency: 100% of cap.arrow read\x1b[K")

	term.Reset()
	c.Done()
	if got := term.String(); got != "\r\x1b[K" {
		t.Errorf("the pass's end wrote %q, want the line erased", got)
	}
	term.Reset()
	c.Done() // nothing drawn: nothing to erase
	if term.Len() != 0 {
		t.Errorf("the end of a pass that drew nothing wrote %q", term.String())
	}

	// The third pass: its own clock, from its first batch, however long
	// after the last pass's end, and its number on the line.
	step(time.Minute, 1, 4, "")
	step(900*time.Millisecond, 1, 4, "")
	step(100*time.Millisecond, 2, 4, "\rbpftape latency: pass 3: 50% of cap.arrow read, about 2 s left\x1b[K")

	// The answer on a terminal's standard output: erased, and never again.
	term.Reset()
	outw := progressWriter{w: &term, p: p, stop: true}
	outw.Write([]byte("answer\n"))
	if got := term.String(); got != "\r\x1b[Kanswer\n" {
		t.Errorf("a write to standard output wrote %q", got)
	}
	step(time.Second, 3, 4, "")
	// An interrupt does not wait for a write that holds the line (to a
	// stopped terminal).
	p.off, p.drawn = false, true
	p.mu.Lock()
	stopped := make(chan struct{})
	go func() { p.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop waited for a write that held the line")
	}
	p.mu.Unlock()
	// Stop gives the terminal back its mode, once.
	restored := 0
	q := newProgressLine(&term, "hist")
	q.restore = func() { restored++ }
	q.Stop()
	q.Stop()
	if restored != 1 {
		t.Errorf("two Stops restored the terminal's mode %d times, want 1", restored)
	}
	var none *progressLine
	none.Stop()
	if none.of("x.arrow") != nil {
		t.Error("no progress line gave a replay.Progress")
	}
}

// TestProgressLineBackground follows a verb sent to the background and
// back, as with Ctrl-Z, bg and fg: no line is drawn or erased in the
// background (the terminal's row is the shell's), and the line is drawn
// again in the foreground.
func TestProgressLineBackground(t *testing.T) {
	var term bytes.Buffer
	p := newProgressLine(&term, "report")
	p.after, p.every = 0, 0
	fg := true
	p.foreground = func() bool { return fg }
	c := p.of("cap.arrow")
	for _, step := range []struct {
		fg    bool
		read  int
		done  bool
		wrote string
	}{
		{true, 1, false, "\rbpftape report: 25% of cap.arrow read\x1b[K"},
		{false, 2, false, ""}, // the line drawn before is left on its row
		{false, 0, true, ""},  // a pass over in the background erases nothing
		{false, 1, false, ""},
		{true, 2, false, "\rbpftape report: pass 2: 50% of cap.arrow read\x1b[K"},
		{true, 0, true, "\r\x1b[K"},
	} {
		fg = step.fg
		term.Reset()
		if step.done {
			c.Done()
		} else {
			c.Read(step.read, 4)
		}
		if got := term.String(); got != step.wrote {
			t.Errorf("foreground %v, read %d, done %v: wrote %q, want %q", step.fg, step.read, step.done, got, step.wrote)
		}
	}
}

// foregroundChild, in the test binary run by TestProgressForeground as
// a shell's job, exits 0 when foreground says it is the terminal's
// foreground job and 3 when it is not.
func foregroundChild() {
	if os.Getenv("BPFTAPE_TEST_FOREGROUND") == "" {
		return
	}
	if foreground(os.Stderr) {
		os.Exit(0)
	}
	os.Exit(3)
}

// TestProgressLineName: the capture's name on the line is its base name,
// escaped (a name is anyone's bytes: no escape sequence of its own reaches
// the terminal) and cut to 28 bytes, between runes.
func TestProgressLineName(t *testing.T) {
	var term bytes.Buffer
	p := newProgressLine(&term, "report")
	p.after = 0
	for _, tc := range []struct{ path, want string }{
		{"/tmp/\x1b[2Jx\r.arrow", `\x1b[2Jx\r.arrow`},
		{"/tmp/" + strings.Repeat("a", 60) + ".arrow", strings.Repeat("a", 25) + "..."},
		{"/tmp/" + strings.Repeat("日本", 10) + ".arrow", strings.Repeat("日本", 4) + "..."}, // 24 bytes: 25 would cut a rune
	} {
		term.Reset()
		p.last = time.Time{}
		p.of(tc.path).Read(1, 2)
		line := term.String()
		if strings.Contains(line[1:], "\r") || strings.Count(line, "\x1b") != 1 || !strings.Contains(line, " of "+tc.want+" read") || !utf8.ValidString(line) {
			t.Errorf("%q: drew %q, want the name %q and no control character but the line's", tc.path, line, tc.want)
		}
	}
}

func TestRoundLeft(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1400 * time.Millisecond: "1 s",
		9 * time.Second:         "9 s",
		43 * time.Second:        "45 s",
		119 * time.Second:       "120 s",
		150 * time.Second:       "3 min",
		62 * time.Minute:        "62 min",
	} {
		if got := roundLeft(d); got != want {
			t.Errorf("roundLeft(%v) = %q, want %q", d, got, want)
		}
	}
}
