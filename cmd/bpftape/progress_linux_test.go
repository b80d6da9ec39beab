package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
	"github.com/bpftape/bpftape/internal/testutil"
)

// TestProgressOutputs: a verb draws its progress line only where standard
// error is a terminal, never for record; a standard output that is a
// terminal too stops the line at its first write, one that is a file
// stays the file, and one that is a pipe (to a pager, perhaps) means no
// line; nor on a dumb terminal.
func TestProgressOutputs(t *testing.T) {
	_, term := testutil.OpenPTY(t)
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	t.Setenv("TERM", "xterm")
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
		{"events", pw, term, false, "file"}, // events | less
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
	t.Setenv("TERM", "dumb") // an Emacs shell buffer's
	if p, _, _ := progressOutputs("latency", file, term); p != nil {
		t.Error("a progress line on a dumb terminal")
	}
}

// TestProgressForeground runs the test binary as a job of a shell with
// job control (bash -m) on a pseudo-terminal, where foregroundChild says
// what foreground finds: the foreground job, then one started with &.
func TestProgressForeground(t *testing.T) {
	master, term := testutil.OpenPTY(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-m", "-c", `"$0"; echo "foreground job: $?"; "$0" & wait $!; echo "background job: $?"`, exe)
	cmd.Env = append(os.Environ(), "BPFTAPE_TEST_FOREGROUND=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = term, term, term
	// The shell leads a session of its own, the pseudo-terminal its
	// controlling terminal (its standard input, descriptor 0).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	screen := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(master) // until the slave is closed
		screen <- string(b)
	}()
	if err := cmd.Run(); err != nil {
		t.Fatalf("bash -m: %v", err)
	}
	term.Close()
	out := strings.ReplaceAll(<-screen, "\r\n", "\n")
	for _, want := range []string{"foreground job: 0\n", "background job: 3\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the shell printed %q, want %q (0: foreground, 3: not)", out, want)
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
	screen := make(chan string, 1)
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
	line := regexp.MustCompile(`^bpftape (\w+): (\d+)% of (cap\.arrow|2 captures) read(, about \d+ (s|min) left)?\x1b\[K$`)
	var pct []int
	verb := -1
	parts := strings.Split(out, "\r")[1:]
	// done checks the lines of the verb before the next's: one a batch
	// it read (a merge reads the capture twice), the last erased.
	done := func(i int) {
		if verb < 0 {
			return
		}
		want := 41
		if verbs[verb][0] == "merge" {
			want = 82
		}
		if len(pct) != want || pct[len(pct)-1] != 100 {
			t.Errorf("%s: %d lines up to %v%%, want %d up to 100%%", verbs[verb][0], len(pct), pct[len(pct)-1:], want)
		}
		if i == 0 || !strings.HasPrefix(parts[i-1], "\x1b[K") {
			t.Errorf("%s: its last line not erased", verbs[verb][0])
		}
	}
	for i, part := range parts {
		if m := line.FindStringSubmatch(part); m != nil {
			if verb < 0 || m[1] != verbs[verb][0] {
				if i > 0 && line.MatchString(parts[i-1]) {
					t.Errorf("part %d: %s's line drawn over %s's, not erased", i, m[1], verbs[max(verb, 0)][0])
				}
				done(i)
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
	if verb != len(verbs)-1 {
		t.Errorf("%d verbs drew lines, want %d", verb+1, len(verbs))
	}
	done(len(parts))
}
