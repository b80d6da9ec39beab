package ctypes

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/bpf"
)

// abiSource is the arm64 workload: functions whose parameters AAPCS64
// places in every way a probe meets (testdata/abi/README).
const abiSource = "../../testdata/abi/abiwork.c"

// crossCC returns the arm64 cross compiler.
func crossCC(t testing.TB) string {
	t.Helper()
	cc, err := exec.LookPath("aarch64-linux-gnu-gcc")
	if err != nil {
		t.Skip("no aarch64-linux-gnu-gcc (Debian: apt-get install gcc-aarch64-linux-gnu)")
	}
	return cc
}

// buildA64 compiles the arm64 workload with args (-O0, -O2; -S for
// assembly) once per test binary, into out, and returns its path.
func buildA64(t testing.TB, out string, args ...string) string {
	t.Helper()
	cc := crossCC(t)
	buildsMu.Lock()
	defer buildsMu.Unlock()
	key := "arm64 " + out + " " + strings.Join(args, " ")
	if p, ok := builds[key]; ok {
		return p
	}
	dir := filepath.Join(workDir, "arm64")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, out)
	all := append(append([]string{"-g", "-Wall"}, args...), "-o", p, abiSource)
	if b, err := exec.Command(cc, all...).CombinedOutput(); err != nil {
		t.Fatalf("aarch64-linux-gnu-gcc %v: %v\n%s", all, err, b)
	}
	builds[key] = p
	return p
}

// a64Want is the placement of each parameter of the workload's functions,
// and last of the return value, derived by hand from AAPCS64: a Location,
// or the sentinel error of a value probes cannot read (with, for
// ErrSSEParam, the v registers the message names).
var a64Want = func() map[string][]any {
	x := func(n int) Location { return Location{Arch: bpf.ARM64, Reg: fmt.Sprintf("x%d", n)} }
	xx := func(n int) Location { l := x(n); l.Reg2 = fmt.Sprintf("x%d", n+1); return l }
	ind := func(n int) Location { l := x(n); l.Indirect = true; return l }
	sp := func(off int64) Location { return Location{Arch: bpf.ARM64, Stack: true, StackOff: off} }
	v := func(regs string) error { return fmt.Errorf("%w: %s", ErrSSEParam, regs) }
	xs := func(from, to int) []any {
		var l []any
		for n := from; n <= to; n++ {
			l = append(l, x(n))
		}
		return l
	}
	cat := func(parts ...any) []any {
		var l []any
		for _, p := range parts {
			if s, ok := p.([]any); ok {
				l = append(l, s...)
			} else {
				l = append(l, p)
			}
		}
		return l
	}
	vs := func(from, to int) []any {
		var l []any
		for n := from; n <= to; n++ {
			l = append(l, v(fmt.Sprintf("v%d", n)))
		}
		return l
	}
	return map[string][]any{
		"f8": cat(xs(0, 7), x(0)),
		// The ninth and tenth at sp+0 and sp+8: no return address there.
		"f10": cat(xs(0, 7), sp(0), sp(8), x(0)),
		// Each stack argument takes an 8-byte slot, a char too.
		"mix":    cat(xs(0, 7), sp(0), sp(8), sp(16), x(0)),
		"pass12": {x(0), xx(1), x(3), x(0)},
		"pass16": {xx(0), x(2), x(0)},
		// 16-byte alignment: an even register first (x1 is left unused).
		"pass_q16":  {x(0), xx(2), x(4), x(0)},
		"pass_i128": {x(0), xx(2), x(4), x(0)},
		"pass_m16":  {x(0), xx(2), x(4), x(0)},
		// An aligned attribute on the type is not the natural alignment.
		"pass_t16": {x(0), xx(1), x(3), x(0)},
		// s does not fit in x7: the stack, and every later integer too.
		"after7":   cat(xs(0, 6), sp(0), sp(16), x(0)),
		"pass_big": {x(0), ind(1), x(2), x(0)},
		// The address of the copy is the ninth integer: at sp+0.
		"big_stack": cat(xs(0, 7), Location{Arch: bpf.ARM64, Stack: true, StackOff: 0, Indirect: true}, sp(8), x(0)),
		// Floats take v registers and leave the x registers to the ints.
		"floats":   {x(0), v("v0"), x(1), v("v1"), x(2), x(0)},
		"pass_hfa": {x(0), v("v0 to v3"), x(1), x(0)},
		// Homogeneous: in v registers though over 16 bytes.
		"pass_hd4":  {x(0), v("v0 to v3"), x(1), x(0)},
		"pass_cplx": {x(0), v("v0 to v1"), x(1), x(0)},
		// A float and an int: no homogeneous aggregate, an x register.
		"pass_fi": {x(0), x(1), x(2), x(0)},
		// The ninth double is on the stack before the ninth long.
		"doubles9": cat(vs(0, 7), sp(0), xs(0, 7), sp(8), x(0)),
		// A float on the stack takes an 8-byte slot too.
		"floats9": cat(vs(0, 7), sp(0), xs(0, 7), sp(8), x(0)),
		// Two registers needed, x7 left: the stack, and x7 stays unused.
		"pass_s9": cat(xs(0, 6), sp(0), sp(16), x(0)),
		// Packed: alignment 1, two registers.
		"pass_pk":    {x(0), xx(1), x(3), x(0)},
		"stack_i128": cat(xs(0, 6), sp(0), sp(16), x(0)),
		// A 16-aligned slot on the stack: sp+8 is skipped.
		"stack_q16": cat(xs(0, 7), sp(0), sp(16), sp(32), x(0)),
		// Four v registers needed, one left: the stack, and no more v
		// registers; the long still gets x0.
		"hfa_stack": cat(vs(0, 6), sp(0), x(0), x(0)),
		"vararg":    {x(0), x(0)},

		"ret_int":    {x(0)},
		"ret12":      {xx(0)},
		"ret16":      {xx(0)},
		"ret24":      {fmt.Errorf("%w: x8", ErrNoLocation)},
		"ret_double": {v("v0")},
		"ret_hfa":    {v("v0 to v3")},
		"ret_i128":   {xx(0)},
		"ret_fi":     {x(0)},
	}
}()

