// Command bpftape records uprobe, uretprobe, USDT and tracepoint events into
// an Arrow capture file and answers questions about them offline.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/outfile"
	"github.com/bpftape/bpftape/internal/textsafe"
	"github.com/bpftape/bpftape/internal/usage"
)

// Exit codes scripts can trust.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed (I/O, kernel, a capture it cannot read)
	exitUsage   = 2 // bad flags or arguments
	exitDiffer  = 3 // compare --identical: histograms differ

	// record -c: the command could not be started, as a shell reports it.
	exitCannotRun = 126 // not an executable file
	exitNotFound  = 127 // not found
)

// Version is the tool version written into every capture.
var Version = "0.1.0"

type verb struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

var verbs = map[string]verb{}

func register(name, summary string, run func(args []string, stdout, stderr io.Writer) int) {
	verbs[name] = verb{summary, run}
}

func printUsage(w io.Writer) {
	fmt.Fprintf(w, `bpftape records kernel and user-space probe events into a capture file
and rebuilds histograms, per-request totals and latencies from it offline.

Usage: bpftape VERB [flags] ARGS...

Verbs:
`)
	names := make([]string, 0, len(verbs))
	for n := range verbs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, verbs[n].summary)
	}
	fmt.Fprintf(w, `
Run 'bpftape VERB --help' for a verb's flags and examples, and
'bpftape --version' for the version.
Exit status: 0 ok, 1 failure, 2 usage error, 3 'compare --identical' found a difference;
'record -c CMD' also exits with CMD's status when CMD ends the recording (see 'bpftape record --help').
`)
}

func main() {
	out, errs := io.Writer(os.Stdout), io.Writer(os.Stderr)
	if len(os.Args) > 1 {
		replayProgress, out, errs = progressOutputs(os.Args[1], os.Stdout, os.Stderr)
	}
	if len(os.Args) > 1 && os.Args[1] != "record" { // record stops cleanly on a signal
		// Notify before the verb starts: in a goroutine of its own, an
		// interrupt could come first and kill the process with the
		// temporary output left behind.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		go discardOnSignal(sigs, replayProgress)
		lateFirstGC()
	}
	stdout, flush := bufferStdout(os.Args[1:], out)
	code := run(os.Args[1:], stdout, errs)
	if err := flush(); err != nil && code == exitOK {
		fmt.Fprintf(os.Stderr, "bpftape: write standard output: %v\n", err)
		code = exitFailure
	}
	replayProgress.Stop()
	exiting.Lock() // an interrupt that came first exits with its own status
	os.Exit(code)
}

// stdoutBuffer is the size of the buffer standard output goes through.
const stdoutBuffer = 64 << 10

// bufferStdout returns the writer a verb prints to and the function that
// flushes it. The analysis verbs print through a buffer: one write(2) per
// line had 'events' spend more time in the kernel than decoding (1,000,002
// writes for a 1 M-event capture). record prints as events come (its
// --print and live view) and looks at its standard output itself, so it
// gets the file.
func bufferStdout(args []string, out io.Writer) (io.Writer, func() error) {
	if len(args) == 0 || args[0] == "record" {
		return os.Stdout, func() error { return nil }
	}
	w := bufio.NewWriterSize(out, stdoutBuffer)
	return w, w.Flush
}

// replayProgress is the verb's progress line, which main sets when standard
// error is a terminal (and the verb is not record, whose status line is
// its own): nil otherwise.
var replayProgress *progressLine

// exiting is held by whichever exits first: main with the verb's status,
// or discardOnSignal with the signal's. Without it, an output discarded
// under a running verb made the verb fail, and its "exit 1" could win the
// race against the signal's 130.
var exiting sync.Mutex

// interrupted is set when a signal ends the verb: the error of a write
// to the output it discarded ("file already closed") is not printed.
var interrupted atomic.Bool

// discardOnSignal makes a verb interrupted by SIGINT, SIGTERM or SIGHUP
// remove the output it has not finished (its temporary file) before it
// exits as the signal would have ended it.
func discardOnSignal(sigs <-chan os.Signal, line *progressLine) {
	sig := <-sigs
	interrupted.Store(true)
	exiting.Lock()
	line.Stop()
	outfile.DiscardAll()
	os.Exit(128 + int(sig.(syscall.Signal)))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help":
		// bpftape help VERB, as git and go take it: the verb's --help.
		if len(args) > 1 {
			if _, ok := verbs[args[1]]; ok {
				return run(append(args[1:len(args):len(args)], "--help"), stdout, stderr)
			}
		}
		printUsage(stdout)
		return exitOK
	case "-h", "--help":
		printUsage(stdout)
		return exitOK
	case "--version": // the first line of 'bpftape version'
		fmt.Fprintln(stdout, "bpftape", Version)
		return exitOK
	}
	v, ok := verbs[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "bpftape: unknown verb %q\n\n", args[0])
		printUsage(stderr)
		return exitUsage
	}
	return runVisible(args[0], v, args[1:], stdout, stderr)
}

// runVisible runs a verb with its text output written through a
// textsafe.Writer: whatever text from a capture or a traced process
// reaches it unescaped (encoding/json, which --json uses, leaves U+202E
// as it is), no format character that reorders or hides text reaches the
// terminal or the file. Verbs escape their text themselves (textsafe.Escape);
// this is the backstop. export may write Arrow or Parquet to stdout and
// escapes its CSV and JSON lines itself, and record needs its own stdout
// and stderr (it asks whether they are terminals): their output is
// written as it is, but for export's stderr.
func runVisible(name string, v verb, args []string, stdout, stderr io.Writer) int {
	if name == "record" {
		return v.run(args, stdout, stderr)
	}
	errw := textsafe.NewWriter(stderr)
	defer errw.Flush()
	if name == "export" {
		return v.run(args, stdout, errw)
	}
	outw := textsafe.NewWriter(stdout)
	defer outw.Flush()
	return v.run(args, outw, errw)
}

// fail prints err for verb and returns the matching exit status: 2 for a
// usage error (package usage: a bad flag or argument, a probe or field the
// capture lacks, an output the rules refuse), 1 for any other.
func fail(stderr io.Writer, verb string, err error) int {
	if interrupted.Load() {
		exiting.Lock() // the signal's exit status is on its way
	}
	err = readHint(verb, err)
	var be *format.BatchError
	if verb != "repair" && errors.As(err, &be) && errors.Is(err, format.ErrCorrupt) && !errors.Is(err, format.ErrLimit) && !strings.Contains(err.Error(), "bpftape repair") {
		err = fmt.Errorf("%w ('bpftape repair' copies the batches that are intact into a new file)", err)
	}
	// One line, whatever names of the capture or of a traced process the
	// error quotes (package textsafe).
	fmt.Fprintf(stderr, "bpftape %s: %s\n", verb, textsafe.Escape(err.Error()))
	if usage.Is(err) {
		return exitUsage
	}
	return exitFailure
}
