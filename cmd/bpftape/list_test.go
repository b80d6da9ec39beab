//go:build linux && amd64

package main

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/record/elfsym"
)

// listWorkload builds the USDT torture workload (gcc, non-PIE) and its
// library into a temporary directory.
func listWorkload(t *testing.T) (dir, exe, lib string) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("skipping: no gcc")
	}
	src, err := filepath.Abs("../../testdata/usdt-torture")
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	exe, lib = filepath.Join(dir, "torture"), filepath.Join(dir, "libtorture.so")
	for _, args := range [][]string{
		{"-O2", "-fPIC", "-shared", "-o", lib, src + "/torturelib.c"},
		{"-O2", "-fno-omit-frame-pointer", "-DFRAME_VARIANT=rbp", "-c", "-o", dir + "/frames_rbp.o", src + "/frames.c"},
		{"-Og", "-DFRAME_VARIANT=rsp", "-c", "-o", dir + "/frames_rsp.o", src + "/frames.c"},
		{"-O2", "-fno-omit-frame-pointer", "-fcf-protection=none", "-no-pie", "-fno-pie", "-o", exe, src + "/torture.c",
			src + "/torture_sem.c", dir + "/frames_rbp.o", dir + "/frames_rsp.o", src + "/forms.S", "-L" + dir, "-ltorture",
			"-Wl,-rpath," + dir},
	} {
		if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %v: %v\n%s", args, err, out)
		}
	}
	return dir, exe, lib
}

// listCmd runs 'bpftape list' in-process.
func listCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"list"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func symValue(t *testing.T, path, name string) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	for _, s := range syms {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("no %s in %s", name, path)
	return 0
}