// checkWant compares a location and its error with a want of a64Want.
func checkWant(loc Location, err error, want any) string {
	switch w := want.(type) {
	case Location:
		if err != nil || loc != w {
			return fmt.Sprintf("%v (%v), want %v", loc, err, w)
		}
	case error:
		sentinel := errors.Unwrap(w)
		text := strings.TrimPrefix(w.Error(), sentinel.Error()+": ")
		if !errors.Is(err, sentinel) || !strings.Contains(fmt.Sprint(err), text) || strings.Contains(fmt.Sprint(err), "\n") {
			return fmt.Sprintf("%v, %v; want %v naming %s", loc, err, sentinel, text)
		}
	}
	return ""
}

// TestAAPCS64 reads the arm64 workload's DWARF (-O0, -O2, and a stripped
// -O2 with a separate debug file) and checks every parameter's and return
// value's place against AAPCS64 as a64Want derives it.
func TestAAPCS64(t *testing.T) {
	o0, o2 := buildA64(t, "abiwork-O0", "-O0"), buildA64(t, "abiwork-O2", "-O2")
	stripped, dir := strippedWith(t, "aarch64-linux-gnu-", o2, true)
	for name, path := range map[string]string{"O0": o0, "O2": o2, "O2-stripped": stripped} {
		t.Run(name, func(t *testing.T) {
			var dirs []string
			if path == stripped {
				dirs = []string{dir}
			}
			b, err := OpenBinary(path, dirs)
			if err != nil {
				t.Fatal(err)
			}
			if b.Arch() != bpf.ARM64 {
				t.Fatalf("arch %v, want arm64", b.Arch())
			}
			for fname, want := range a64Want {
				fn, err := b.Func(fname)
				if err != nil {
					t.Errorf("%s: %v", fname, err)
					continue
				}
				if fn.Arch != bpf.ARM64 || len(fn.Params) != len(want)-1 {
					t.Errorf("%s: %v, %d params, want arm64 and %d: %s", fname, fn.Arch, len(fn.Params), len(want)-1, fn.Signature())
					continue
				}
				for i, p := range fn.Params {
					if msg := checkWant(p.Loc, p.Err, want[i]); msg != "" {
						t.Errorf("%s %s: %s", fname, p.ArgName(), msg)
					}
				}
				if msg := checkWant(fn.RetLoc, fn.RetErr, want[len(want)-1]); msg != "" {
					t.Errorf("%s return: %s", fname, msg)
				}
			}
			fn, err := b.Func("vararg")
			if err != nil || !fn.Variadic || fn.Signature() != "long int vararg(int n, ...)" {
				t.Errorf("vararg: %v, %v", fn.Signature(), err)
			}
		})
	}
}

