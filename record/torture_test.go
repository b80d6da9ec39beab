package record

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/testutil"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/record/usdt"
)

// tortureSrc is the USDT torture workload's source directory.
const tortureSrc = "../testdata/usdt-torture"

// torture is a build of the USDT torture workload: the executable and its
// shared library, libtorture.so, in dir.
type torture struct {
	cc, dir, exe, lib string
	arch              *bpf.Arch // the binaries' architecture
	opt               string    // the optimization level of an arm64 build, "-O0" or "-O2"
}

// buildTorture builds the torture workload with cc (gcc or clang) into a
// temporary directory, as testdata/usdt-torture/torture.c describes: the
// gcc build is a non-PIE executable (absolute and index-only operands),
// the clang build a PIE.
func buildTorture(tb testing.TB, cc string) *torture {
	tb.Helper()
	if _, err := exec.LookPath(cc); err != nil {
		tb.Skipf("skipping: no %s", cc)
	}
	src, err := filepath.Abs(tortureSrc)
	if err != nil {
		tb.Fatal(err)
	}
	b := &torture{cc: cc, dir: tb.TempDir(), arch: bpf.AMD64}
	b.exe, b.lib = filepath.Join(b.dir, "torture"), filepath.Join(b.dir, "libtorture.so")
	in := func(name string) string { return filepath.Join(src, name) }
	out := func(name string) string { return filepath.Join(b.dir, name) }
	run := func(args ...string) {
		tb.Helper()
		args = append([]string{"-Wall", "-Werror"}, args...)
		if o, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			tb.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, o)
		}
	}
	run("-O2", "-fPIC", "-shared", "-o", b.lib, in("torturelib.c"))
	exeFlags := []string{"-O2", "-fno-omit-frame-pointer", "-fcf-protection=none", "-no-pie", "-fno-pie"}
	if cc == "gcc" {
		run("-O2", "-fno-omit-frame-pointer", "-DFRAME_VARIANT=rbp", "-c", "-o", out("frames_rbp.o"), in("frames.c"))
		run("-Og", "-fomit-frame-pointer", "-DFRAME_VARIANT=rsp", "-c", "-o", out("frames_rsp.o"), in("frames.c"))
	} else {
		run("-O0", "-DFRAME_VARIANT=rbp", "-c", "-o", out("frames_rbp.o"), in("frames.c"))
		run("-O2", "-DFRAME_VARIANT=rsp", "-c", "-o", out("frames_rsp.o"), in("frames.c"))
		// clang -O2 without a frame pointer keeps values in the red zone
		// below %rsp; a PIE covers position-independent file offsets.
		exeFlags = []string{"-O2", "-fcf-protection=none", "-fPIE", "-pie"}
	}
	run(append(exeFlags, "-o", b.exe, in("torture.c"), in("torture_sem.c"), out("frames_rbp.o"), out("frames_rsp.o"),
		in("forms.S"), "-L"+b.dir, "-ltorture", "-Wl,-rpath,"+b.dir)...)
	return b
}

// notes reads the USDT probes of the executable and of the library.
func (b *torture) notes(tb testing.TB) (exe, lib []usdt.Probe) {
	tb.Helper()
	exe, err := usdt.Read(b.exe)
	if err != nil {
		tb.Fatal(err)
	}
	lib, err = usdt.Read(b.lib)
	if err != nil {
		tb.Fatal(err)
	}
	return exe, lib
}

// operandForm is one form of USDT argument operand that must occur in the
// notes: match tells whether an argument has it.
type operandForm struct {
	name  string
	match func(p *usdt.Probe, a *usdt.Arg) bool
}

func isReg(size int, signed bool) func(p *usdt.Probe, a *usdt.Arg) bool {
	return func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Reg && a.Size == size && a.Signed == signed && strings.Contains(a.Text, "@")
	}
}