// TestList checks list's output for a binary, a library and tracepoints,
// line by line against patterns, and its exit statuses.
func TestList(t *testing.T) {
	dir, exe, lib := listWorkload(t)
	t.Setenv("LD_LIBRARY_PATH", dir)
	q := regexp.QuoteMeta
	fn := symValue(t, exe, "torture_func")
	tests := []struct {
		name string
		args []string
		code int
		// want are patterns for the stdout lines, in order, each line
		// matched by its own pattern; a pattern "..." matches any number
		// of lines.
		want    []string
		wantErr string
	}{
		{name: "usdt glob", args: []string{exe, "torture:args1*"}, want: []string{
			`^# ` + q(exe) + ` \(build id [0-9a-f]{40}\)$`,
			`^usdt:` + q(exe) + `:torture:args1 +# 1 site: 0x[0-9a-f]+; 1 arg$`,
			`^usdt:` + q(exe) + `:torture:args10 +# 1 site: 0x[0-9a-f]+; 10 args$`,
			`^usdt:` + q(exe) + `:torture:args11 +# 1 site: 0x[0-9a-f]+; 11 args$`,
			`^usdt:` + q(exe) + `:torture:args12 +# 1 site: 0x[0-9a-f]+; 12 args$`,
		}},
		{name: "several sites, verbose", args: []string{"-v", "--usdt", exe, "inlined"}, want: []string{
			`^# `,
			`^usdt:` + q(exe) + `:torture:inlined  # [3-9] sites: 0x[0-9a-f]+(, 0x[0-9a-f]+)+; 2 args$`,
			`^#   at 0x[0-9a-f]+: arg0:s64=-8@%r\w+ arg1:u16=2@%\w+$`,
			"...",
			`^#   at 0x[0-9a-f]+: arg0:s64=-8@\S+ arg1:u16=2@\$\d$`,
		}},
		{name: "semaphore", args: []string{"--usdt", exe, "torture:guarded"}, want: []string{
			`^# `, `^usdt:` + q(exe) + `:torture:guarded  # 1 site: 0x[0-9a-f]+; 3 args; semaphore 0x[0-9a-f]+$`,
		}},
		{name: "13 args", args: []string{"-v", exe, "args13"}, want: []string{
			`^# `,
			`^usdt:` + q(exe) + `:torture_asm:args13  # 1 site: 0x[0-9a-f]+; 13 args \(a probe records at most 12: name them\)$`,
			`^#   at 0x[0-9a-f]+: arg0:u64=8@%rax .* arg12:u64=8@%r14$`,
		}},
		{name: "every operand form, verbose", args: []string{"-v", exe, "torture_asm:tls"}, want: []string{
			`^# `, `^usdt:`,
			`^#   at 0x[0-9a-f]+: arg0:s32=-4@%fs:torture_tls@tpoff arg1:s64=-8@%fs:torture_tls_arr@tpoff\(,%rcx,8\) ` +
				`arg2:s32=-4@%fs:\(%rdx\) arg3:u64=8@%fs:0 arg4:s64=-8@%fs:torture_tls_arr@tpoff\+16$`,
		}},
		{name: "functions", args: []string{"--funcs", exe, "torture_*"}, want: []string{
			`^# `,
			fmt.Sprintf(`^uprobe:%s:torture_func    # %#x, \d+ bytes$`, q(exe), fn),
			`^uprobe:` + q(exe) + `:torture_sem     # 0x[0-9a-f]+, \d+ bytes$`,
			`^uprobe:` + q(exe) + `:torture_static  # 0x[0-9a-f]+, \d+ bytes$`,
		}},
		{name: "library by name", args: []string{"--usdt", "libtorture"}, want: []string{
			`^# ` + q(lib) + ` `,
			`^usdt:` + q(lib) + `:torturelib:call     # 1 site: 0x[0-9a-f]+; 4 args; semaphore 0x[0-9a-f]+$`,
			`^usdt:` + q(lib) + `:torturelib:guarded  # 1 site: 0x[0-9a-f]+; 2 args; semaphore 0x[0-9a-f]+$`,
		}},
		{name: "library by path, functions", args: []string{lib, "*fire"}, want: []string{
			`^# `, `^uprobe:` + q(lib) + `:torturelib_fire  # 0x[0-9a-f]+, \d+ bytes$`,
		}},
		{name: "nothing matches", args: []string{exe, "no_such_probe"}, code: exitFailure, want: []string{`^# `},
			wantErr: `nothing matches "no_such_probe"`},
		{name: "not a binary", args: []string{"./no/such/binary"}, code: exitFailure, wantErr: "no/such/binary"},
		{name: "not ELF", args: []string{"../../README.md", "x"}, code: exitFailure, wantErr: "not an ELF file"},
		{name: "too many args", args: []string{"a", "b", "c"}, code: exitUsage, wantErr: "want [TARGET] [FILTER]"},
		{name: "bad flag", args: []string{"--nope"}, code: exitUsage, wantErr: "unknown flag --nope"},
		// Without a wildcard, a filter is an exact name, as in bpftrace -l.
		{name: "exact, not substring", args: []string{lib, "fire"}, code: exitFailure, want: []string{`^# `}, wantErr: `nothing matches "fire"`},
		{name: "exact", args: []string{lib, "torturelib_fire"}, want: []string{
			`^# `, `^uprobe:` + q(lib) + `:torturelib_fire  # 0x[0-9a-f]+, \d+ bytes$`,
		}},
	}
	if os.Geteuid() == 0 {
		tests = append(tests, []struct {
			name    string
			args    []string
			code    int
			want    []string
			wantErr string
		}{
			{name: "tracepoint", args: []string{"tracepoint", "syscalls:sys_exit_write"}, want: []string{
				`^tracepoint:syscalls:sys_exit_write$`, // exact: not sys_exit_writev
			}},
			{name: "tracepoint glob, verbose", args: []string{"-v", "syscalls:sys_exit_write*"}, want: []string{
				`^tracepoint:syscalls:sys_exit_write$`, `^#   __syscall_nr: s32 \(int\)$`, `^#   ret: s64 \(long\)$`,
				`^tracepoint:syscalls:sys_exit_writev$`, "...",
			}},
			{name: "tracepoint strings", args: []string{"-v", "sched:sched_process_exec"}, want: []string{
				`^tracepoint:sched:sched_process_exec$`, `^#   filename: string \(__data_loc char\[\]\)$`, `^#   pid: s32 \(pid_t\)$`,
				`^#   old_pid: s32 \(pid_t\)$`,
			}},
			{name: "tracepoint exact glob", args: []string{"t", "sched:sched_switch"}, want: []string{`^tracepoint:sched:sched_switch$`}},
			{name: "bad glob", args: []string{"t", "sched:["}, code: exitUsage, wantErr: "bad filter"},
			{name: "unknown word", args: []string{"no_such_thing_xyz"}, code: exitFailure,
				wantErr: `no tracepoint matches "no_such_thing_xyz", and it names no binary`},
		}...)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := listCmd(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.code, errs)
			}
			if tt.wantErr != "" && !strings.Contains(errs, tt.wantErr) {
				t.Errorf("stderr %q does not say %q", errs, tt.wantErr)
			}
			got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if out == "" {
				got = nil
			}
			if !matchLines(got, tt.want) {
				t.Errorf("output:\n%s\nwant lines matching:\n%s", out, strings.Join(tt.want, "\n"))
			}
		})
	}
}