// TestAAPCS64Strings checks Location.String's arm64 spellings, and that
// a location's pt_regs base is the architecture's.
func TestAAPCS64Strings(t *testing.T) {
	for _, c := range []struct {
		loc  Location
		want string
		reg  uint8
		off  int64
		ok   bool
	}{
		{Location{Arch: bpf.ARM64, Reg: "x0"}, "x0", bpf.RegX(0), 0, true},
		{Location{Arch: bpf.ARM64, Reg: "x7"}, "x7", bpf.RegX(7), 0, true},
		{Location{Arch: bpf.ARM64, Reg: "x0", Reg2: "x1"}, "x0:x1", 0, 0, false},
		{Location{Arch: bpf.ARM64, Stack: true, StackOff: 0}, "sp+0", bpf.RegARM64SP, 0, true},
		{Location{Arch: bpf.ARM64, Stack: true, StackOff: 16}, "sp+16", bpf.RegARM64SP, 16, true},
		{Location{Arch: bpf.ARM64, Reg: "x0", Indirect: true}, "*x0", 0, 0, false},
		{Location{Arch: bpf.ARM64, Stack: true, StackOff: 8, Indirect: true}, "*(sp+8)", 0, 0, false},
		{Location{Arch: bpf.AMD64, Reg: "di"}, "rdi", bpf.RegDI, 0, true},
		{Location{Arch: bpf.AMD64, Reg: "r8"}, "r8", bpf.RegR8, 0, true},
		{Location{Arch: bpf.AMD64, Reg: "di", Reg2: "si"}, "rdi:rsi", 0, 0, false},
		{Location{Arch: bpf.AMD64, Stack: true, StackOff: 8}, "rsp+8", bpf.RegSP, 8, true},
		{Location{Arch: bpf.AMD64, Reg: "ax", Indirect: true}, "*rax", 0, 0, false},
		{Location{}, "nowhere", 0, 0, false},
	} {
		reg, off, ok := c.loc.PtRegs()
		if got := c.loc.String(); got != c.want || ok != c.ok || ok && (reg != c.reg || off != c.off) {
			t.Errorf("%+v: %q, PtRegs %d+%d %v; want %q, %d+%d %v", c.loc, got, reg, off, ok, c.want, c.reg, c.off, c.ok)
		}
	}
}

