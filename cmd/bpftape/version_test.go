package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// versionFields splits 'bpftape version' text into its first line and its
// "key: value" lines.
func versionFields(t *testing.T, out string) (first string, fields map[string]string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	fields = map[string]string{}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			t.Errorf("version line %q is not KEY: VALUE", l)
			continue
		}
		fields[k] = strings.TrimSpace(v)
	}
	return lines[0], fields
}

// TestVersionText: 'bpftape version' prints the version line --version
// prints, then the commit, its time, the tree's state, the Go release and
// the target this test runs on.
func TestVersionText(t *testing.T) {
	out, errOut, code := runCLI(t, "version")
	if code != exitOK || errOut != "" {
		t.Fatalf("version: exit %d, stderr %q", code, errOut)
	}
	first, fields := versionFields(t, out)
	if first != "bpftape "+Version {
		t.Errorf("first line %q, want %q", first, "bpftape "+Version)
	}
	short, _, code := runCLI(t, "--version")
	if code != exitOK || short != first+"\n" {
		t.Errorf("--version: exit %d, %q; want the first line of version, %q", code, short, first)
	}
	for _, k := range []string{"commit", "committed", "modified", "go", "target"} {
		if fields[k] == "" {
			t.Errorf("no %s in:\n%s", k, out)
		}
	}
	if len(fields) != 5 {
		t.Errorf("%d fields, want 5:\n%s", len(fields), out)
	}
	if want := runtime.GOOS + "/" + runtime.GOARCH; fields["target"] != want {
		t.Errorf("target %q, want %q", fields["target"], want)
	}
	if fields["go"] != runtime.Version() {
		t.Errorf("go %q, want %q", fields["go"], runtime.Version())
	}
	if m := fields["modified"]; m != "true" && m != "false" && m != unknown {
		t.Errorf("modified %q, want true, false or unknown", m)
	}
}

func TestVersionJSON(t *testing.T) {
	out, errOut, code := runCLI(t, "version", "--json")
	if code != exitOK || errOut != "" {
		t.Fatalf("version --json: exit %d, stderr %q", code, errOut)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("version --json: %v\n%s", err, out)
	}
	for _, k := range []string{"version", "commit", "commit_time", "modified", "go", "os", "arch", "target"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("no key %q in %s", k, out)
		}
	}
	if len(raw) != 8 {
		t.Errorf("%d keys, want 8: %s", len(raw), out)
	}
	var f buildFacts
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatal(err)
	}
	if f.Version != Version || f.Go != runtime.Version() || f.OS != runtime.GOOS || f.Arch != runtime.GOARCH ||
		f.Target != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("version --json: %+v; want version %s, %s, %s/%s", f, Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	text, _, _ := runCLI(t, "version")
	_, fields := versionFields(t, text)
	if fields["commit"] != f.Commit || fields["committed"] != f.CommitTime {
		t.Errorf("text commit %q %q, JSON %q %q", fields["commit"], fields["committed"], f.Commit, f.CommitTime)
	}
}

func TestVersionUsage(t *testing.T) {
	for _, args := range [][]string{{"version", "extra"}, {"version", "--bogus"}} {
		if _, errOut, code := runCLI(t, args...); code != exitUsage || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q; want %d and a message", args, code, errOut, exitUsage)
		}
	}
	out, _, code := runCLI(t, "version", "--help")
	if code != exitOK || !strings.Contains(out, "bpftape version --json") {
		t.Errorf("version --help: exit %d\n%s", code, out)
	}
	out, _, _ = runCLI(t, "--help")
	if !strings.Contains(out, "\n  version ") {
		t.Errorf("top-level help does not list version:\n%s", out)
	}
}

// TestVersionSources: the commit comes from the build info's vcs settings
// when go build recorded them, else from the values set with -ldflags -X,
// never a mix of the two; else it is unknown.
func TestVersionSources(t *testing.T) {
	defer func(c, m, w string) { buildCommit, buildModified, buildTime = c, m, w }(buildCommit, buildModified, buildTime)
	vcs := &debug.BuildInfo{Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "1111111111111111111111111111111111111111"},
		{Key: "vcs.time", Value: "2025-01-02T03:04:05Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	noVCS := &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "GOOS", Value: runtime.GOOS}}}
	modified := func(f buildFacts) string {
		if f.Modified == nil {
			return unknown
		}
		if *f.Modified {
			return "true"
		}
		return "false"
	}
	for _, tc := range []struct {
		name                    string
		bi                      *debug.BuildInfo
		ldCommit, ldMod, ldWhen string
		commit, when, mod       string
	}{
		{"build info", vcs, "", "", "", "1111111111111111111111111111111111111111", "2025-01-02T03:04:05Z", "true"},
		{"build info wins", vcs, "2222", "false", "2020-01-01T00:00:00Z", "1111111111111111111111111111111111111111", "2025-01-02T03:04:05Z", "true"},
		{"ldflags", noVCS, "2222", "false", "2020-01-01T00:00:00Z", "2222", "2020-01-01T00:00:00Z", "false"},
		{"ldflags, no build info", nil, "2222", "true", "", "2222", unknown, "true"},
		{"ldflags, bad modified", noVCS, "2222", "maybe", "", "2222", unknown, unknown},
		{"nothing", noVCS, "", "", "", unknown, unknown, unknown},
		{"state without commit", noVCS, "", "false", "", unknown, unknown, unknown},
	} {
		buildCommit, buildModified, buildTime = tc.ldCommit, tc.ldMod, tc.ldWhen
		f := readBuildFacts(tc.bi)
		if f.Commit != tc.commit || f.CommitTime != tc.when || modified(f) != tc.mod {
			t.Errorf("%s: commit %q, time %q, modified %s; want %q, %q, %s", tc.name, f.Commit, f.CommitTime, modified(f), tc.commit, tc.when, tc.mod)
		}
		if f.Version != Version || f.Target != runtime.GOOS+"/"+runtime.GOARCH {
			t.Errorf("%s: version %q, target %q", tc.name, f.Version, f.Target)
		}
	}
}

// TestVersionLdflags builds bpftape as make dist does, outside git's view
// (-buildvcs=false), with the commit given to the linker: a misspelt -X
// name is silently ignored by the linker, so only a real build shows that
// main.buildCommit, main.buildModified, main.buildTime and main.Version
// are the names.
func TestVersionLdflags(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "bpftape")
	ld := "-s -w -X main.Version=9.8.7 -X main.buildCommit=abc123 -X main.buildModified=false -X main.buildTime=2024-05-06T07:08:09Z"
	cmd := exec.Command("go", "build", "-buildvcs=false", "-trimpath", "-ldflags", ld, "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("bpftape version: %v", err)
	}
	first, fields := versionFields(t, string(out))
	if first != "bpftape 9.8.7" || fields["commit"] != "abc123" || fields["modified"] != "false" ||
		fields["committed"] != "2024-05-06T07:08:09Z" || fields["target"] != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("bpftape version of a build with -X:\n%s", out)
	}
}
