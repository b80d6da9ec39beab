//go:build linux && amd64

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/internal/testutil"
	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/record/tracefs"
)

// discoverSrc has functions with a struct pointer and an int, a struct by
// value and a double (which a uprobe cannot read), and no parameters.
const discoverSrc = `#include <stdio.h>

struct request { int id; const char *path; };
struct pair { long a, b; };

__attribute__((noinline)) int handle_request(struct request *req, int size) { return req->id + size; }
__attribute__((noinline)) long handle_pair(struct pair p, double d, long n) { return p.a + p.b + (long)d + n; }
__attribute__((noinline)) void handle_nothing(void) { puts("nothing"); }

int main(void)
{
	struct request r = {1, "/"};
	struct pair p = {1, 2};
	handle_nothing();
	return handle_request(&r, 3) + (int)handle_pair(p, 1.5, 4);
}
`

// discoverProg builds discoverSrc with -g into a new directory.
func discoverProg(t *testing.T) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "discover.c")
	if err := os.WriteFile(src, []byte(discoverSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	return testutil.BuildC(t, src, "discover", "-g")
}

// runTool runs a binutils tool, skipping the test without it.
func runTool(t *testing.T, args ...string) {
	t.Helper()
	if _, err := exec.LookPath(args[0]); err != nil {
		t.Skipf("skipping: no %s", args[0])
	}
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
}

// TestListPrototypes checks that list -v prints a function's prototype
// from DWARF, as a spec with the parameters a uprobe records by default
// and each parameter's argN, and that each spec parses.
func TestListPrototypes(t *testing.T) {
	exe := discoverProg(t)
	code, out, errs := listCmd(t, "-v", exe, "handle_*")
	if code != exitOK {
		t.Fatalf("list -v: exit %d\n%s%s", code, out, errs)
	}
	q := regexp.QuoteMeta
	for _, want := range []string{
		`(?m)^` + q("uprobe:"+exe+":handle_request(req,size)") + ` +# 0x[0-9a-f]+, \d+ bytes; ` +
			q("int handle_request(struct request *req, int size)") + `\n` +
			q("#   arg0: req (struct request *)") + `\n` +
			q("#   arg1: size (int)") + `$`,
		// Only n is recorded: p is a struct (in rdi:rsi), d in xmm0.
		`(?m)^` + q("uprobe:"+exe+":handle_pair(n)") + ` +# .*; ` +
			q("long int handle_pair(struct pair p, double d, long int n)") + `\n` +
			q("#   p (struct pair) at rdi:rsi: not recorded by default: name its members") + `\n` +
			q("#   d (double): not recorded: ") + `.*xmm0.*\n` +
			q("#   arg2: n (long int)") + `$`,
		`(?m)^` + q("uprobe:"+exe+":handle_nothing") + ` +# .*; ` + q("void handle_nothing(void)") + `$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("list -v output does not match\n%s\ngot:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if spec, _, _ := strings.Cut(line, " "); strings.HasPrefix(spec, "uprobe:") {
			if _, err := probespec.Parse(spec); err != nil {
				t.Errorf("listed spec %s does not parse: %v", spec, err)
			}
		}
	}
	if strings.Contains(out, "no parameter types") {
		t.Errorf("a binary with DWARF has the no-types note:\n%s", out)
	}

	// Without -v the listing is as it was: no DWARF is read.
	_, plain, _ := listCmd(t, exe, "handle_request")
	if !regexp.MustCompile(`(?m)^` + q("uprobe:"+exe+":handle_request") + ` +# 0x[0-9a-f]+, \d+ bytes$`).MatchString(plain) {
		t.Errorf("list without -v:\n%s", plain)
	}
}

// TestListPrototypesDebugFile checks that the prototypes of a stripped
// binary come from its separate debug file.
func TestListPrototypesDebugFile(t *testing.T) {
	full := discoverProg(t)
	dir := t.TempDir()
	bin, debug := filepath.Join(dir, "discover"), filepath.Join(dir, "discover.debug")
	runTool(t, "objcopy", "--only-keep-debug", full, debug)
	runTool(t, "strip", "--strip-all", "-o", bin, full)
	runTool(t, "objcopy", "--add-gnu-debuglink="+debug, bin)
	code, out, errs := listCmd(t, "-v", "--debug-dir", dir, bin, "handle_request")
	if code != exitOK {
		t.Fatalf("list -v: exit %d\n%s%s", code, out, errs)
	}
	want := "uprobe:" + bin + ":handle_request(req,size)"
	if !strings.Contains(out, want) || !strings.Contains(out, "int handle_request(struct request *req, int size)") {
		t.Errorf("list -v of a stripped binary with a debug file: want %s and its prototype, got:\n%s", want, out)
	}
}

// TestListPrototypesNoDWARF checks that a binary without DWARF lists its
// functions as without -v, under one note that says why.
func TestListPrototypesNoDWARF(t *testing.T) {
	full := discoverProg(t)
	bin := filepath.Join(t.TempDir(), "discover")
	runTool(t, "strip", "--strip-debug", "-o", bin, full)
	code, out, errs := listCmd(t, "-v", "--debug-dir", t.TempDir(), bin, "handle_*")
	if code != exitOK {
		t.Fatalf("list -v: exit %d\n%s%s", code, out, errs)
	}
	notes := regexp.MustCompile(`(?m)^# no parameter types: `+regexp.QuoteMeta(bin)+` has no DWARF.*$`).FindAllString(out, -1)
	if len(notes) != 1 {
		t.Errorf("want one note saying why no types are shown, got %d:\n%s", len(notes), out)
	}
	if strings.Contains(out, "ctypes:") || strings.Contains(out, "elfsym:") {
		t.Errorf("the note names packages:\n%s", out)
	}
	for _, fn := range []string{"handle_request", "handle_pair", "handle_nothing"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta("uprobe:"+bin+":"+fn) + ` +# 0x[0-9a-f]+, \d+ bytes$`).MatchString(out) {
			t.Errorf("%s is not listed as without types:\n%s", fn, out)
		}
	}
}