// TestAAPCS64Access resolves paths from parameters and return values
// where AAPCS64 puts them: a member of a struct in a register pair is
// read from its register, a parameter on the stack at sp+offset, one
// passed by reference through the address in its register or stack slot.
func TestAAPCS64Access(t *testing.T) {
	b, err := OpenBinary(buildA64(t, "abiwork-O2", "-O2"), nil)
	if err != nil {
		t.Fatal(err)
	}
	big, err := b.LookupStruct("big")
	if err != nil {
		t.Fatal(err)
	}
	offC := big.Members[2].Offset
	for _, c := range []struct {
		fn, param string
		path      []Step
		base      string // the base Location's String
		reads     []int64
		leaf      LeafKind
		off, size int64
	}{
		{"pass16", "s", []Step{Dot("a")}, "x0", nil, LeafValue, 0, 8},
		{"pass16", "s", []Step{Dot("b")}, "x1", nil, LeafValue, 0, 8},
		{"pass12", "s", []Step{Dot("c")}, "x2", nil, LeafValue, 0, 4},
		{"pass_m16", "m", []Step{Dot("b")}, "x3", nil, LeafValue, 0, 8},
		{"f10", "j", nil, "sp+8", nil, LeafRead, 0, 8},
		{"mix", "k", nil, "sp+16", nil, LeafRead, 0, 4},
		{"after7", "s", []Step{Dot("b")}, "sp+0", nil, LeafRead, 8, 8},
		{"after7", "h", nil, "sp+16", nil, LeafRead, 0, 4},
		{"pass_big", "s", []Step{Dot("c")}, "x1", nil, LeafRead, offC, 8},
		{"big_stack", "s", []Step{Dot("c")}, "sp+0", []int64{0}, LeafRead, offC, 8},
		{"big_stack", "i", nil, "sp+8", nil, LeafRead, 0, 1},
		// A float in an x register (no homogeneous aggregate): still no
		// integer to record.
		{"pass_fi", "s", []Step{Dot("f")}, "", nil, 0, 0, 0},
	} {
		what := c.fn + " " + FormatPath(c.param, c.path)
		fn, err := b.Func(c.fn)
		if err != nil {
			t.Fatal(err)
		}
		base, a, err := fn.ParamAccess(c.param, c.path)
		if c.base == "" {
			if !errors.Is(err, ErrNotValue) || !strings.Contains(err.Error(), "s.f is float") {
				t.Errorf("%s: %v %v, %v; want ErrNotValue", what, base, a, err)
			}
			continue
		}
		var reads []int64
		for _, r := range a.Reads {
			reads = append(reads, r.Off)
		}
		if err != nil || base.String() != c.base || fmt.Sprint(reads) != fmt.Sprint(c.reads) || a.Leaf != c.leaf || a.Off != c.off || a.Size != c.size {
			t.Errorf("%s: base %v, %v, %v; want base %s, reads %v, leaf %v at %d of %d bytes", what, base, a, err, c.base, c.reads, c.leaf, c.off, c.size)
		}
	}
	// A member of a 16-byte struct returned in x0:x1 is in its register.
	fn, err := b.Func("ret16")
	if err != nil {
		t.Fatal(err)
	}
	for name, reg := range map[string]string{"a": "x0", "b": "x1"} {
		if base, a, err := fn.RetAccess([]Step{Dot(name)}); err != nil || base.String() != reg || a.Leaf != LeafValue {
			t.Errorf("ret16 retval.%s: %v %v %v, want %s", name, base, a, err, reg)
		}
	}
	fn, err = b.Func("ret24")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := fn.RetAccess([]Step{Dot("a")}); !errors.Is(err, ErrNoLocation) || !strings.Contains(err.Error(), "x8") {
		t.Errorf("ret24 retval.a: %v, want ErrNoLocation naming x8", err)
	}
}

// a64Value is the value the workload passes as scalar j of parameter i
// (testdata/abi/abiwork.c's scheme): 10*(i+1)+j, plus 0.5 for a float.
func a64Value(i, j int) int64 { return int64(10*(i+1) + j) }

// expectBytes lays out the bytes of parameter i of type t by the scheme,
// from t's members (not from any ABI): byte offset to value; padding is
// left out.
func expectBytes(t *testing.T, i int, typ *Type) map[int64]byte {
	out := map[int64]byte{}
	j := 0
	put := func(off int64, v uint64, n int64) {
		for k := range n {
			out[off+k] = byte(v >> (8 * k))
		}
	}
	var walk func(typ *Type, off int64)
	walk = func(typ *Type, off int64) {
		switch typ.Kind {
		case Struct:
			for _, m := range typ.Members {
				walk(m.Type, off+m.Offset)
			}
		case Array:
			for k := range typ.Len {
				walk(typ.Elem(), off+k*typ.Elem().Size)
			}
		case Int, Bool, Enum:
			v := uint64(a64Value(i, j))
			j++
			put(off, v, min(typ.Size, 8))
			if typ.Size == 16 {
				put(off+8, v, 8)
			}
		case Float:
			if typ.complex { // two parts
				part := &Type{Kind: Float, Size: typ.Size / 2}
				walk(part, off)
				walk(part, off+part.Size)
				return
			}
			f := float64(a64Value(i, j)) + 0.5
			j++
			switch typ.Size {
			case 4:
				put(off, uint64(math.Float32bits(float32(f))), 4)
			case 8:
				put(off, math.Float64bits(f), 8)
			default:
				t.Fatalf("parameter %d: a %d-byte float", i, typ.Size)
			}
		default:
			t.Fatalf("parameter %d: %s is not in the workload's scheme", i, typ)
		}
	}
	walk(typ, 0)
	return out
}

// vRegsIn returns the v registers an ErrSSEParam message names.
var vRegsIn = regexp.MustCompile(`in v(\d+)(?: to v(\d+))?,`)

