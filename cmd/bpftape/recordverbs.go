package main

import (
	"fmt"
	"io"
)

// The verbs that record, or look at the host and its programs for
// recording, need packages record and bpf: their BPF objects and the
// kernel interfaces they use (BPF, perf events, epoll, tracefs) exist for
// Linux on x86-64 and arm64, where record.go, list.go and doctor.go build.
// The builds for other systems (macOS, Windows) analyse
// captures with every other verb, and register these names with
// unsupportedVerb (unsupported.go), so that 'bpftape --help' lists the same
// verbs everywhere.
const (
	recordSummary   = "record probe events into a capture file"
	listSummary     = "list the USDT probes and functions of a binary, kernel tracepoints or kernel functions, as probe specs"
	doctorSummary   = "report what this host's kernel supports and what bpftape will record or refuse"
	snapshotSummary = "ask a flight recorder (record --flight) to write a snapshot of what it holds"
)

// recordingVerbs are the verbs above, with their summaries.
var recordingVerbs = []struct{ name, summary string }{
	{"record", recordSummary},
	{"list", listSummary},
	{"doctor", doctorSummary},
	{"snapshot", snapshotSummary},
}

// recordingPlatform is where bpftape records, as GOOS/GOARCH name it.
const recordingPlatform = "linux/amd64, linux/arm64"

// unsupportedSummary is a recording verb's summary in a build for goos/goarch,
// which says that it needs Linux.
func unsupportedSummary(summary, goos, goarch string) string {
	return fmt.Sprintf("%s (needs Linux on x86-64 or arm64, %s: not in this %s/%s build)", summary, recordingPlatform, goos, goarch)
}

// unsupportedVerb is a recording verb in a build for goos/goarch: whatever
// its arguments, it says in one line on stderr that recording needs Linux
// on x86-64 or arm64 and that this build analyses captures, and exits with status 2,
// as an unknown verb does: nothing ran, and no host or retry would make
// this binary record (status 1 says that a verb ran and the system failed
// it).
func unsupportedVerb(name, goos, goarch string) func(args []string, stdout, stderr io.Writer) int {
	return func(args []string, stdout, stderr io.Writer) int {
		fmt.Fprintf(stderr, "bpftape %s: recording needs Linux on x86-64 or arm64 (%s); this is a %s/%s build, which analyses captures: 'bpftape --help' lists its verbs\n",
			name, recordingPlatform, goos, goarch)
		return exitUsage
	}
}
