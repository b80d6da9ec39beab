//go:build linux && amd64

package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/testutil"
)

// writeArgNCapture writes a capture of rx(nc, buf, size) as a uprobe
// recorded without a field list records it, with its DWARF names: rx, its
// return rx:return, and listed, a probe of rx recorded with the field
// list (arg2). Each call is listed, then rx, then rx:return.
func writeArgNCapture(t *testing.T, path string) {
	t.Helper()
	const start = int64(5_000_000_000)
	m := &format.Meta{
		Tool: "bpftape test", Host: "h", Kernel: "6.1.0-test",
		StartWall: time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC), StartBoot: start,
		Probes: []format.Probe{
			{Name: "rx", Kind: "uprobe", Spec: "u:/bin/app:rx", Target: "/bin/app", Fields: []format.Field{
				{Name: "nc", Type: format.Int32}, {Name: "buf", Type: format.Uint64}, {Name: "size", Type: format.Uint64}}},
			{Name: "rx:return", Kind: "uretprobe", Spec: "ur:/bin/app:rx", Target: "/bin/app",
				Fields: []format.Field{{Name: "retval", Type: format.Int64}}},
			{Name: "listed", Kind: "uprobe", Spec: "listed=u:/bin/app:rx(arg2)", Target: "/bin/app",
				Fields: []format.Field{{Name: "arg2", Type: format.Uint64}}},
		},
	}
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: 256})
	if err != nil {
		t.Fatal(err)
	}
	ts := start + 1000
	for i := range 600 {
		nc, size := uint64(i%3), uint64(1)<<(i%14)+uint64(i)
		tid := uint32(21 + i%2)
		d := int64(1000 + (i*7919)%3_000_000)
		for _, e := range []format.Event{
			{Time: ts, Probe: 2, Ints: []uint64{size}},
			{Time: ts + 10, Probe: 0, Ints: []uint64{nc, 0x7f0000 + uint64(i)*64, size}},
			{Time: ts + d, Probe: 1, Ints: []uint64{size / 2}},
		} {
			e.PID, e.TID, e.Comm = 20, tid, []byte("app")
			if err := w.Append(&e); err != nil {
				t.Fatal(err)
			}
		}
		ts += d + 1000
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestArgNVerbs: every verb that names a field takes argN for the N-th
// parameter of a probe recorded without a field list, and prints what
// naming the parameter prints; only the labels that are the name typed
// differ. A probe recorded with a field list keeps exactly its fields.
func TestArgNVerbs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "argn.arrow")
	writeArgNCapture(t, path)
	for _, tc := range []struct {
		argN, named []string
		// relabel is what the argN form prints where the named form
		// prints the field's name ("" when the outputs are the same).
		relabel, name string
	}{
		{[]string{"hist", path, "rx", "arg2", "--label", "size"}, []string{"hist", path, "rx", "size"}, "", ""},
		{[]string{"hist", path, "rx", "arg2"}, []string{"hist", path, "rx", "size"}, "arg2", "size"},
		{[]string{"hist", path, "rx", "arg2", "--style", "bpftrace"}, []string{"hist", path, "rx", "size", "--style", "bpftrace"}, "arg2", "size"},
		{[]string{"hist", path, "rx", "arg2", "--json"}, []string{"hist", path, "rx", "size", "--json"}, "arg2", "size"},
		{[]string{"hist", path, "rx", "arg2", "--by", "arg0", "--label", "size"}, []string{"hist", path, "rx", "size", "--by", "nc"}, "arg0", "nc"},
		{[]string{"events", path, "-f", `rx "nc=%d size=%d", arg0, arg2`}, []string{"events", path, "-f", `rx "nc=%d size=%d", nc, size`}, "", ""},
		{[]string{"latency", path, "listed", "rx", "--by", "arg0"}, []string{"latency", path, "listed", "rx", "--by", "nc"}, "arg0", "nc"},
		{[]string{"requests", path, "rx", "arg2", "rx:return", "retval", "--total-label", "size"},
			[]string{"requests", path, "rx", "size", "rx:return", "retval"}, "", ""},
		{[]string{"requests", path, "listed", "arg2", "rx", "arg2", "--key", "arg2"},
			[]string{"requests", path, "listed", "arg2", "rx", "size", "--key", "arg2", "--end-label", "arg2"}, "", ""},
		{[]string{"compare", path, "rx", "arg2", "listed", "arg2", "--label", "size"}, []string{"compare", path, "rx", "size", "listed", "arg2"}, "rx.arg2", "rx.size"},
		{[]string{"heatmap", path, "rx", "arg2", "--title", "rx size"}, []string{"heatmap", path, "rx", "size"}, "arg2", "size"},
	} {
		want, errWant, code := runCLI(t, tc.named...)
		if code != exitOK {
			t.Fatalf("%q: exit %d: %s", tc.named[2:], code, errWant)
		}
		got, errOut, code := runCLI(t, tc.argN...)
		if code != exitOK {
			t.Errorf("%q: exit %d: %s", tc.argN[2:], code, errOut)
			continue
		}
		if tc.relabel != "" {
			if !strings.Contains(got, tc.relabel) {
				t.Errorf("%q does not print %q:\n%s", tc.argN[2:], tc.relabel, got)
			}
			got = strings.ReplaceAll(got, tc.relabel, tc.name)
		}
		if got != want || errOut != errWant {
			t.Errorf("%q: stderr %q\n%s\nwant, as %q prints (stderr %q),\n%s", tc.argN[2:], errOut, got, tc.named[2:], errWant, want)
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"hist", path, "rx", "arg3"}, `probe rx has no field "arg3": it recorded 3 parameters, arg0..arg2; its fields: nc, buf, size`},
		{[]string{"hist", path, "rx", "len"}, `probe rx has no field "len"; its fields: nc, buf, size (or arg0..arg2)`},
		{[]string{"hist", path, "listed", "arg0"}, `probe listed has no field "arg0"; its fields: arg2`},
		{[]string{"hist", path, "rx:return", "arg0"}, `probe rx:return has no field "arg0"; its fields: retval`},
		{[]string{"events", path, "-f", `rx "%d", arg3`}, `arg0..arg2`},
	} {
		_, errOut, code := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, %q; want %d and %q", tc.args[2:], code, errOut, exitUsage, tc.want)
		}
	}
	if out, _, code := runCLI(t, "hist", path, "listed", "arg2"); code != exitOK || !strings.Contains(out, "arg2 ") {
		t.Errorf("hist of a listed field: exit %d\n%s", code, out)
	}

	info, errOut, code := runCLI(t, "info", path)
	want := "\n          args   arg0..arg2 name nc, buf, size\nrx:return "
	if code != exitOK || !strings.Contains(info, want) || strings.Count(info, " args ") != 1 {
		t.Errorf("info: exit %d, stderr %q\n%s\nwant it to hold %q", code, errOut, info, want)
	}
}