func namedVRegs(t *testing.T, err error) []int {
	m := vRegsIn.FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("%v names no v register", err)
	}
	first, _ := strconv.Atoi(m[1])
	last := first
	if m[2] != "" {
		last, _ = strconv.Atoi(m[2])
	}
	var regs []int
	for n := first; n <= last; n++ {
		regs = append(regs, n)
	}
	return regs
}

// TestAAPCS64GroundTruth checks the placement against gcc's own: the
// workload's main, compiled to assembly (-O0 and -O2), is run by a small
// arm64 interpreter (a64emu_test.go) up to each call, and each parameter's
// bytes (by the workload's value scheme and the DWARF's member offsets)
// must be where Func puts it: in its x registers, at sp+offset, behind
// the address its register or stack slot holds; a float or homogeneous
// float aggregate in the v registers its error names. Each return-value
// function is run to its ret the same way: the value must be in RetLoc's
// registers or the v registers the error names, and a 24-byte struct in
// the memory whose address the caller passed in x8.
func TestAAPCS64GroundTruth(t *testing.T) {
	b, err := OpenBinary(buildA64(t, "abiwork-O0", "-O0"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range []string{"-O0", "-O2"} {
		t.Run(opt, func(t *testing.T) {
			asm, err := os.ReadFile(buildA64(t, "abiwork"+opt+".s", opt, "-S", "-g0"))
			if err != nil {
				t.Fatal(err)
			}
			prog := parseA64(t, string(asm))
			calls := prog.run(t, "main", false)
			checked := map[string]bool{}
			for _, call := range calls {
				if a64Want[call.callee] == nil || strings.HasPrefix(call.callee, "ret") {
					continue // printf; the return-value functions are checked at their return
				}
				fn, err := b.Func(call.callee)
				if err != nil {
					t.Fatal(err)
				}
				checked[call.callee] = true
				for i, p := range fn.Params {
					want := expectBytes(t, i, p.Type)
					what := fmt.Sprintf("%s: %s %s", opt, call.callee, p.ArgName())
					if p.Err != nil {
						call.checkV(t, what, p.Err, want, p.Type)
						continue
					}
					call.check(t, what, p.Loc, want)
				}
			}
			for name := range a64Want {
				if !strings.HasPrefix(name, "ret") {
					if !checked[name] {
						t.Errorf("%s: main calls no %s", opt, name)
					}
					continue
				}
				fn, err := b.Func(name)
				if err != nil {
					t.Fatal(err)
				}
				rets := prog.run(t, name, true)
				if len(rets) != 1 {
					t.Fatalf("%s: %s returned %d times", opt, name, len(rets))
				}
				r := rets[0]
				want := expectBytes(t, 0, fn.Return)
				what := fmt.Sprintf("%s: %s return", opt, name)
				switch {
				case fn.RetErr == nil:
					r.check(t, what, fn.RetLoc, want)
				case errors.Is(fn.RetErr, ErrSSEParam):
					r.checkV(t, what, fn.RetErr, want, fn.Return)
				case errors.Is(fn.RetErr, ErrNoLocation):
					// Written to the memory the caller's x8 points to.
					r.checkMem(t, what, "x8", 0, want)
				default:
					t.Errorf("%s: %v", what, fn.RetErr)
				}
			}
		})
	}
}

// TestPlainCharCast: a cast to plain char takes the signedness of the
// binary's char, unsigned on arm64 and signed on x86-64, and without
// debug info the host's (this host is x86-64).
func TestPlainCharCast(t *testing.T) {
	a64, err := OpenBinary(buildA64(t, "abiwork-O0", "-O0"), nil)
	if err != nil {
		t.Fatal(err)
	}
	x86, err := OpenBinary(build(t, "-O0"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		src    Source
		signed bool
	}{{"arm64 DWARF", a64, false}, {"x86-64 DWARF", x86, true}, {"no debug info", nil, true}} {
		typ, err := ParseType("char", c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if typ.Kind != Int || typ.Size != 1 || typ.Signed != c.signed {
			t.Errorf("%s: (char) is %v (kind %v, size %d, signed %v), want signed %v", c.name, typ, typ.Kind, typ.Size, typ.Signed, c.signed)
		}
	}
}
