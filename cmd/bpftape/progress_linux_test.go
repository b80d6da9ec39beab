package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
	"github.com/bpftape/bpftape/internal/testutil"
)

// TestProgressOutputs: a verb draws its progress line only where standard
// error is a terminal, never for record; a standard output that is a
// terminal too stops the line at its first write, one that is not stays
// the file.
func TestProgressOutputs(t *testing.T) {
	_, term := testutil.OpenPTY(t)
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, tc := range []struct {
		verb           string
		stdout, stderr *os.File
		line           bool
		out            string // what stdout goes through
	}{
		{"latency", file, term, true, "file"},
		{"events", term, term, true, "stopper"},
		{"latency", term, file, false, "file"},
		{"record", file, term, false, "file"},
	} {
		p, out, errs := progressOutputs(tc.verb, tc.stdout, tc.stderr)
		if (p != nil) != tc.line {
			t.Errorf("%s, stderr a terminal %v: progress line %v, want %v", tc.verb, tc.stderr == term, p != nil, tc.line)
		}
		got := "file"
		if pw, ok := out.(progressWriter); ok && pw.stop {
			got = "stopper"
		} else if out != io.Writer(tc.stdout) {
			got = "something else"
		}
		if got != tc.out {
			t.Errorf("%s: standard output goes through %s, want %s", tc.verb, got, tc.out)
		}
		if _, ok := errs.(progressWriter); ok != tc.line {
			t.Errorf("%s: standard error through the line's writer %v, want %v", tc.verb, ok, tc.line)
		}
	}
}

// TestProgressReplay runs latency, events, merge and repair on a capture
// of many batches with a progress line on a pseudo-terminal, drawn at
// every batch: the line counts up to 100% of what they read, is erased
// before anything else reaches the terminal and at the end, and the
// answer on standard output is the one printed without a line.
func TestProgressReplay(t *testing.T) {
	master, term := testutil.OpenPTY(t)
	path := filepath.Join(t.TempDir(), "cap.arrow")
	if err := formattest.WriteFile(path, 20000, nil, format.WriterOptions{BatchRows: 500}, 0); err != nil {
		t.Fatal(err)
	}
	screen := make(chan string)
	go func() {
		b, _ := io.ReadAll(master) // until the slave is closed
		screen <- string(b)
	}()
	runWith := func(args []string, p *progressLine) string {
		replayProgress = p
		defer func() { replayProgress = nil }()
		var stdout bytes.Buffer
		errs := io.Writer(io.Discard)
		if p != nil {
			errs = progressWriter{w: term, p: p}
		}
		if code := run(args, &stdout, errs); code != 0 {
			t.Fatalf("%v: exit status %d", args, code)
		}
		return stdout.String()
	}
	dir := filepath.Dir(path)
	verbs := [][]string{{"latency", path, "rx", "rx_ret"}, {"events", path},
		{"merge", path, path + ".again", "-o", filepath.Join(dir, "m.arrow"), "--force"},
		{"repair", path, filepath.Join(dir, "r.arrow"), "--force"}}
	copyFile(t, path, path+".again")
	for _, args := range verbs {
		want := runWith(args, nil)
		p := newProgressLine(term, args[0])
		p.after, p.every = 0, 0
		if got := runWith(args, p); got != want {
			t.Errorf("%s: standard output with a progress line differs:\n%.300s\nwithout:\n%.300s", args[0], got, want)
		}
	}
	term.Close()
	// The terminal's own \r before each \n (ONLCR) aside.
	out := strings.ReplaceAll(<-screen, "\r\n", "\n")
	// Each verb's lines, the line erased at the end of its pass (the
	// capture has no losses to note: the verbs print nothing else there).
	line := regexp.MustCompile(`^bpftape (\w+): (\d+)% of (cap\.arrow|2 captures) read(, about \d+ s left)?\x1b\[K$`)
	var pct []int
	verb := 0
	parts := strings.Split(out, "\r")[1:]
	for i, part := range parts {
		if m := line.FindStringSubmatch(part); m != nil {
			if m[1] != verbs[verb][0] {
				verb++
				if verb == len(verbs) || m[1] != verbs[verb][0] {
					t.Fatalf("part %d: line of %s, want %s", i, m[1], verbs[min(verb, len(verbs)-1)][0])
				}
				pct = nil
			}
			n, _ := strconv.Atoi(m[2])
			if len(pct) > 0 && n < pct[len(pct)-1] {
				t.Errorf("%s: %d%% after %d%%", m[1], n, pct[len(pct)-1])
			}
			pct = append(pct, n)
			continue
		}
		if !strings.HasPrefix(part, "\x1b[K") {
			t.Errorf("part %d of the terminal's output is neither a line nor after an erasure: %q", i, part)
		}
		if pct != nil && pct[len(pct)-1] != 100 {
			t.Errorf("%s: the line erased at %d%%, want 100%%", verbs[verb][0], pct[len(pct)-1])
		}
	}
	if verb != len(verbs)-1 || len(pct) < 40 || len(parts) == 0 || !strings.HasPrefix(parts[len(parts)-1], "\x1b[K") {
		t.Errorf("%d verbs drew lines, the last %d lines; the output ends %q: want lines of every verb, at each of their 41 batches, and the line erased",
			verb+1, len(pct), out[max(0, len(out)-40):])
	}
}