// kernelReason runs cmd (list or record) on a kernel probe spec and
// returns the reason it gives for failing: its one line of stderr after
// "bpftape CMD: " and the prefix, which is the spec followed by ": ".
func kernelReason(t *testing.T, cmd, prefix string, args ...string) string {
	t.Helper()
	var out, errb strings.Builder
	code := run(append([]string{cmd}, args...), &out, &errb)
	if code == exitOK {
		t.Fatalf("%s %v: exit 0 on a kernel without them\n%s", cmd, args, out.String())
	}
	line := strings.TrimSpace(errb.String())
	reason, ok := strings.CutPrefix(line, "bpftape "+cmd+": "+prefix)
	if !ok || strings.Contains(reason, "\n") {
		t.Fatalf("%s %v: want one line starting %q, got:\n%s", cmd, args, "bpftape "+cmd+": "+prefix, errb.String())
	}
	return reason
}

// TestListKernelUnavailable checks that listing kernel functions for a
// probe kind the kernel lacks fails with the reason record gives.
func TestListKernelUnavailable(t *testing.T) {
	testutil.RequireRoot(t, "recording")
	_, err := os.Stat("/sys/bus/event_source/devices/kprobe")
	events := false
	if dir, ok := tracefs.Find(); ok {
		_, eerr := os.Stat(filepath.Join(dir, "kprobe_events"))
		events = eerr == nil
	}
	out := filepath.Join(t.TempDir(), "out.arrow")
	t.Run("kprobe", func(t *testing.T) {
		if err == nil || events {
			t.Skip("skipping: this kernel has kprobes")
		}
		for _, spec := range []string{"k:vfs_rea*", "k:vfs_read", "kr:vfs_read", "kprobe:vfs_*"} {
			list := kernelReason(t, "list", spec+": ", spec)
			rec := kernelReason(t, "record", "probe "+spec+": ", "-o", out, spec)
			if list != rec {
				t.Errorf("%s: list says\n  %s\nrecord says\n  %s", spec, list, rec)
			}
			if !strings.Contains(list, "this kernel has no kprobes") {
				t.Errorf("list %s: %s", spec, list)
			}
		}
	})
	t.Run("fentry", func(t *testing.T) {
		for _, kind := range []string{"f", "fr"} {
			var stdout, stderr strings.Builder
			if run([]string{"list", kind + ":vfs_rea*"}, &stdout, &stderr) == exitOK {
				t.Skip("skipping: this kernel has fentry and fexit")
			}
			// record's reason, up to what it adds of the function.
			rec := kernelReason(t, "record", "probe "+kind+":vfs_read: ", "-o", out, kind+":vfs_read")
			rec, _, found := strings.Cut(rec, "; kernel function vfs_read exists")
			if !found || !strings.Contains(rec, "probes are not available") && !strings.Contains(rec, "refused") {
				t.Skipf("skipping: record %s:vfs_read fails for another reason: %s", kind, rec)
			}
			for _, spec := range []string{kind + ":vfs_rea*", kind + ":vfs_read"} {
				if list := kernelReason(t, "list", spec+": ", spec); !strings.HasPrefix(list, rec+"; ") {
					t.Errorf("%s: list says\n  %s\nrecord says\n  %s", spec, list, rec)
				}
			}
			// A pattern gets the same reason from record as from list.
			spec := kind + ":vfs_rea*"
			if pat := kernelReason(t, "record", "probe "+spec+": ", "-o", out, spec); !strings.HasPrefix(pat, rec+"; ") {
				t.Errorf("record %s says\n  %s\nwant the reason\n  %s", spec, pat, rec)
			}
		}
	})
}
