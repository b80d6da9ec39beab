package resolve

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/record/tracefs"
	"github.com/bpftape/bpftape/record/usdt"
)

// TestGlob checks which names a glob selects, as bpftrace -l does.
func TestGlob(t *testing.T) {
	type name struct{ whole, last, group string }
	usdtArgs1 := name{"torture:args1", "args1", ""}
	usdtArgs12 := name{"torture:args12", "args12", ""}
	fn := name{"torturelib_fire", "torturelib_fire", ""}
	exitWrite := name{"syscalls:sys_exit_write", "sys_exit_write", "syscalls"}
	exitWritev := name{"syscalls:sys_exit_writev", "sys_exit_writev", "syscalls"}
	switchTP := name{"sched:sched_switch", "sched_switch", "sched"}
	for _, c := range []struct {
		glob string
		yes  []name
		no   []name
	}{
		{"", []name{usdtArgs1, fn, exitWrite, switchTP}, nil},
		// A glob with ':' matches the whole name, one without the last part.
		{"torture:args1*", []name{usdtArgs1, usdtArgs12}, []name{fn}},
		{"args1?", []name{usdtArgs12}, []name{usdtArgs1}},
		{"*fire", []name{fn}, []name{usdtArgs1}},
		{"sys_*_write", []name{exitWrite}, []name{exitWritev, switchTP}},
		{"sched:*", []name{switchTP}, []name{exitWrite}},
		{"torture*", []name{fn}, []name{usdtArgs1}}, // the probe's last part is args1
		// Without a wildcard: exact, the whole name, its last part, or a
		// category; never a substring, never ignoring case.
		{"args1", []name{usdtArgs1}, []name{usdtArgs12}},
		{"torture:args12", []name{usdtArgs12}, []name{usdtArgs1}},
		{"fire", nil, []name{fn}},
		{"syscalls:sys_exit_write", []name{exitWrite}, []name{exitWritev}},
		{"syscalls", []name{exitWrite, exitWritev}, []name{switchTP}},
		{"SWITCH", nil, []name{switchTP}},
		{"torture", nil, []name{usdtArgs1}}, // a provider is no category
	} {
		f, err := ParseGlob(c.glob)
		if err != nil {
			t.Fatalf("ParseGlob(%q): %v", c.glob, err)
		}
		if f.String() != c.glob {
			t.Errorf("ParseGlob(%q).String() = %q", c.glob, f)
		}
		for _, n := range c.yes {
			if !f.match(n.whole, n.last, n.group) {
				t.Errorf("glob %q does not select %s", c.glob, n.whole)
			}
		}
		for _, n := range c.no {
			if f.match(n.whole, n.last, n.group) {
				t.Errorf("glob %q selects %s", c.glob, n.whole)
			}
		}
	}
	for _, bad := range []string{"sched:[", "[", "a[b-"} {
		if _, err := ParseGlob(bad); !usage.Is(err) || !strings.Contains(err.Error(), "bad filter") {
			t.Errorf("ParseGlob(%q): %v, want a usage error", bad, err)
		}
	}
}

// TestListedTypes checks the types the listing says arguments and fields
// are recorded as.
func TestListedTypes(t *testing.T) {
	for _, c := range []struct {
		arg  usdt.Arg
		want string
	}{
		{usdt.Arg{Size: 8, Signed: true}, "s64"},
		{usdt.Arg{Size: 2}, "u16"},
		{usdt.Arg{Size: 1, Signed: true}, "s8"},
	} {
		got, err := USDTArgType(c.arg)
		if err != nil || probespec.TypeName(got) != c.want {
			t.Errorf("USDTArgType(%+v) = %v, %v, want %s", c.arg, got, err, c.want)
		}
	}
	if _, err := USDTArgType(usdt.Arg{Size: 3}); err == nil {
		t.Error("USDTArgType of a 3-byte argument succeeded")
	}
	for _, c := range []struct {
		f    tracefs.Field
		want format.Type
	}{
		{tracefs.Field{Kind: tracefs.Int, Size: 4, Signed: true}, format.Int32},
		{tracefs.Field{Kind: tracefs.Int, Size: 8, CType: "const char *"}, format.Uint64},
		{tracefs.Field{Kind: tracefs.CharArray, Size: 16}, format.String},
		{tracefs.Field{Kind: tracefs.DataLoc, Size: 4}, format.String},
		{tracefs.Field{Kind: tracefs.Other, Size: 24}, format.TypeInvalid},
	} {
		if got := TracepointFieldType(&c.f); got != c.want {
			t.Errorf("TracepointFieldType(%+v) = %v, want %v", c.f, got, c.want)
		}
	}
}

