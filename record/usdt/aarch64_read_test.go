package usdt

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/testutil"
)

// tortureDir is the USDT torture workload's source directory.
const tortureDir = "../../testdata/usdt-torture"

// arm64Nop is the encoding of the arm64 nop that sys/sdt.h puts at a site.
const arm64Nop = 0xd503201f

// armBuild is an arm64 build of the torture workload: the executable and
// its shared library, libtorture.so.
type armBuild struct {
	name, exe, lib string
}

// crossInclude returns a directory holding sys/sdt.h and sys/sdt-config.h,
// copied from the host's: the header is the same for every architecture,
// and the cross compilers do not search the host's multiarch directory.
func crossInclude(t *testing.T) string {
	t.Helper()
	for _, dir := range []string{"/usr/include/x86_64-linux-gnu/sys", "/usr/include/aarch64-linux-gnu/sys", "/usr/include/sys"} {
		sdt, err := os.ReadFile(filepath.Join(dir, "sdt.h"))
		if err != nil {
			continue
		}
		inc := filepath.Join(t.TempDir(), "include")
		if err := os.MkdirAll(filepath.Join(inc, "sys"), 0o755); err != nil {
			t.Fatal(err)
		}
		files := map[string][]byte{"sdt.h": sdt}
		if cfg, err := os.ReadFile(filepath.Join(dir, "sdt-config.h")); err == nil {
			files["sdt-config.h"] = cfg
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(inc, "sys", name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return inc
	}
	testutil.Unavailable(t, "no sys/sdt.h (apt-get install systemtap-sdt-dev)")
	return ""
}

// buildTortureARM64 cross-compiles the torture workload for arm64 with cc
// ("gcc": aarch64-linux-gnu-gcc, or "clang": clang --target=aarch64-linux-gnu,
// linked by aarch64-linux-gnu-gcc) at optimization level opt ("-O0", "-O2"),
// as torture.c describes, into a temporary directory.
func buildTortureARM64(t *testing.T, inc, cc, opt string) *armBuild {
	t.Helper()
	const gcc = "aarch64-linux-gnu-gcc"
	if _, err := exec.LookPath(gcc); err != nil {
		testutil.Unavailable(t, "no %s (apt-get install gcc-aarch64-linux-gnu)", gcc)
	}
	compiler := []string{gcc}
	if cc == "clang" {
		if _, err := exec.LookPath("clang"); err != nil {
			testutil.Unavailable(t, "no clang")
		}
		compiler = []string{"clang", "--target=aarch64-linux-gnu"}
	}
	src, err := filepath.Abs(tortureDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := func(name string) string { return filepath.Join(src, name) }
	out := func(name string) string { return filepath.Join(dir, name) }
	run := func(cmd []string, args ...string) {
		t.Helper()
		args = append(cmd[1:len(cmd):len(cmd)], args...)
		if o, err := exec.Command(cmd[0], args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", cmd[0], strings.Join(args, " "), err, o)
		}
	}
	cflags := []string{"-Wall", "-Werror", opt, "-I" + inc}
	compile := func(obj, file string, extra ...string) {
		t.Helper()
		run(compiler, append(append(append([]string{}, cflags...), extra...), "-c", "-o", out(obj), in(file))...)
	}
	compile("torturelib.o", "torturelib.c", "-fPIC")
	run([]string{gcc}, "-shared", "-o", out("libtorture.so"), out("torturelib.o"))
	compile("frames_rbp.o", "frames.c", "-fno-omit-frame-pointer", "-DFRAME_VARIANT=rbp")
	compile("frames_rsp.o", "frames.c", "-fomit-frame-pointer", "-DFRAME_VARIANT=rsp")
	compile("torture.o", "torture.c")
	compile("torture_sem.o", "torture_sem.c")
	compile("forms_arm64.o", "forms_arm64.S")
	b := &armBuild{name: cc + opt, exe: out("torture"), lib: out("libtorture.so")}
	run([]string{gcc}, "-o", b.exe, out("torture.o"), out("torture_sem.o"), out("frames_rbp.o"), out("frames_rsp.o"),
		out("forms_arm64.o"), "-L"+dir, "-ltorture", "-Wl,-rpath,"+dir)
	return b
}

// Independent of the parser: what an arm64 operand reads, decoded from its
// text with regular expressions, register offsets from struct user_pt_regs.
var (
	oracleSized = regexp.MustCompile(`^(?:(-?)([0-9]+)@)?(.+)$`)
	oracleReg   = regexp.MustCompile(`^(?:([xw])([0-9]+)|(sp|wsp|fp|lr|xzr|wzr))$`)
	oracleImm   = regexp.MustCompile(`^#?([-+]?(?:0x[0-9a-f]+|[0-9]+))$`)
	oracleMem   = regexp.MustCompile(`^\[\s*(x[0-9]+|sp|fp|lr)\s*(?:,\s*(.*?))?\s*\]$`)
	oracleLo12  = regexp.MustCompile(`^#?:lo12:([A-Za-z_.][A-Za-z0-9_.]*)(?:\+([0-9]+))?$`)
	oracleIndex = regexp.MustCompile(`^x([0-9]+)(?:\s*,\s*lsl\s+#?([0-3]))?$`)
)

// oracleRegOff returns the user_pt_regs offset and width of a register.
func oracleRegOff(name string) (off uint8, width int, zero bool) {
	m := oracleReg.FindStringSubmatch(name)
	if m == nil {
		return 0, 0, false
	}
	switch m[3] {
	case "sp":
		return 31 * 8, 8, false
	case "wsp":
		return 31 * 8, 4, false
	case "fp":
		return 29 * 8, 8, false
	case "lr":
		return 30 * 8, 8, false
	case "xzr":
		return 0, 8, true
	case "wzr":
		return 0, 4, true
	}
	n, _ := strconv.Atoi(m[2])
	if m[1] == "w" {
		return uint8(8 * n), 4, false
	}
	return uint8(8 * n), 8, false
}

// oracleNum parses a decimal or hex number of any sign as 64 bits.
func oracleNum(s string) int64 {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	u, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		panic(fmt.Sprintf("oracle: number %q: %v", s, err))
	}
	if neg {
		return -int64(u)
	}
	return int64(u)
}

// oracleARM64 returns the spec that records the arm64 operand text, sym
// giving a symbol's address; false for an operand it does not decode.
func oracleARM64(text string, sym func(string) (uint64, bool)) (bpf.ArgSpec, bool) {
	m := oracleSized.FindStringSubmatch(text)
	size, signed := 0, m[1] == "-"
	if m[2] != "" {
		size, _ = strconv.Atoi(m[2])
	}
	body := m[3]
	s := bpf.ArgSpec{}
	if signed {
		s.IsSigned = 1
	}
	cut := func(v int64) int64 {
		if size == 8 {
			return v
		}
		v &= 1<<(8*size) - 1
		if signed && v>>(8*size-1) != 0 {
			v -= 1 << (8 * size)
		}
		return v
	}
	if off, w, zero := oracleRegOff(body); w != 0 {
		if size == 0 {
			size = w
		}
		s.Size = uint8(min(size, w))
		if zero {
			s.Kind, s.Size = bpf.KindConst, uint8(size)
			return s, true
		}
		s.Kind, s.Reg = bpf.KindReg, off
		return s, true
	}
	if size == 0 {
		size = 8
	}
	s.Size = uint8(size)
	if im := oracleImm.FindStringSubmatch(body); im != nil {
		s.Kind, s.Off = bpf.KindConst, cut(oracleNum(im[1]))
		return s, true
	}
	mm := oracleMem.FindStringSubmatch(body)
	if mm == nil {
		return s, false
	}
	s.Kind = bpf.KindRegDeref
	s.Reg, _, _ = oracleRegOff(mm[1])
	switch d := mm[2]; {
	case d == "":
	case oracleImm.MatchString(d):
		s.Off = oracleNum(oracleImm.FindStringSubmatch(d)[1])
	case oracleLo12.MatchString(d):
		l := oracleLo12.FindStringSubmatch(d)
		v, ok := sym(l[1])
		if !ok {
			return s, false
		}
		add := uint64(0)
		if l[2] != "" {
			add = uint64(oracleNum(l[2]))
		}
		s.Off = int64((v + add) % 4096)
	case oracleIndex.MatchString(d):
		x := oracleIndex.FindStringSubmatch(d)
		n, _ := strconv.Atoi(x[1])
		shift := 0
		if x[2] != "" {
			shift, _ = strconv.Atoi(x[2])
		}
		s.Kind, s.IndexReg, s.Scale = bpf.KindSIB, uint8(8*n), uint8(1<<shift)
	default:
		return s, false
	}
	return s, true
}

// operandFormsARM64 are the operand forms that must occur in the arm64
// builds' notes, each matched against an operand's text.
var operandFormsARM64 = []struct {
	name string
	re   *regexp.Regexp
}{
	{"SIZE@xN", regexp.MustCompile(`^-?[1248]@x[0-9]+$`)},
	{"SIZE@wN", regexp.MustCompile(`^-?[1248]@w[0-9]+$`)},
	{"SIZE@sp", regexp.MustCompile(`^-?[1248]@sp$`)},
	{"SIZE@wsp", regexp.MustCompile(`^-?[1248]@wsp$`)},
	{"SIZE@fp, SIZE@lr", regexp.MustCompile(`^-?[1248]@(fp|lr)$`)},
	{"xzr, wzr", regexp.MustCompile(`(^|@)[xw]zr$`)},
	{"a register without a size", regexp.MustCompile(`^([xw][0-9]+|sp|wsp|fp|lr)$`)},
	{"SIZE@[xN]", regexp.MustCompile(`^-?[1248]@\[x[0-9]+\]$`)},
	{"SIZE@[xN, OFF]", regexp.MustCompile(`^-?[1248]@\[x[0-9]+, *[0-9]+\]$`)},
	{"SIZE@[xN, -OFF]", regexp.MustCompile(`^-?[1248]@\[x[0-9]+, *-[0-9]+\]$`)},
	{"SIZE@[sp]", regexp.MustCompile(`^-?[1248]@\[sp\]$`)},
	{"SIZE@[sp, OFF]", regexp.MustCompile(`^-?[1248]@\[sp, *[0-9]+\]$`)},
	{"SIZE@[fp, -OFF]", regexp.MustCompile(`^-?[1248]@\[fp, *-[0-9]+\]$`)},
	{"SIZE@[base, #OFF]", regexp.MustCompile(`^-?[1248]@\[[a-z0-9]+, *#[0-9]+\]$`)},
	{"SIZE@[base, #-OFF]", regexp.MustCompile(`^-?[1248]@\[[a-z0-9]+, *#-[0-9]+\]$`)},
	{"SIZE@[base, 0xOFF]", regexp.MustCompile(`^-?[1248]@\[[a-z0-9]+, *#?0x[0-9a-f]+\]$`)},
	{"SIZE@[xN, xM]", regexp.MustCompile(`^-?[1248]@\[x[0-9]+, *x[0-9]+\]$`)},
	{"SIZE@[xN, xM, lsl #n]", regexp.MustCompile(`^-?[1248]@\[x[0-9]+, *x[0-9]+, *lsl #?[0-3]\]$`)},
	{"SIZE@[xN, #:lo12:sym]", regexp.MustCompile(`^-?[1248]@\[x[0-9]+, *#?:lo12:[a-z_]+(\+[0-9]+)?\]$`)},
	{"SIZE@IMM", regexp.MustCompile(`^-?[1248]@[0-9]+$`)},
	{"SIZE@-IMM", regexp.MustCompile(`^-?[1248]@-[0-9]+$`)},
	{"SIZE@#IMM", regexp.MustCompile(`^-?[1248]@#-?[0-9]+$`)},
	{"1@", regexp.MustCompile(`^1@`)}, {"-1@", regexp.MustCompile(`^-1@`)},
	{"2@", regexp.MustCompile(`^2@`)}, {"-2@", regexp.MustCompile(`^-2@`)},
	{"4@", regexp.MustCompile(`^4@`)}, {"-4@", regexp.MustCompile(`^-4@`)},
	{"8@", regexp.MustCompile(`^8@`)}, {"-8@", regexp.MustCompile(`^-8@`)},
}

// TestReadNotesARM64 cross-compiles the torture workload for arm64 with gcc and
// clang at -O0 and -O2 and reads the notes of its executable and shared
// library: every operand of every site must parse, with the text the note
// has, into the spec an independent decoding of that text gives; every
// form gcc and clang emit and forms_arm64.S writes must occur across the
// builds; the semaphores lie in .probes, every location is a nop, and the
// inlined probe has several sites.
func TestReadNotesARM64(t *testing.T) {
	inc := crossInclude(t)
	found := map[string][]string{}
	regs := map[string]bool{}
	for _, cc := range []string{"gcc", "clang"} {
		for _, opt := range []string{"-O0", "-O2"} {
			t.Run(cc+opt, func(t *testing.T) {
				b := buildTortureARM64(t, inc, cc, opt)
				n := 0
				for _, path := range []string{b.exe, b.lib} {
					n += checkARM64Notes(t, path, func(p *Probe, a *Arg) {
						for _, f := range operandFormsARM64 {
							if f.re.MatchString(a.Text) {
								found[f.name] = append(found[f.name], fmt.Sprintf("%s %s %s", b.name, p, a.Text))
							}
						}
						if a.Kind == Reg {
							regs[a.Reg] = true
						}
					})
				}
				exe, err := Read(b.exe)
				if err != nil {
					t.Fatal(err)
				}
				lib, err := Read(b.lib)
				if err != nil {
					t.Fatal(err)
				}
				for _, pn := range []struct {
					probes []Probe
					name   string
				}{{exe, "torture:guarded"}, {lib, "torturelib:guarded"}, {lib, "torturelib:call"}} {
					prov, name, _ := strings.Cut(pn.name, ":")
					if p, err := Find(pn.probes, prov, name); err != nil || p.Semaphore == 0 {
						t.Errorf("%s: no semaphore (%v)", pn.name, err)
					}
				}
				if p, err := Find(exe, "torture", "inlined"); err != nil || len(p.Sites) < 3 {
					t.Errorf("torture:inlined: want several sites: %v", err)
				}
				if p, err := Find(exe, "torture_asm", "args13"); err != nil || len(p.Args) != 13 {
					t.Errorf("torture_asm:args13: want 13 args: %v", err)
				}
				t.Logf("%s: %d operands checked", b.name, n)
			})
		}
	}
	if t.Failed() {
		return
	}
	for _, f := range operandFormsARM64 {
		if ex := found[f.name]; len(ex) == 0 {
			t.Errorf("no operand of the form %s in any build", f.name)
		} else {
			t.Logf("%-24s %4d, e.g. %s", f.name, len(ex), ex[0])
		}
	}
	for n := range 31 {
		for _, r := range []string{fmt.Sprint("x", n), fmt.Sprint("w", n)} {
			if !regs[r] {
				t.Errorf("register %s never read", r)
			}
		}
	}
}

// checkARM64Notes reads the arm64 ELF file at path and checks each operand
// of each site against oracleARM64, calling each for every argument; it
// returns how many operands it checked.
func checkARM64Notes(t *testing.T, path string, each func(*Probe, *Arg)) int {
	t.Helper()
	probes, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(probes) == 0 {
		t.Fatalf("%s: no probes", path)
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 {
		t.Fatalf("%s: machine %v", path, f.Machine)
	}
	syms, _ := f.Symbols()
	sym := func(name string) (uint64, bool) {
		for _, s := range syms {
			if s.Name == name {
				return s.Value, true
			}
		}
		return 0, false
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	probesSec := f.Section(".probes")
	n := 0
	for i := range probes {
		p := &probes[i]
		if p.Semaphore != 0 && (probesSec == nil || p.Semaphore < probesSec.Offset || p.Semaphore >= probesSec.Offset+probesSec.Size) {
			t.Errorf("%s: semaphore %#x not in .probes", p, p.Semaphore)
		}
		for _, s := range p.Sites {
			if s.Location+4 > uint64(len(raw)) || binary.LittleEndian.Uint32(raw[s.Location:]) != arm64Nop {
				t.Errorf("%s: location %#x is not a nop", p, s.Location)
			}
			if s.Err != nil {
				t.Errorf("%s at %#x (%s): %v", p, s.Addr, s.ArgsText, s.Err)
				continue
			}
			// The operands as the note writes them, in order.
			texts := regexp.MustCompile(`\S*\[[^]]*\]|\S+`).FindAllString(s.ArgsText, -1)
			if len(texts) != len(s.Args) {
				t.Errorf("%s at %#x: %d args from %q", p, s.Addr, len(s.Args), s.ArgsText)
				continue
			}
			for k := range s.Args {
				a := &s.Args[k]
				n++
				if a.Arch != bpf.ARM64 || a.Text != texts[k] {
					t.Errorf("%s arg %d: text %q arch %v, want %q arm64", p, k, a.Text, a.Arch, texts[k])
				}
				want, ok := oracleARM64(a.Text, sym)
				if !ok {
					t.Errorf("%s arg %d %q: the test cannot decode it", p, k, a.Text)
					continue
				}
				got, err := a.BPF()
				if err != nil {
					t.Errorf("%s arg %d: %v", p, k, err)
					continue
				}
				if got != want {
					t.Errorf("%s arg %d %q: spec %+v, want %+v", p, k, a.Text, got, want)
				}
				checkSpec(t, bpf.ARM64, got)
				each(p, a)
			}
		}
	}
	return n
}

// TestReadNoteMachine checks that Read takes the architecture from the ELF
// machine: an arm64 note is read as arm64 operands, and a machine bpftape
// does not know is refused with an error that names it.
func TestReadNoteMachine(t *testing.T) {
	inc := crossInclude(t)
	b := buildTortureARM64(t, inc, "gcc", "-O2")
	raw, err := os.ReadFile(b.exe)
	if err != nil {
		t.Fatal(err)
	}
	// e_machine is the 2 bytes at offset 18 of the ELF header.
	binary.LittleEndian.PutUint16(raw[18:], uint16(elf.EM_RISCV))
	other := filepath.Join(t.TempDir(), "riscv")
	if err := os.WriteFile(other, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Read(other)
	if err == nil || !strings.Contains(err.Error(), "EM_RISCV") || !strings.Contains(err.Error(), "unsupported") {
		t.Errorf("Read of a riscv64 binary: %v", err)
	}
	// The same notes read as x86-64 operands fail: the machine decides.
	binary.LittleEndian.PutUint16(raw[18:], uint16(elf.EM_X86_64))
	x86 := filepath.Join(t.TempDir(), "x86")
	if err := os.WriteFile(x86, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	probes, err := Read(x86)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Find(probes, "torture_asm", "mem_stack")
	if err != nil {
		t.Fatal(err)
	}
	if p.Err == nil {
		t.Errorf("arm64 operands %q read as x86-64 ones: %+v", p.Sites[0].ArgsText, p.Args)
	}
}