// TestArgNRecord records a function compiled with debug info without a
// field list, and checks that argN names its parameters: the histogram of
// arg1 is that of size, the second parameter, and info says which field
// each argN names.
func TestArgNRecord(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe := testutil.BuildC(t, "../../testdata/exprs/exprs.c", "exprs", "-O2", "-g")
	out := filepath.Join(t.TempDir(), "a.arrow")
	truth, err := exec.Command(exe, "40").Output()
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, l := range strings.Split(string(truth), "\n") {
		if f := strings.Fields(l); len(f) == 13 && f[0] == "rx" {
			calls++
		}
	}
	if calls != 40 {
		t.Fatalf("workload printed %d calls, want 40:\n%s", calls, truth)
	}
	_, stderr, code := runCLI(t, "record", "-o", out, "-c", exe+" 40", "u:"+exe+":rx")
	if code != 0 {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	info, stderr, code := runCLI(t, "info", out)
	if code != 0 {
		t.Fatalf("info: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(info, "args   arg0..arg3 name req, size, delta, label\n") {
		t.Errorf("info has no argN note for rx(req, size, delta, label):\n%s", info)
	}
	want, stderr, code := runCLI(t, "hist", out, "rx", "size")
	if code != 0 {
		t.Fatalf("hist rx size: exit %d\n%s", code, stderr)
	}
	counted := int64(0)
	for _, m := range regexp.MustCompile(`: (\d+) +\|`).FindAllStringSubmatch(want, -1) {
		counted += testutil.Atoi(t, m[1])
	}
	if counted != int64(calls) {
		t.Errorf("hist rx size counts %d calls, want %d:\n%s", counted, calls, want)
	}
	got, stderr, code := runCLI(t, "hist", out, "rx", "arg1", "--label", "size")
	if code != 0 || got != want {
		t.Errorf("hist rx arg1: exit %d, stderr %q\n%s\nwant, as hist rx size prints,\n%s", code, stderr, got, want)
	}
	if _, stderr, code := runCLI(t, "hist", out, "rx", "arg4"); code != exitUsage || !strings.Contains(stderr, "it recorded 4 parameters, arg0..arg3") {
		t.Errorf("hist rx arg4: exit %d, %q", code, stderr)
	}
}