// TestListTracepoints lists live tracepoints through the glob, and a word
// that names no binary as a tracepoint glob.
func TestListTracepoints(t *testing.T) {
	if _, err := tracefs.Dir(); err != nil {
		t.Skipf("skipping: no tracefs: %v", err)
	}
	names := func(l *Listing) []string {
		var out []string
		for _, tp := range l.Tracepoints {
			if tp.Spec != "tracepoint:"+tp.Name {
				t.Errorf("%s has spec %q", tp.Name, tp.Spec)
			}
			out = append(out, tp.Name)
		}
		return out
	}
	all, err := List(ListQuery{Target: "tracepoint"})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(all); !slices.IsSorted(got) || !slices.Contains(got, "sched:sched_switch") || all.Len() != len(got) {
		t.Fatalf("List(tracepoint) has %d names, unsorted or without sched:sched_switch", len(got))
	}
	for _, c := range []struct {
		q         ListQuery
		must      []string
		mustNot   []string
		allPrefix string
	}{
		{ListQuery{Target: "t", Glob: "sched:*"}, []string{"sched:sched_switch", "sched:sched_process_exec"}, []string{"syscalls:sys_enter_openat"}, "sched:"},
		{ListQuery{Target: "t", Glob: "sys_*_write"}, []string{"syscalls:sys_enter_write", "syscalls:sys_exit_write"}, []string{"syscalls:sys_enter_writev"}, "syscalls:"},
		{ListQuery{Target: "t", Glob: "sched_switch"}, []string{"sched:sched_switch"}, []string{"sched:sched_switch_x", "syscalls:sys_enter_openat"}, "sched:"},
		{ListQuery{Target: "t", Glob: "SWITCH"}, nil, []string{"sched:sched_switch"}, ""},
		{ListQuery{Target: "t", Glob: "openat"}, nil, []string{"syscalls:sys_enter_openat", "syscalls:sys_exit_openat"}, ""},
		{ListQuery{Target: "t", Glob: "syscalls:sys_exit_openat"}, []string{"syscalls:sys_exit_openat"}, []string{"syscalls:sys_enter_openat"}, "syscalls:"},
		{ListQuery{Target: "t", Glob: "syscalls"}, []string{"syscalls:sys_enter_openat", "syscalls:sys_exit_openat"}, []string{"sched:sched_switch"}, "syscalls:"},
		// A lone word that names no binary is a tracepoint glob.
		{ListQuery{Target: "syscalls:sys_exit_write*"}, []string{"syscalls:sys_exit_write", "syscalls:sys_exit_writev"}, []string{"syscalls:sys_enter_write"}, "syscalls:sys_exit_write"},
	} {
		l, err := List(c.q)
		if err != nil {
			t.Errorf("%+v: %v", c.q, err)
			continue
		}
		got := names(l)
		for _, m := range c.must {
			if !slices.Contains(got, m) {
				t.Errorf("%+v lacks %s", c.q, m)
			}
		}
		for _, m := range c.mustNot {
			if slices.Contains(got, m) {
				t.Errorf("%+v has %s", c.q, m)
			}
		}
		for _, g := range got {
			if !strings.HasPrefix(g, c.allPrefix) {
				t.Errorf("%+v has %s", c.q, g)
			}
		}
		if len(l.Binaries) != 0 || l.Len() != len(got) {
			t.Errorf("%+v: %d binaries, Len %d for %d tracepoints", c.q, len(l.Binaries), l.Len(), len(got))
		}
	}

	l, err := List(ListQuery{Target: "sched:sched_process_exec", TracepointFields: true})
	if err != nil || len(l.Tracepoints) != 1 {
		t.Fatalf("sched:sched_process_exec: %v, %+v", err, l)
	}
	tp := l.Tracepoints[0]
	var filename *tracefs.Field
	for i := range tp.Fields {
		if tp.Fields[i].Name == "filename" {
			filename = &tp.Fields[i]
		}
	}
	if tp.FormatErr != nil || filename == nil || TracepointFieldType(filename) != format.String {
		t.Errorf("sched:sched_process_exec fields %+v (%v): want filename, a string", tp.Fields, tp.FormatErr)
	}
	if l.Glob.String() != "sched:sched_process_exec" {
		t.Errorf("the word taken as a glob is %q", l.Glob)
	}

	_, err = List(ListQuery{Target: "no_such_thing_xyz"})
	if err == nil || !strings.Contains(err.Error(), `no tracepoint matches "no_such_thing_xyz", and it names no binary`) || usage.Is(err) {
		t.Errorf("a word that is neither: %v", err)
	}
	if _, err := List(ListQuery{Target: "t", Glob: "sched:["}); !usage.Is(err) {
		t.Errorf("a bad glob: %v, want a usage error", err)
	}
}