// operandForms are the forms the brief names, one entry each; each is
// matched against the parsed (and resolved) notes.
var operandForms = []operandForm{
	{"-1@%al (1-byte register, signed)", isReg(1, true)},
	{"1@%dil (1-byte register, unsigned)", isReg(1, false)},
	{"-2@%ax (2-byte register, signed)", isReg(2, true)},
	{"2@%ax (2-byte register, unsigned)", isReg(2, false)},
	{"-4@%eax (4-byte register, signed)", isReg(4, true)},
	{"4@%r8d (4-byte register, unsigned)", isReg(4, false)},
	{"-8@%rax (8-byte register, signed)", isReg(8, true)},
	{"8@%r12 (8-byte register, unsigned)", isReg(8, false)},
	{"%r8d (register without a size)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Reg && !strings.Contains(a.Text, "@")
	}},
	{"8@-8(%rbp)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Mem && a.Reg == "rbp" && a.Off < 0 && a.Seg == ""
	}},
	{"-4@16(%rsp)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Mem && a.Reg == "rsp" && a.Off > 0
	}},
	{"-8@-8(%rsp) (red zone)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Mem && a.Reg == "rsp" && a.Off < 0
	}},
	{"8@(%rsp)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Mem && a.Reg == "rsp" && strings.HasSuffix(a.Text, "@(%rsp)")
	}},
	{"-4@%fs:v@tpoff", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Mem && a.Seg == "fs" && a.Reg == "" && strings.Contains(a.Text, "@tpoff")
	}},
	{"-8@%fs:v@tpoff(,%rcx,8)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.SIB && a.Seg == "fs" && a.Reg == "" && a.Scale == 8
	}},
	{"-4@%fs:(%rdx)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Mem && a.Seg == "fs" && a.Reg != ""
	}},
	{"8@%fs:0", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Mem && a.Seg == "fs" && a.Reg == "" && !strings.Contains(a.Text, "@tpoff")
	}},
	{"8@$5", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Const && a.Off > 0 && !strings.Contains(a.Text, "$torture")
	}},
	{"-4@$-1", func(p *usdt.Probe, a *usdt.Arg) bool { return a.Kind == usdt.Const && a.Off < 0 && a.Signed }},
	{"-4@8(%rax,%rdx,4)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.SIB && a.Reg != "" && a.Off > 0 && a.Scale == 4
	}},
	{"1@-96(%rbp,%rax,8)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.SIB && a.Reg == "rbp" && a.Off < 0 && a.Scale == 8
	}},
	{"(%rax,%rdx) without scale or displacement", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.SIB && a.Reg != "" && a.Off == 0 && strings.Count(a.Text, ",") == 1
	}},
	{"-4@table(,%rsi,4) (index only, non-PIE)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.SIB && a.Reg == "" && a.Seg == ""
	}},
	{"-4@v(%rip)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Mem && a.Reg == "rip" && strings.Contains(a.Text, "(%rip)")
	}},
	{"-4@v (absolute, non-PIE)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Mem && a.Reg == "" && a.Seg == ""
	}},
	{"8@$v (an address, non-PIE)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Const && strings.Contains(a.Text, "$torture")
	}},
}

// tortureForms are the operand forms each build's notes must have, by where
// they come from: "asm" is forms.S (provider torture_asm), "compiler" the
// compiler's own operands (providers torture and torturelib). A compiler
// that stops emitting a form fails the test rather than losing coverage.
var tortureForms = map[string]map[string][]string{
	"gcc": {
		"asm": {"*"},
		"compiler": {"-1@%al (1-byte register, signed)", "1@%dil (1-byte register, unsigned)",
			"-2@%ax (2-byte register, signed)", "2@%ax (2-byte register, unsigned)",
			"-4@%eax (4-byte register, signed)", "4@%r8d (4-byte register, unsigned)",
			"-8@%rax (8-byte register, signed)", "8@%r12 (8-byte register, unsigned)",
			"8@-8(%rbp)", "-4@16(%rsp)", "8@(%rsp)", "-4@%fs:v@tpoff", "-8@%fs:v@tpoff(,%rcx,8)",
			"8@$5", "-4@$-1", "1@-96(%rbp,%rax,8)", "-4@table(,%rsi,4) (index only, non-PIE)"},
	},
	"clang": {
		"asm": {"-1@%al (1-byte register, signed)", "8@-8(%rbp)", "-4@16(%rsp)", "-8@-8(%rsp) (red zone)", "8@(%rsp)", "-4@%fs:v@tpoff",
			"-8@%fs:v@tpoff(,%rcx,8)", "-4@%fs:(%rdx)", "8@%fs:0", "-4@8(%rax,%rdx,4)", "1@-96(%rbp,%rax,8)",
			"(%rax,%rdx) without scale or displacement", "-4@v(%rip)"},
		"compiler": {"8@-8(%rbp)", "-4@16(%rsp)", "-8@-8(%rsp) (red zone)", "8@$5", "-4@$-1"},
	},
}

// TestTortureNotes builds the torture workload with gcc and clang and
// checks, before anything is recorded, that the parsed notes hold every
// operand form (so that a compiler change cannot silently drop coverage),
// every register name at every width, a 13-argument probe, a probe with
// several call sites, and semaphore-guarded probes in the executable and
// the library; every location is a nop.
func TestTortureNotes(t *testing.T) {
	for _, cc := range []string{"gcc", "clang"} {
		t.Run(cc, func(t *testing.T) { checkTortureNotes(t, buildTorture(t, cc)) })
	}
}

// tortureOperands calls each for every operand of the notes exe and lib
// (a site that failed to parse is an error, and has none), and returns the
// operands that have each of forms, by source: "asm" for the hand-written
// probes of provider torture_asm, "compiler" for the others.
func tortureOperands(t *testing.T, exe, lib []usdt.Probe, forms []operandForm, each func(p *usdt.Probe, s *usdt.Site, a *usdt.Arg)) map[string]map[string][]string {
	t.Helper()
	found := map[string]map[string][]string{"asm": {}, "compiler": {}}
	for _, probes := range [][]usdt.Probe{exe, lib} {
		for i := range probes {
			p := &probes[i]
			src := "compiler"
			if p.Provider == "torture_asm" {
				src = "asm"
			}
			for j := range p.Sites {
				s := &p.Sites[j]
				if s.Err != nil {
					t.Errorf("%s at %#x: %v", p, s.Location, s.Err)
					continue
				}
				for k := range s.Args {
					a := &s.Args[k]
					each(p, s, a)
					for _, f := range forms {
						if f.match(p, a) {
							found[src][f.name] = append(found[src][f.name], fmt.Sprintf("%s %s", p, a.Text))
						}
					}
				}
			}
		}
	}
	return found
}

