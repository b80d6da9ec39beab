package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// recordingBuild says whether this build records (recordverbs.go).
var recordingBuild = runtime.GOOS == "linux" && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64")

// TestUnsupportedVerb: a recording verb in a build that does not record
// says so in one line on stderr, naming the build's GOOS/GOARCH, writes
// nothing on stdout, and exits with status 2 whatever its arguments.
func TestUnsupportedVerb(t *testing.T) {
	for _, args := range [][]string{nil, {"--help"}, {"-o", "x.arrow", "-d", "1s", "u:./prog:f"}} {
		var out, errb bytes.Buffer
		code := unsupportedVerb("record", "darwin", "arm64")(args, &out, &errb)
		want := "bpftape record: recording needs Linux on x86-64 or arm64 (linux/amd64, linux/arm64); this is a darwin/arm64 build, which analyses captures: 'bpftape --help' lists its verbs\n"
		if code != exitUsage || out.Len() != 0 || errb.String() != want {
			t.Errorf("record %q: exit %d, stdout %q, stderr %q; want exit %d and %q", args, code, out.String(), errb.String(), exitUsage, want)
		}
	}
	if got, want := unsupportedSummary(doctorSummary, "windows", "amd64"),
		doctorSummary+" (needs Linux on x86-64 or arm64, linux/amd64, linux/arm64: not in this windows/amd64 build)"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}

// TestRecordingVerbsListed: every build has the recording verbs, and
// 'bpftape --help' lists them; a build that records gives them their
// summaries as they are, any other says they need Linux and refuses them.
func TestRecordingVerbsListed(t *testing.T) {
	help, _, code := runCLI(t, "--help")
	if code != exitOK {
		t.Fatalf("--help: exit %d", code)
	}
	for _, rv := range recordingVerbs {
		v, ok := verbs[rv.name]
		if !ok {
			t.Errorf("no verb %s", rv.name)
			continue
		}
		want := rv.summary
		if !recordingBuild {
			want = unsupportedSummary(rv.summary, runtime.GOOS, runtime.GOARCH)
		}
		if v.summary != want {
			t.Errorf("%s: summary %q, want %q", rv.name, v.summary, want)
		}
		if !strings.Contains(help, "  "+rv.name+" ") || !strings.Contains(help, want) {
			t.Errorf("--help does not list %s as %q:\n%s", rv.name, want, help)
		}
		if recordingBuild {
			if strings.Contains(help, "needs Linux") {
				t.Errorf("--help of a build that records says a verb needs Linux:\n%s", help)
			}
			continue
		}
		stdout, stderr, code := runCLI(t, rv.name, "-h")
		if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 ||
			!strings.Contains(stderr, runtime.GOOS+"/"+runtime.GOARCH) {
			t.Errorf("%s -h: exit %d, stdout %q, stderr %q", rv.name, code, stdout, stderr)
		}
	}
}
