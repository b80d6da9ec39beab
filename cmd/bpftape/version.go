package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"
)

func init() {
	register("version", "print the version, the commit it was built from, the Go release and the target platform", runVersion)
}

// The source a binary was built from, for builds whose build info has no
// vcs.revision: outside a git checkout, or with -buildvcs=false (make dist
// sets them from git with -ldflags -X, and a packager building from a
// source tarball may set them the same way):
//
//	-X main.buildCommit=SHA -X main.buildModified=true|false -X main.buildTime=RFC3339
var (
	buildCommit   string
	buildModified string
	buildTime     string
)

// unknown stands for what the binary does not know about its build.
const unknown = "unknown"

// buildFacts is what 'bpftape version' prints, and its --json object.
type buildFacts struct {
	Version    string `json:"version"`
	Commit     string `json:"commit"`      // the full commit hash, or "unknown"
	CommitTime string `json:"commit_time"` // the commit's time (RFC 3339, UTC), or "unknown"
	Modified   *bool  `json:"modified"`    // the tree had changes not committed; null when unknown
	Go         string `json:"go"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	Target     string `json:"target"` // OS/ARCH, as GOOS/GOARCH name them
}

// readBuildFacts describes this binary: bi is its build info (nil when it
// has none, as in tests).
func readBuildFacts(bi *debug.BuildInfo) buildFacts {
	f := buildFacts{
		Version:    Version,
		Commit:     unknown,
		CommitTime: unknown,
		Go:         runtime.Version(),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		Target:     runtime.GOOS + "/" + runtime.GOARCH,
	}
	vcs := map[string]string{}
	if bi != nil {
		for _, s := range bi.Settings {
			vcs[s.Key] = s.Value
		}
	}
	// One source for the three, never a commit from one and a state from
	// the other: the build info's when go build recorded a revision, else
	// the linker's.
	commit, modified, when := vcs["vcs.revision"], vcs["vcs.modified"], vcs["vcs.time"]
	if commit == "" {
		commit, modified, when = buildCommit, buildModified, buildTime
	}
	if commit != "" {
		f.Commit = commit
	}
	if when != "" {
		f.CommitTime = when
	}
	if m, err := strconv.ParseBool(modified); err == nil && commit != "" {
		f.Modified = &m
	}
	return f
}

const versionHelp = `
Prints, one per line: bpftape's version (the first line, which is all
'bpftape --version' prints, and what every capture records as its tool,
shown by 'bpftape info'), the commit it was built from and that commit's
time, whether the source tree had changes not committed (modified), the Go
release that built it, and the platform it was built for (target, as
GOOS/GOARCH). What the build did not record is "unknown": go build
records the commit when it runs in a git checkout (unless given
-buildvcs=false), and make dist does in a git checkout whatever the Go
settings, or takes it from COMMIT=SHA outside one.

--json prints one object: version, commit, commit_time, modified (true,
false, or null when unknown), go, os, arch and target.

Examples:
  bpftape version
  bpftape --version
  bpftape version --json | jq -r .commit
`

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("version", "[--json]", versionHelp, stdout)
	asJSON := fs.Bool("json", false, "print JSON")
	if code, ok := parseNoArgs(fs, "version", args, stderr); !ok {
		return code
	}
	bi, _ := debug.ReadBuildInfo()
	f := readBuildFacts(bi)
	w := bufio.NewWriter(stdout)
	if *asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(f); err != nil {
			return fail(stderr, "version", err)
		}
	} else {
		printVersion(w, f)
	}
	if err := w.Flush(); err != nil {
		return fail(stderr, "version", err)
	}
	return exitOK
}

func printVersion(w io.Writer, f buildFacts) {
	modified := unknown
	if f.Modified != nil {
		modified = strconv.FormatBool(*f.Modified)
	}
	fmt.Fprintf(w, "bpftape %s\n", f.Version)
	fmt.Fprintf(w, "commit:    %s\n", f.Commit)
	fmt.Fprintf(w, "committed: %s\n", f.CommitTime)
	fmt.Fprintf(w, "modified:  %s\n", modified)
	fmt.Fprintf(w, "go:        %s\n", f.Go)
	fmt.Fprintf(w, "target:    %s\n", f.Target)
}