// checkForms fails for each form of want, by source, that the build's
// notes lack, and logs an example of the others.
func checkForms(t *testing.T, build string, found map[string]map[string][]string, want map[string][]string) {
	t.Helper()
	for src, names := range want {
		for _, w := range names {
			if ex := found[src][w]; len(ex) == 0 {
				t.Errorf("%s build: no %s operand of the form %s in the notes", build, src, w)
			} else {
				t.Logf("%s %-45s e.g. %s", src, w, ex[0])
			}
		}
	}
}

// checkTortureNotes checks a torture build's notes for TestTortureNotes, and
// first thing in the tests that record it.
func checkTortureNotes(t *testing.T, b *torture) {
	t.Helper()
	cc := b.cc
	exe, lib := b.notes(t)
	regNames := map[string]bool{}
	found := tortureOperands(t, exe, lib, operandForms, func(p *usdt.Probe, s *usdt.Site, a *usdt.Arg) {
		if a.Kind == usdt.Reg {
			regNames[a.Reg] = true
		}
	})
	want := map[string][]string{}
	for src, names := range tortureForms[cc] {
		if len(names) == 1 && names[0] == "*" {
			names = nil
			for _, f := range operandForms {
				names = append(names, f.name)
			}
		}
		want[src] = names
	}
	checkForms(t, cc, found, want)
	var missing []string
	for _, r := range []string{"a", "b", "c", "d"} {
		for _, n := range []string{"r" + r + "x", "e" + r + "x", r + "x", r + "l"} {
			if !regNames[n] {
				missing = append(missing, n)
			}
		}
	}
	for _, r := range []string{"si", "di", "bp", "sp"} {
		for _, n := range []string{"r" + r, "e" + r, r, r + "l"} {
			if !regNames[n] {
				missing = append(missing, n)
			}
		}
	}
	for r := 8; r <= 15; r++ {
		for _, suf := range []string{"", "d", "w", "b"} {
			if n := fmt.Sprintf("r%d%s", r, suf); !regNames[n] {
				missing = append(missing, n)
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("registers never read: %v", missing)
	}
	checkTortureProbes(t, b, exe, lib)
}

// checkTortureProbes checks what the torture workload's notes hold on every
// architecture: a 13-argument probe, probes of 1 to 12 arguments, a probe
// with several call sites (whose operands differ, but in an arm64 -O0
// build), semaphore-guarded probes in the executable and the library, and
// a nop at every location.
func checkTortureProbes(t *testing.T, b *torture, exe, lib []usdt.Probe) {
	t.Helper()
	find := func(probes []usdt.Probe, prov, name string) *usdt.Probe {
		t.Helper()
		p, err := usdt.Find(probes, prov, name)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := find(exe, "torture_asm", "args13"); len(p.Args) != 13 {
		t.Errorf("args13 has %d args", len(p.Args))
	}
	for n := 1; n <= 12; n++ {
		if p := find(exe, "torture", fmt.Sprintf("args%d", n)); len(p.Args) != n {
			t.Errorf("%s has %d args", p, len(p.Args))
		}
	}
	if p := find(exe, "torture", "inlined"); len(p.Sites) < 3 || p.UniformArgs() && b.opt != "-O0" {
		t.Errorf("%s: %d sites, uniform %v: want several sites whose operands differ", p, len(p.Sites), p.UniformArgs())
	}
	for _, pn := range []struct {
		probes []usdt.Probe
		prov   string
		name   string
	}{{exe, "torture", "guarded"}, {lib, "torturelib", "guarded"}, {lib, "torturelib", "call"}} {
		if p := find(pn.probes, pn.prov, pn.name); p.Semaphore == 0 {
			t.Errorf("%s has no semaphore", p)
		}
	}
	for path, probes := range map[string][]usdt.Probe{b.exe: exe, b.lib: lib} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range probes {
			for _, loc := range p.Locations {
				if !isNop(b.arch, raw, loc) {
					t.Errorf("%s: %s location %#x is not a nop", path, &p, loc)
				}
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// isNop reports whether the code at file offset loc of raw is the nop
// sys/sdt.h puts at a probe site on arch.
func isNop(arch *bpf.Arch, raw []byte, loc uint64) bool {
	if arch == bpf.ARM64 {
		return loc+4 <= uint64(len(raw)) && binary.LittleEndian.Uint32(raw[loc:]) == 0xd503201f
	}
	return loc < uint64(len(raw)) && raw[loc] == 0x90
}

// crossInclude returns a directory holding sys/sdt.h and sys/sdt-config.h,
// copied from the host's: the header serves every architecture, but the
// cross compilers do not search the host's multiarch include directory.
func crossInclude(tb testing.TB) string {
	tb.Helper()
	for _, dir := range []string{"/usr/include/x86_64-linux-gnu/sys", "/usr/include/aarch64-linux-gnu/sys", "/usr/include/sys"} {
		if _, err := os.Stat(filepath.Join(dir, "sdt.h")); err != nil {
			continue
		}
		inc := filepath.Join(tb.TempDir(), "include")
		if err := os.MkdirAll(filepath.Join(inc, "sys"), 0o755); err != nil {
			tb.Fatal(err)
		}
		for _, name := range []string{"sdt.h", "sdt-config.h"} {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if os.IsNotExist(err) && name != "sdt.h" {
				continue
			}
			if err != nil {
				tb.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(inc, "sys", name), data, 0o644); err != nil {
				tb.Fatal(err)
			}
		}
		return inc
	}
	testutil.Unavailable(tb, "no sys/sdt.h (apt-get install systemtap-sdt-dev)")
	return ""
}

// buildTortureARM64 cross-compiles the torture workload for arm64 into a
// temporary directory, every file at optimization level opt ("-O0" or
// "-O2") with cc: "gcc" is aarch64-linux-gnu-gcc, "clang" is clang
// --target=aarch64-linux-gnu, whose objects aarch64-linux-gnu-gcc links.
// frames.c is built with and without a frame pointer, forms_arm64.S takes
// forms.S's place, and the executable is a PIE, as the toolchain makes by
// default.
func buildTortureARM64(tb testing.TB, cc, opt string) *torture {
	tb.Helper()
	const gcc = "aarch64-linux-gnu-gcc"
	if _, err := exec.LookPath(gcc); err != nil {
		testutil.Unavailable(tb, "no %s (apt-get install gcc-aarch64-linux-gnu)", gcc)
	}
	compiler := []string{gcc}
	if cc == "clang" {
		if _, err := exec.LookPath("clang"); err != nil {
			testutil.Unavailable(tb, "no clang")
		}
		compiler = []string{"clang", "--target=aarch64-linux-gnu"}
	}
	inc := crossInclude(tb)
	src, err := filepath.Abs(tortureSrc)
	if err != nil {
		tb.Fatal(err)
	}
	b := &torture{cc: cc, dir: tb.TempDir(), arch: bpf.ARM64, opt: opt}
	b.exe, b.lib = filepath.Join(b.dir, "torture"), filepath.Join(b.dir, "libtorture.so")
	in := func(name string) string { return filepath.Join(src, name) }
	out := func(name string) string { return filepath.Join(b.dir, name) }
	run := func(cmd []string, args ...string) {
		tb.Helper()
		args = append(cmd[1:len(cmd):len(cmd)], args...)
		if o, err := exec.Command(cmd[0], args...).CombinedOutput(); err != nil {
			tb.Fatalf("%s %s: %v\n%s", cmd[0], strings.Join(args, " "), err, o)
		}
	}
	compile := func(obj, file string, flags ...string) {
		tb.Helper()
		run(compiler, append(append([]string{"-Wall", "-Werror", opt, "-I" + inc}, flags...), "-c", "-o", out(obj), in(file))...)
	}
	compile("torturelib.o", "torturelib.c", "-fPIC")
	run([]string{gcc}, "-shared", "-o", b.lib, out("torturelib.o"))
	compile("frames_rbp.o", "frames.c", "-fno-omit-frame-pointer", "-DFRAME_VARIANT=rbp")
	compile("frames_rsp.o", "frames.c", "-fomit-frame-pointer", "-DFRAME_VARIANT=rsp")
	compile("torture.o", "torture.c")
	compile("torture_sem.o", "torture_sem.c")
	compile("forms_arm64.o", "forms_arm64.S")
	run([]string{gcc}, "-o", b.exe, out("torture.o"), out("torture_sem.o"), out("frames_rbp.o"), out("frames_rsp.o"),
		out("forms_arm64.o"), "-L"+b.dir, "-ltorture", "-Wl,-rpath,"+b.dir)
	return b
}

// operandFormsARM64 are the arm64 operand forms the brief names, matched
// against the parsed (and resolved) notes.
var operandFormsARM64 = []operandForm{
	{"-1@x0 (1-byte register, signed)", isReg(1, true)},
	{"1@x0 (1-byte register, unsigned)", isReg(1, false)},
	{"-2@x0 (2-byte register, signed)", isReg(2, true)},
	{"2@x0 (2-byte register, unsigned)", isReg(2, false)},
	{"-4@x0 (4-byte register, signed)", isReg(4, true)},
	{"4@x0 (4-byte register, unsigned)", isReg(4, false)},
	{"-8@x0 (8-byte register, signed)", isReg(8, true)},
	{"8@x0 (8-byte register, unsigned)", isReg(8, false)},
	{"-4@x19 (64-bit register)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Reg && strings.HasPrefix(a.Reg, "x")
	}},
	{"4@w1 (32-bit register)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Reg && strings.HasPrefix(a.Reg, "w") && a.Reg != "wsp"
	}},
	{"8@sp", func(p *usdt.Probe, a *usdt.Arg) bool { return a.Kind == usdt.Reg && a.Reg == "sp" }},
	{"4@wsp", func(p *usdt.Probe, a *usdt.Arg) bool { return a.Kind == usdt.Reg && a.Reg == "wsp" }},
	{"8@fp, 8@lr", func(p *usdt.Probe, a *usdt.Arg) bool { return a.Kind == usdt.Reg && (a.Reg == "fp" || a.Reg == "lr") }},
	{"x0 (register without a size)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Reg && !strings.Contains(a.Text, "@")
	}},
	{"xzr, wzr (read as 0)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Const && strings.HasSuffix(a.Text, "zr")
	}},
	{"8@[x1]", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Mem && strings.HasPrefix(a.Reg, "x") && a.Off == 0 && !strings.Contains(a.Text, ",")
	}},
	{"-4@[x0, 8]", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Mem && strings.HasPrefix(a.Reg, "x") && a.Off > 0 && !strings.Contains(a.Text, ":lo12:")
	}},
	{"-8@[x0, -8]", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Mem && (strings.HasPrefix(a.Reg, "x") || a.Reg == "fp") && a.Off < 0
	}},
	{"8@[sp]", func(p *usdt.Probe, a *usdt.Arg) bool { return a.Kind == usdt.Mem && a.Reg == "sp" && a.Off == 0 }},
	{"-4@[sp, 16]", func(p *usdt.Probe, a *usdt.Arg) bool { return a.Kind == usdt.Mem && a.Reg == "sp" && a.Off > 0 }},
	{"8@[sp, #120] (offset with #)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Mem && strings.Contains(a.Text, ", #") && !strings.Contains(a.Text, ":lo12:")
	}},
	{"8@[x0, x2] (index)", func(p *usdt.Probe, a *usdt.Arg) bool { return a.Kind == usdt.SIB && a.Scale == 1 }},
	{"-4@[x0, x2, lsl #2] (scaled index)", func(p *usdt.Probe, a *usdt.Arg) bool { return a.Kind == usdt.SIB && a.Scale > 1 }},
	{"-4@[x1, #:lo12:sym] (resolved)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Mem && strings.Contains(a.Text, ":lo12:") && a.Sym == "" && a.Off >= 0 && a.Off < 4096
	}},
	{"-4@5", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Const && a.Off > 0 && !strings.Contains(a.Text, "#")
	}},
	{"-4@-1", func(p *usdt.Probe, a *usdt.Arg) bool { return a.Kind == usdt.Const && a.Off < 0 }},
	{"-4@#-7 (immediate with #)", func(p *usdt.Probe, a *usdt.Arg) bool {
		return a.Kind == usdt.Const && strings.Contains(a.Text, "#")
	}},
}