// matchLines matches lines against patterns, one each, "..." matching any
// number of lines.
func matchLines(lines, pats []string) bool {
	if len(pats) == 0 {
		return len(lines) == 0
	}
	if pats[0] == "..." {
		for i := 0; i <= len(lines); i++ {
			if matchLines(lines[i:], pats[1:]) {
				return true
			}
		}
		return false
	}
	return len(lines) > 0 && regexp.MustCompile(pats[0]).MatchString(lines[0]) && matchLines(lines[1:], pats[1:])
}

// TestListPasteable checks that every line list prints for a binary is a
// probe spec record parses, followed by a shell comment, and records: the
// lines are passed to 'bpftape record' as they are printed.
func TestListPasteable(t *testing.T) {
	_, exe, lib := listWorkload(t)
	code, out, errs := listCmd(t, "-v", exe)
	if code != 0 {
		t.Fatalf("list: %d %s", code, errs)
	}
	code, libOut, errs := listCmd(t, lib)
	if code != 0 {
		t.Fatalf("list: %d %s", code, errs)
	}
	var specs []string
	for _, l := range strings.Split(out+libOut, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		spec, comment, ok := strings.Cut(l, "  # ")
		if !ok || strings.ContainsAny(strings.TrimSpace(spec), " \t") {
			t.Errorf("line %q is not SPEC  # COMMENT", l)
			continue
		}
		spec = strings.TrimSpace(spec)
		if _, err := probespec.Parse(spec); err != nil {
			t.Errorf("line %q: %v", l, err)
		}
		if comment == "" {
			t.Errorf("line %q has an empty comment", l)
		}
		specs = append(specs, spec)
	}
	if len(specs) < 40 {
		t.Fatalf("only %d specs listed", len(specs))
	}

	// Record a few of the lines, pasted whole (comment included) into a
	// shell command line.
	bin, _ := bpftapeBin(t)
	var pick []string
	for _, l := range strings.Split(out, "\n") {
		for _, want := range []string{":torture:args12 ", ":torture_asm:tls ", ":torture:inlined ", ":torture_func "} {
			if strings.Contains(l, want) {
				pick = append(pick, l)
			}
		}
	}
	if len(pick) != 4 {
		t.Fatalf("picked %q", pick)
	}
	// A comment ends a shell command, so paste one line per command.
	for i, l := range pick {
		out := filepath.Join(t.TempDir(), fmt.Sprintf("c%d.arrow", i))
		cmd := exec.Command("sh", "-c", fmt.Sprintf("%s record -o %s -c '%s 2 7' %s", bin, out, exe, l))
		r := runBin(t, cmd)
		if r.code != 0 {
			t.Errorf("pasted %q: exit %d: %s", l, r.code, r.stderr)
			continue
		}
		if ev, lost, _ := countEvents(t, out); ev == 0 || lost != 0 {
			t.Errorf("pasted %q: %d events, %d lost", l, ev, lost)
		}
	}
}

// TestListPID lists, with -p, the USDT probes of every file a process maps,
// and resolves a library name among them.
func TestListPID(t *testing.T) {
	_, exe, lib := listWorkload(t)
	cmd := exec.Command(exe, "-w", "1", "1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	pid := fmt.Sprint(cmd.Process.Pid)
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile("/proc/" + pid + "/maps")
		if bytes.Contains(b, []byte(lib)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the library was never mapped")
		}
		time.Sleep(10 * time.Millisecond)
	}
	code, out, errs := listCmd(t, "-p", pid)
	if code != 0 {
		t.Fatalf("list -p: %d %s", code, errs)
	}
	for _, w := range []string{"# " + exe + "\n", "# " + lib + "\n", "usdt:" + exe + ":torture:args12 ", "usdt:" + lib + ":torturelib:guarded "} {
		if !strings.Contains(out, w) {
			t.Errorf("list -p output lacks %q:\n%s", w, out)
		}
	}
	code, out, errs = listCmd(t, "-p", pid, "--usdt", "libtorture.so", "call")
	if code != 0 || !strings.Contains(out, "usdt:"+lib+":torturelib:call ") || strings.Contains(out, "guarded") {
		t.Errorf("list -p PID libtorture.so call: %d %s\n%s", code, errs, out)
	}
}