// TestListBinary lists a binary's USDT probes and functions as specs that
// parse, through the glob, and refuses what is no ELF file.
func TestListBinary(t *testing.T) {
	exe := buildProbes(t)
	l, err := List(ListQuery{Target: exe})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Binaries) != 1 || l.Binaries[0].Path != exe || len(l.Binaries[0].BuildID) != 40 {
		t.Fatalf("List(%s): %+v", exe, l.Binaries)
	}
	b := l.Binaries[0]
	if len(b.USDT) == 0 || len(b.Functions) == 0 || l.Len() != len(b.USDT)+len(b.Functions) {
		t.Fatalf("%d USDT probes, %d functions, Len %d", len(b.USDT), len(b.Functions), l.Len())
	}
	for _, u := range b.USDT {
		s, err := probespec.Parse(u.Spec)
		if err != nil || s.Kind != probespec.USDT || s.Probe != u.Name || s.Provider != u.Provider {
			t.Errorf("USDT spec %q: %+v, %v", u.Spec, s, err)
		}
	}
	var tick *ListedFunction
	for i, f := range b.Functions {
		s, err := probespec.Parse(f.Spec)
		if err != nil || s.Kind != probespec.Uprobe || s.Symbol != f.Name || s.Binary != exe {
			t.Errorf("function spec %q: %+v, %v", f.Spec, s, err)
		}
		if f.Name == "tick" {
			tick = &b.Functions[i]
		}
	}
	if tick == nil || tick.Addr == 0 {
		t.Fatalf("no function tick in %s", exe)
	}

	l, err = List(ListQuery{Target: exe, Glob: "tick", Functions: true})
	if err != nil || l.Len() != 1 || len(l.Binaries[0].USDT) != 0 || l.Binaries[0].Functions[0].Name != "tick" {
		t.Errorf("--funcs %s tick: %v, %+v", exe, err, l)
	}
	l, err = List(ListQuery{Target: exe, Glob: "no_such_probe"})
	if err != nil || l.Len() != 0 || len(l.Binaries) != 1 {
		t.Errorf("a glob that matches nothing: %v, %+v", err, l)
	}

	notELF := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := List(ListQuery{Target: notELF, Glob: "x"}); err == nil || !strings.Contains(err.Error(), "not an ELF file") {
		t.Errorf("a script: %v", err)
	}
	if _, err := List(ListQuery{Target: "./no/such/binary"}); err == nil {
		t.Error("a missing path listed")
	}
}