// tortureFormsARM64 are the forms each arm64 build's notes must have, by
// where they come from, as tortureForms says for x86-64: forms_arm64.S has
// them all; the lists are what gcc 12 and clang 14 emit.
var tortureFormsARM64 = map[string][]string{
	"gcc-O0": {"-4@x19 (64-bit register)", "8@[sp]", "-4@[sp, 16]", "-4@5", "-4@-1"},
	"gcc-O2": {"-1@x0 (1-byte register, signed)", "1@x0 (1-byte register, unsigned)",
		"-2@x0 (2-byte register, signed)", "2@x0 (2-byte register, unsigned)",
		"-4@x0 (4-byte register, signed)", "4@x0 (4-byte register, unsigned)",
		"-8@x0 (8-byte register, signed)", "8@x0 (8-byte register, unsigned)",
		"-4@x19 (64-bit register)", "8@[x1]", "-4@[x0, 8]", "-8@[x0, -8]", "-4@[sp, 16]", "-4@5", "-4@-1"},
	"clang-O0": {"8@[x1]", "-4@5", "-4@-1"},
	"clang-O2": {"8@[x1]", "-4@5", "-4@-1"},
}

// TestTortureNotesARM64 cross-compiles the torture workload for arm64 with
// gcc and clang at -O0 and -O2 and checks its notes as TestTortureNotes does
// for x86-64: every operand form, every register (x0..x30, w0..w30, sp,
// wsp, fp, lr), every site's arguments mapped to specs, and the probes
// every build has. Recording them needs an arm64 host (guestcheck.sh).
func TestTortureNotesARM64(t *testing.T) {
	for _, cc := range []string{"gcc", "clang"} {
		for _, opt := range []string{"-O0", "-O2"} {
			t.Run(cc+opt, func(t *testing.T) { checkTortureNotesARM64(t, buildTortureARM64(t, cc, opt)) })
		}
	}
}