// TestListDebugFile lists the functions of a stripped binary from its
// separate debug file, found under --debug-dir.
func TestListDebugFile(t *testing.T) {
	_, exe, _ := listWorkload(t)
	for _, tool := range []string{"objcopy", "strip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipping: no %s", tool)
		}
	}
	dir := t.TempDir()
	bin, debug := filepath.Join(dir, "torture"), filepath.Join(dir, "torture.debug")
	for _, args := range [][]string{
		{"objcopy", "--only-keep-debug", exe, debug},
		{"strip", "--strip-all", "-o", bin, exe},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	id, err := elfsym.BuildID(bin)
	if err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	dst := filepath.Join(tree, ".build-id", id[:2], id[2:]+".debug")
	os.MkdirAll(filepath.Dir(dst), 0o755)
	if err := os.Rename(debug, dst); err != nil {
		t.Fatal(err)
	}
	code, out, _ := listCmd(t, "--funcs", bin, "torture_func")
	if code != exitFailure || strings.Contains(out, "uprobe:") {
		t.Errorf("without --debug-dir: %d\n%s", code, out)
	}
	code, out, errs := listCmd(t, "--funcs", "--debug-dir", tree, bin, "torture_func")
	want := fmt.Sprintf("# functions from its debug file %s\nuprobe:%s:torture_func  # %#x,", dst, bin, symValue(t, exe, "torture_func"))
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("with --debug-dir: %d %s\n%s\nwant %q", code, errs, out, want)
	}
}

// TestListBinaryAndCategory: a word that names both a program on PATH and
// a tracepoint category lists the program and says so, with how to list
// the tracepoints.
func TestListBinaryAndCategory(t *testing.T) {
	_, probes := bpftapeBin(t) // a program with symbols; root, for tracefs
	dir := t.TempDir()
	copyFile(t, probes, filepath.Join(dir, "sched"))
	os.Chmod(filepath.Join(dir, "sched"), 0o755)
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	var out, errb bytes.Buffer
	code := run([]string{"list", "sched"}, &out, &errb)
	if code != exitOK || !strings.Contains(errb.String(), "is the program "+filepath.Join(dir, "sched")+" and a tracepoint category") ||
		!strings.Contains(errb.String(), "bpftape list tracepoint sched") || strings.Contains(out.String(), "tracepoint:") {
		t.Errorf("exit %d, stdout:\n%s\nstderr: %s", code, out.String(), errb.String())
	}
}

// TestListIFunc: an indirect function is listed with what its probe
// traces (the resolver) and the implementations to probe instead: in
// glibc, strlen's are __strlen_sse2 and others, not __strlen_ifunc.
func TestListIFunc(t *testing.T) {
	code, out, errs := listCmd(t, "--funcs", "libc", "strlen")
	if code != 0 || !strings.Contains(out, "IFUNC: the probe traces the resolver, probe __strlen_") ||
		!strings.Contains(out, "__strlen_sse2") || strings.Contains(out, "__strlen_ifunc") {
		t.Errorf("list libc strlen: exit %d %s\n%s", code, errs, out)
	}
	code, out, errs = listCmd(t, "--funcs", "libc", "__strlen_sse2")
	if code != 0 || strings.Contains(out, "IFUNC") || !strings.Contains(out, ":__strlen_sse2") {
		t.Errorf("list libc __strlen_sse2: exit %d %s\n%s", code, errs, out)
	}
	// glibc's resolver under a name of its own, from the debug file.
	code, out, errs = listCmd(t, "--funcs", "libc", "strlen_ifunc")
	if code != 0 || !strings.Contains(out, ":strlen_ifunc ") ||
		!strings.Contains(out, "the resolver of IFUNC strlen: runs once a process, probe __strlen_") {
		t.Errorf("list libc strlen_ifunc: exit %d %s\n%s", code, errs, out)
	}
}