// checkTortureNotesARM64 checks an arm64 torture build's notes for
// TestTortureNotesARM64.
func checkTortureNotesARM64(t *testing.T, b *torture) {
	t.Helper()
	exe, lib := b.notes(t)
	regNames := map[string]bool{}
	checked := map[*usdt.Site]bool{}
	found := tortureOperands(t, exe, lib, operandFormsARM64, func(p *usdt.Probe, s *usdt.Site, a *usdt.Arg) {
		if !checked[s] && len(s.Args) <= bpf.MaxArgs {
			checked[s] = true
			if _, err := s.BPFArgs(); err != nil {
				t.Errorf("%s at %#x: %v", p, s.Location, err)
			}
		}
		if a.Arch != bpf.ARM64 {
			t.Errorf("%s %s: architecture %v", p, a.Text, a.Arch)
		}
		if a.Kind == usdt.Reg || a.Kind == usdt.Mem || a.Kind == usdt.SIB {
			regNames[a.Reg] = true
		}
	})
	want := map[string][]string{"compiler": tortureFormsARM64[b.cc+b.opt]}
	for _, f := range operandFormsARM64 {
		want["asm"] = append(want["asm"], f.name)
	}
	checkForms(t, b.cc+b.opt, found, want)
	missing := []string{}
	for n := range 31 {
		for _, r := range []string{fmt.Sprint("x", n), fmt.Sprint("w", n)} {
			if !regNames[r] {
				missing = append(missing, r)
			}
		}
	}
	for _, r := range []string{"sp", "wsp", "fp", "lr"} {
		if !regNames[r] {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		t.Errorf("registers never read: %v", missing)
	}
	if p, err := usdt.Find(exe, "torture", "negoff"); err != nil || len(p.Args) != 3 {
		t.Errorf("torture:negoff, the arm64 probe: %v", err)
	}
	checkTortureProbes(t, b, exe, lib)
}

// truthLines parses the workload's "P PROVIDER:NAME I V..." lines by probe.
func truthLines(out string) map[string][][]string {
	m := map[string][][]string{}
	for _, l := range lines(out) {
		if l[0] == "P" && len(l) >= 3 {
			m[l[1]] = append(m[l[1]], l[3:])
		}
	}
	return m
}

// bits turns a decimal ground-truth value into its 64-bit pattern.
func bits(tb testing.TB, s string) uint64 {
	tb.Helper()
	if strings.HasPrefix(s, "-") {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			tb.Fatal(err)
		}
		return uint64(v)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// tortureProbe is one probe recorded from the torture workload: its spec,
// and which truth lines and values it must match.
type tortureProbe struct {
	name, spec string
	truth      string // "PROVIDER:NAME" of the truth lines
	args       []int  // truth value index of field argN; nil: field k is value k
}

// tortureProbes lists a probe spec for every USDT probe of the build's
// executable (args13 with 12 of its arguments, the most a probe records),
// named PROVIDER.NAME.
func tortureProbes(tb testing.TB, b *torture) []tortureProbe {
	exe, _ := b.notes(tb)
	var out []tortureProbe
	for _, p := range exe {
		name := p.Provider + "." + p.Name
		tp := tortureProbe{name: name, spec: fmt.Sprintf("%s=U:%s:%s:%s", name, b.exe, p.Provider, p.Name), truth: p.String()}
		if p.Name == "args13" {
			tp.args = []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12}
			var fs []string
			for _, k := range tp.args {
				fs = append(fs, fmt.Sprintf("arg%d", k))
			}
			tp.spec += "(" + strings.Join(fs, ",") + ")"
		}
		out = append(out, tp)
	}
	return out
}

// checkTorture compares every recorded value of every probe with the
// workload's ground truth, event by event; the events must all be pid's
// and every field must have the note's size and sign.
func checkTorture(t *testing.T, c *capture, s *Summary, truth map[string][][]string, probes []tortureProbe, pid int) {
	t.Helper()
	if s.Lost != 0 || s.ReadFaults != 0 || s.Truncated != 0 || s.Malformed != 0 {
		t.Errorf("lost %d, read faults %d, truncated %d, malformed %d", s.Lost, s.ReadFaults, s.Truncated, s.Malformed)
	}
	checked := 0
	for _, tp := range probes {
		want := truth[tp.truth]
		rows := c.rows[tp.name]
		if len(rows) != len(want) {
			t.Errorf("%s: %d events, the workload fired %s %d times", tp.name, len(rows), tp.truth, len(want))
			continue
		}
		if len(want) == 0 {
			t.Errorf("%s: the workload never fired %s", tp.name, tp.truth)
			continue
		}
		p := c.probe(t, tp.name)
		for i, r := range rows {
			if pid != 0 && r.pid != uint32(pid) {
				t.Fatalf("%s event %d: pid %d, want %d", tp.name, i, r.pid, pid)
			}
			for k, f := range p.Fields {
				idx := k
				if tp.args != nil {
					idx = tp.args[k]
				}
				if idx >= len(want[i]) {
					t.Fatalf("%s: field %s has no truth in %q", tp.name, f.Name, want[i])
				}
				got := uint64(r.ints[f.Name])
				if w := bits(t, want[i][idx]); got != w {
					t.Errorf("%s event %d %s (%v) = %d (%#x), want %s (%#x)", tp.name, i, f.Name, f.Type, int64(got), got, want[i][idx], w)
				}
				checked++
			}
		}
	}
	t.Logf("%d probes, %d values checked against the ground truth", len(probes), checked)
}

// fieldTypesMatchNotes checks that each probe recorded with default fields
// has one field per note argument, with the argument's size and sign.
func fieldTypesMatchNotes(t *testing.T, c *capture, b *torture, probes []tortureProbe) {
	t.Helper()
	exe, lib := b.notes(t)
	all := append(exe, lib...)
	for _, tp := range probes {
		if tp.args != nil || !strings.Contains(tp.spec, "U:") {
			continue
		}
		prov, name, _ := strings.Cut(tp.truth, ":")
		np, err := usdt.Find(all, prov, name)
		if err != nil {
			t.Fatal(err)
		}
		p := c.probe(t, tp.name)
		if len(p.Fields) != len(np.Args) {
			t.Errorf("%s: %d fields, %d note args", tp.name, len(p.Fields), len(np.Args))
			continue
		}
		for k, a := range np.Args {
			want, _ := format.IntType(a.Size, a.Signed)
			if p.Fields[k].Type != want {
				t.Errorf("%s arg%d (%s): %v, want %v", tp.name, k, a.Text, p.Fields[k].Type, want)
			}
		}
	}
}

// runWorkload runs the torture workload to completion and returns its
// output.
func runWorkload(t *testing.T, exe string, args ...string) string {
	t.Helper()
	out, err := exec.Command(exe, args...).Output()
	if err != nil {
		t.Fatalf("%s %v: %v", exe, args, err)
	}
	return string(out)
}

const (
	tortureIters = "4"
	tortureSeed  = "0x5eed1234abcd"
)

// TestTortureSystemWide records every USDT probe of the gcc-built torture
// workload, its library's probes named by path and by library name, and
// uprobes by symbol, SYMBOL+OFFSET and address, system-wide (no -p, no -c):
// the workload runs by itself once the recorder is ready. Every recorded
// value must equal the workload's ground truth; the semaphore-guarded
// probes must fire only while recorded.
func TestTortureSystemWide(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	b := buildTorture(t, "gcc")
	checkTortureNotes(t, b)
	t.Setenv("LD_LIBRARY_PATH", b.dir) // for U:libtorture:...

	// Without a tracer the semaphores are 0: no guarded probe fires.
	plain := truthLines(runWorkload(t, b.exe, tortureIters, tortureSeed))
	if n, m := len(plain["torture:guarded"]), len(plain["torturelib:guarded"]); n != 0 || m != 0 {
		t.Fatalf("guarded probes fired %d and %d times with nobody tracing", n, m)
	}

	probes := tortureProbes(t, b)
	for _, lp := range []struct{ name, bin string }{{"libpath", b.lib}, {"libname", "libtorture"}} {
		for _, n := range []string{"call", "guarded"} {
			probes = append(probes, tortureProbe{name: lp.name + "." + n, truth: "torturelib:" + n,
				spec: fmt.Sprintf("%s.%s=U:%s:torturelib:%s", lp.name, n, lp.bin, n)})
		}
	}
	addr := symbolAddr(t, b.exe, "torture_func")
	for _, u := range []struct{ name, target string }{
		{"func", "torture_func"}, {"func_off", "torture_func+1"}, {"func_addr", fmt.Sprintf("%#x", addr)},
	} {
		probes = append(probes, tortureProbe{name: u.name, truth: "torture_func", args: []int{1, 2},
			spec: fmt.Sprintf("%s=u:%s:%s(arg0,arg1)", u.name, b.exe, u.target)})
	}
	var specs []string
	for _, p := range probes {
		specs = append(specs, p.spec)
	}

	ready := filepath.Join(t.TempDir(), "ready")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type result struct {
		out string
		pid int
		err error
	}
	done := make(chan result, 1)
	go func() {
		for {
			if _, err := os.Stat(ready); err == nil {
				break
			}
			if ctx.Err() != nil {
				done <- result{err: ctx.Err()}
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		cmd := exec.Command(b.exe, tortureIters, tortureSeed)
		var out bytes.Buffer
		cmd.Stdout = &out
		err := cmd.Run()
		pid := 0
		if cmd.Process != nil {
			pid = cmd.Process.Pid
		}
		done <- result{out.String(), pid, err}
		cancel()
	}()
	var log strings.Builder
	s, err := Record(ctx, Options{Output: filepath.Join(t.TempDir(), "c.arrow"), Probes: specs, ReadyFile: ready, Log: &log})
	t.Logf("log:\n%s", log.String())
	if err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("workload: %v", res.err)
	}
	if s.TargetPID != 0 {
		t.Errorf("target pid %d: not system-wide", s.TargetPID)
	}
	truth := truthLines(res.out)
	for _, l := range lines(res.out) {
		if l[0] == "F" {
			truth[l[1]] = append(truth[l[1]], l[2:])
		}
	}
	if n := len(truth["torture:guarded"]); n == 0 {
		t.Error("torture:guarded never fired: the recorder did not raise its semaphore")
	}
	c := readCapture(t, s.Output)
	checkTorture(t, c, s, truth, probes, res.pid)
	fieldTypesMatchNotes(t, c, b, probes)
	for _, p := range c.meta.Probes {
		if strings.HasPrefix(p.Name, "libname.") && p.Target != b.lib {
			t.Errorf("%s: target %s, want %s", p.Name, p.Target, b.lib)
		}
		if p.BuildID == "" {
			t.Errorf("%s: no build id", p.Name)
		}
	}
	if ps := statsOf(s, "torture.inlined"); ps.Sites < 3 {
		t.Errorf("torture.inlined attached at %d sites", ps.Sites)
	}
}

func statsOf(s *Summary, name string) ProbeStats {
	for _, p := range s.Probes {
		if p.Name == name {
			return p
		}
	}
	return ProbeStats{}
}

// symbolAddr returns the value of symbol name in the ELF file at path.
func symbolAddr(tb testing.TB, path, name string) uint64 {
	tb.Helper()
	f, err := elf.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		tb.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name {
			return s.Value
		}
	}
	tb.Fatalf("no symbol %s in %s", name, path)
	return 0
}

// TestTortureClang records the clang-built (PIE) torture workload with -c:
// clang's operands (red zone -N(%rsp), -N(%rbp) at -O0) and the PIE forms of
// forms.S, every value against the ground truth.
func TestTortureClang(t *testing.T) { testTortureClang(t, false) }

// testTortureClang is TestTortureClang, with Options.NoCookies set to
// noCookies.
func testTortureClang(t *testing.T, noCookies bool) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	b := buildTorture(t, "clang")
	checkTortureNotes(t, b)
	probes := tortureProbes(t, b)
	var specs []string
	for _, p := range probes {
		specs = append(specs, p.spec)
	}
	s, out := mustRecord(t, Options{Command: []string{b.exe, tortureIters, tortureSeed}, Probes: specs, NoCookies: noCookies})
	if s.ExitCode != 0 {
		t.Fatalf("exit %d", s.ExitCode)
	}
	c := readCapture(t, s.Output)
	checkAttachMode(t, c, noCookies)
	checkTorture(t, c, s, truthLines(out), probes, s.TargetPID)
	fieldTypesMatchNotes(t, c, b, probes)
}

// TestTortureLibraryPID records the library's probes, named by library name
// (found in the process's mappings) and by path, and the executable's
// guarded probe, with -p while a second copy runs untraced: only the traced
// process's events are recorded, and only its semaphores are raised.
func TestTortureLibraryPID(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	b := buildTorture(t, "gcc")
	start := func() (*exec.Cmd, io.WriteCloser, *bytes.Buffer) {
		return startWaiting(t, b.exe, tortureIters, tortureSeed)
	}
	traced, tin, tout := start()
	other, oin, oout := start()
	// The library is mapped once ld.so has run: wait for it.
	waitMapped(t, traced.Process.Pid, b.lib)
	probes := []tortureProbe{
		{name: "byname.call", truth: "torturelib:call", spec: "byname.call=U:libtorture:torturelib:call"},
		{name: "byname.guarded", truth: "torturelib:guarded", spec: "byname.guarded=U:libtorture.so:guarded"},
		{name: "bypath.call", truth: "torturelib:call", spec: "bypath.call=U:" + b.lib + ":torturelib:call"},
		{name: "exe.guarded", truth: "torture:guarded", spec: "exe.guarded=U:torture:torture:guarded"},
	}
	var specs []string
	for _, p := range probes {
		specs = append(specs, p.spec)
	}
	ready := filepath.Join(t.TempDir(), "ready")
	go func() {
		for {
			if _, err := os.Stat(ready); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		io.WriteString(tin, "go\n")
		io.WriteString(oin, "go\n")
	}()
	s, _ := mustRecord(t, Options{PID: traced.Process.Pid, ReadyFile: ready, Probes: specs})
	traced.Wait()
	other.Wait()
	if s.Stopped != "process exited" {
		t.Errorf("stopped: %s", s.Stopped)
	}
	c := readCapture(t, s.Output)
	for _, p := range c.meta.Probes {
		if !strings.HasPrefix(p.Name, "exe.") && p.Target != b.lib {
			t.Errorf("%s: target %s, want %s", p.Name, p.Target, b.lib)
		}
	}
	truth := truthLines(tout.String())
	if len(truth["torturelib:guarded"]) == 0 || len(truth["torture:guarded"]) == 0 {
		t.Errorf("the traced process's guarded probes did not fire: %d, %d", len(truth["torturelib:guarded"]), len(truth["torture:guarded"]))
	}
	untraced := truthLines(oout.String())
	if n, m := len(untraced["torturelib:guarded"]), len(untraced["torture:guarded"]); n != 0 || m != 0 {
		t.Errorf("the untraced copy's guarded probes fired %d and %d times: its semaphores were raised", n, m)
	}
	if len(untraced["torturelib:call"]) == 0 {
		t.Error("the untraced copy did not run")
	}
	checkTorture(t, c, s, truth, probes, traced.Process.Pid)
}

// waitMapped waits until process pid maps the file path.
func waitMapped(t *testing.T, pid int, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
		if bytes.Contains(b, []byte(path)) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d never mapped %s", pid, path)
}

// TestTortureTooManyArgs checks that the 13-argument probe is a clear error
// with the default fields (every argument), and that naming up to 12 of
// its arguments, arg12 included, is not.
func TestTortureTooManyArgs(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	b := buildTorture(t, "gcc")
	_, err, _ := record(t, Options{Duration: time.Millisecond, Probes: []string{"U:" + b.exe + ":args13"}})
	if err == nil {
		t.Fatal("recording a 13-argument probe with every argument succeeded")
	}
	for _, w := range []string{"torture_asm:args13", "has 13 arguments", "more than the 12 a probe records",
		"list the ones you need", "(arg0,arg1,arg2,arg3,arg4,arg5,arg6,arg7,arg8,arg9,arg10,arg11)"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if usage.Is(err) {
		t.Errorf("a probe's argument count is not a usage error: %v", err)
	}
	// arg13 does not exist; arg12 does.
	_, err, _ = record(t, Options{Duration: time.Millisecond, Probes: []string{"U:" + b.exe + ":args13(arg13)"}})
	if err == nil || !strings.Contains(err.Error(), "has 13 arguments: no arg13") {
		t.Errorf("arg13 of a 13-argument probe: %v", err)
	}
	if _, err, _ := record(t, Options{Duration: 10 * time.Millisecond, Probes: []string{"U:" + b.exe + ":args13(arg0,arg12)"}}); err != nil {
		t.Errorf("arg0 and arg12 of a 13-argument probe: %v", err)
	}
	fields := make([]string, 13)
	for i := range fields {
		fields[i] = fmt.Sprintf("arg%d", i)
	}
	_, err, _ = record(t, Options{Probes: []string{"U:" + b.exe + ":args13(" + strings.Join(fields, ",") + ")"}})
	if err == nil || !strings.Contains(err.Error(), "at most 12") || !usage.Is(err) {
		t.Errorf("13 fields listed: %v", err)
	}
}
