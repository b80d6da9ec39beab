package resolve

import (
	"debug/elf"
	"errors"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/record/ctypes"
)

// buildABIWork builds testdata/abi/abiwork.c for arm64 (-g -O2).
func buildABIWork(t *testing.T) string {
	t.Helper()
	cc, err := exec.LookPath("aarch64-linux-gnu-gcc")
	if err != nil {
		t.Skip("no aarch64-linux-gnu-gcc (Debian: apt-get install gcc-aarch64-linux-gnu)")
	}
	out := filepath.Join(t.TempDir(), "abiwork")
	if b, err := exec.Command(cc, "-g", "-O2", "-o", out, "../../testdata/abi/abiwork.c").CombinedOutput(); err != nil {
		t.Fatalf("aarch64-linux-gnu-gcc: %v\n%s", err, b)
	}
	return out
}

// field parses one field of a uprobe (uretprobe with ret) on fn.
func field(t *testing.T, fn, text string, ret bool) probespec.Field {
	t.Helper()
	kind := "u"
	if ret {
		kind = "ur"
	}
	s, err := probespec.Parse(kind + ":/bin/x:" + fn + "(" + text + ")")
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return s.Fields[0]
}

// TestResolveForeignBinary: a uprobe on a binary of another architecture
// than the host's is refused first, in one line that names both machines
// (not with an error about its symbols or instructions).
func TestResolveForeignBinary(t *testing.T) {
	if bpf.HostArch() != bpf.AMD64 {
		t.Skipf("the test builds an arm64 binary, foreign to amd64 hosts; this is %s", runtime.GOARCH)
	}
	bin := buildABIWork(t)
	for _, spec := range []string{"u:" + bin + ":f8", "ur:" + bin + ":ret_int", "u:" + bin + ":nosuchfunc(arg0)", "u:" + bin + ":f8+2", "usdt:" + bin + ":p:n"} {
		s, err := probespec.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		r := &Resolver{Warn: func(m string) { t.Errorf("%s: warning %s", spec, m) }}
		_, err = r.Resolve(s, "p")
		if err == nil {
			t.Errorf("%s resolved on an x86-64 host", spec)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, bin+": bpf: it is an arm64 binary (EM_AARCH64), and this host is amd64: uprobes run the host's machine code") || strings.Contains(msg, "\n") {
			t.Errorf("%s: %v", spec, err)
		}
	}
}

// TestArgRegisters: argN is the Nth integer argument register of the
// binary's calling convention: x0..x7 on arm64, rdi..r9 on x86-64, where
// arg6 and arg7 are refused naming the ABI.
func TestArgRegisters(t *testing.T) {
	for _, c := range []struct {
		arch *bpf.Arch
		arg  string
		reg  uint8
		err  string
	}{
		{bpf.ARM64, "arg0", bpf.RegX(0), ""},
		{bpf.ARM64, "arg6", bpf.RegX(6), ""},
		{bpf.ARM64, "arg7:s32", bpf.RegX(7), ""},
		{bpf.AMD64, "arg0", bpf.RegDI, ""},
		{bpf.AMD64, "arg5", bpf.RegR9, ""},
		{bpf.AMD64, "arg6", 0, `field "arg6": the System V AMD64 calling convention passes 6 integer arguments in registers, arg0..arg5 (rdi to r9): name the parameter instead`},
		{bpf.AMD64, "str(arg7)", 0, "arg0..arg5 (rdi to r9)"},
	} {
		p := &Probe{}
		args, err := p.regArgs([]probespec.Field{field(t, "f", c.arg, false)}, false, c.arch, nil, nil, func(string) {})
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v %s: %v, %v; want %q", c.arch, c.arg, args, err, c.err)
			}
		case err != nil || len(args) != 1 || args[0].Reg != c.reg || args[0].Kind != bpf.KindReg:
			t.Errorf("%v %s: %+v, %v; want register %d", c.arch, c.arg, args, err, c.reg)
		}
	}
	// The defaults are arg0..arg5 on both, and retval the return register.
	for _, arch := range bpf.Arches {
		p := &Probe{}
		args, err := p.regArgs(nil, false, arch, nil, nil, func(string) {})
		if err != nil || len(args) != defaultRegArgs || args[5].Reg != arch.Args[5] {
			t.Errorf("%v defaults: %+v, %v", arch, args, err)
		}
	}
}

// TestTypedFieldsARM64 resolves parameters and return values of the arm64
// workload's functions (DWARF) into the registers and stack reads AAPCS64
// puts them at.
func TestTypedFieldsARM64(t *testing.T) {
	b, err := ctypes.OpenBinary(buildABIWork(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	big, err := b.LookupStruct("big")
	if err != nil {
		t.Fatal(err)
	}
	offC := int32(big.Members[2].Offset)
	x, sp := bpf.RegX, bpf.RegARM64SP
	for _, c := range []struct {
		fn, text string
		ret      bool
		want     bpf.ArgSpec
		typ      format.Type
		err      string
	}{
		{fn: "f8", text: "h", want: bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(7), Size: 8, IsSigned: 1}, typ: format.Int64},
		{fn: "f10", text: "i", want: bpf.ArgSpec{Kind: bpf.KindReg, Reg: sp, Size: 8, Leaf: bpf.LeafRead, LeafSize: 8, LeafFlags: bpf.LeafSigned}, typ: format.Int64},
		{fn: "f10", text: "j", want: bpf.ArgSpec{Kind: bpf.KindReg, Reg: sp, Size: 8, Leaf: bpf.LeafRead, LeafSize: 8, LeafFlags: bpf.LeafSigned, LeafOff: 8}, typ: format.Int64},
		// arg7 is the parameter in x7, typed.
		{fn: "mix", text: "arg7", want: bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(7), Size: 8, IsSigned: 1}, typ: format.Int64},
		{fn: "mix", text: "k", want: bpf.ArgSpec{Kind: bpf.KindReg, Reg: sp, Size: 8, Leaf: bpf.LeafRead, LeafSize: 4, LeafFlags: bpf.LeafSigned, LeafOff: 16}, typ: format.Int32},
		{fn: "pass16", text: "s.b", want: bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(1), Size: 8, IsSigned: 1}, typ: format.Int64},
		{fn: "pass_q16", text: "b", want: bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(4), Size: 4, IsSigned: 1}, typ: format.Int32},
		{fn: "after7", text: "s.b", want: bpf.ArgSpec{Kind: bpf.KindReg, Reg: sp, Size: 8, Leaf: bpf.LeafRead, LeafSize: 8, LeafFlags: bpf.LeafSigned, LeafOff: 8}, typ: format.Int64},
		{fn: "pass_big", text: "s.c", want: bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(1), Size: 8, Leaf: bpf.LeafRead, LeafSize: 8, LeafFlags: bpf.LeafSigned, LeafOff: offC}, typ: format.Int64},
		// Through the address in the stack slot: one load.
		{fn: "big_stack", text: "s.c", want: bpf.ArgSpec{Kind: bpf.KindReg, Reg: sp, Size: 8, Nread: 1, Leaf: bpf.LeafRead, LeafSize: 8, LeafFlags: bpf.LeafSigned, LeafOff: offC}, typ: format.Int64},
		// A cast of the register that holds the struct's address.
		{fn: "pass_big", text: "((struct big *)arg1)->c", want: bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(1), Size: 8, Leaf: bpf.LeafRead, LeafSize: 8, LeafFlags: bpf.LeafSigned, LeafOff: offC}, typ: format.Int64},
		{fn: "floats", text: "c", want: bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(1), Size: 4, IsSigned: 1}, typ: format.Int32},
		{fn: "floats", text: "b", err: "passed in v0, which probes cannot read"},
		{fn: "pass_hfa", text: "b", want: bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(1), Size: 4, IsSigned: 1}, typ: format.Int32},
		{fn: "after7", text: "*(u32 *)(s + 4)", err: "needs a parameter passed whole in a register; s is at sp+0"},
		{fn: "f10", text: "(u8)j", err: "needs a parameter passed whole in a register; j is at sp+8"},
		{fn: "ret_int", text: "retval", ret: true, want: bpf.ArgSpec{Kind: bpf.KindRetval, Size: 4, IsSigned: 1}, typ: format.Int32},
		{fn: "ret16", text: "retval.a", ret: true, want: bpf.ArgSpec{Kind: bpf.KindRetval, Size: 8, IsSigned: 1}, typ: format.Int64},
		// The second register of a value returned in two.
		{fn: "ret16", text: "retval.b", ret: true, want: bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(1), Size: 8, IsSigned: 1}, typ: format.Int64},
		{fn: "ret24", text: "retval.a", ret: true, err: "in memory at an address the caller passes in x8"},
		{fn: "ret_double", text: "retval", ret: true, err: "in v0"},
	} {
		fn, err := b.Func(c.fn)
		if err != nil {
			t.Fatal(err)
		}
		f := field(t, c.fn, c.text, c.ret)
		a, typ, err := typedArg(&f, c.ret, bpf.ARM64, fn, b)
		switch {
		case c.err != "":
			if !errors.Is(err, ErrExpr) || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "rax") {
				t.Errorf("%s %s: %+v, %v; want an error containing %q", c.fn, c.text, a, err, c.err)
			}
		case err != nil || a != c.want || typ != c.typ:
			t.Errorf("%s %s: %+v %v, %v;\nwant %+v %v", c.fn, c.text, a, typ, err, c.want, c.typ)
		}
	}
}

// TestParamRegisterARM64: ParamRegister names the argN of a parameter
// whole in an x register, and none for one on the stack, in two
// registers, passed by reference or in a v register.
func TestParamRegisterARM64(t *testing.T) {
	b, err := ctypes.OpenBinary(buildABIWork(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		fn, param string
		want      int
	}{
		{"mix", "h", 7}, {"mix", "i", -1}, {"pass16", "s", -1}, {"pass16", "b", 2},
		{"pass_big", "s", -1}, {"pass_big", "b", 2}, {"floats", "c", 1}, {"floats", "b", -1},
		{"pass_q16", "b", 4}, {"after7", "h", -1},
	} {
		fn, err := b.Func(c.fn)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := fn.Param(c.param)
		if p == nil {
			t.Fatalf("%s has no %s", c.fn, c.param)
		}
		if got := ParamRegister(p); got != c.want {
			t.Errorf("%s %s at %v: arg%d, want %d", c.fn, c.param, p.Loc, got, c.want)
		}
	}
}

// TestArchNotes: the Go-program warning and the uretprobe error name the
// architecture's registers, and only its.
func TestArchNotes(t *testing.T) {
	a := goArgsNote(bpf.ARM64)
	if !strings.Contains(a, "arg0..arg7 are the C ABI registers (x0, x1, x2, x3, x4, x5, x6, x7)") || !strings.Contains(a, "x0 to x15") || strings.Contains(a, "rax") {
		t.Errorf("arm64: %s", a)
	}
	x := goArgsNote(bpf.AMD64)
	if !strings.Contains(x, "arg0..arg5 are the C ABI registers (rdi, rsi, rdx, rcx, r8, r9)") || !strings.Contains(x, "rax, rbx") || strings.Contains(x, "x15") {
		t.Errorf("amd64: %s", x)
	}
	if r := returnAddress(bpf.ARM64); r != "in the link register x30" {
		t.Errorf("arm64 return address: %s", r)
	}
	if r := returnAddress(bpf.AMD64); r != "on top of the stack" {
		t.Errorf("amd64 return address: %s", r)
	}
	// The binary's machine, as the resolver reads it.
	f, err := elf.Open(buildABIWork(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if a, err := bpf.ArchOf(f.Machine); a != bpf.ARM64 || err != nil {
		t.Errorf("abiwork: %v, %v", a, err)
	}
}

// TestFloatRetvalDefault: a uretprobe without fields on a function that
// returns a double still records (its return event times the call), and
// warns that its retval is the integer register, not the value.
func TestFloatRetvalDefault(t *testing.T) {
	b, err := ctypes.OpenBinary(buildABIWork(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for fnName, want := range map[string]string{"ret_double": "in v0", "ret_int": ""} {
		fn, err := b.Func(fnName)
		if err != nil {
			t.Fatal(err)
		}
		var warned []string
		fields := typedDefaults(fn, true, func(m string) { warned = append(warned, m) })
		switch {
		case want == "" && (len(warned) != 0 || len(fields) != 1):
			t.Errorf("%s: fields %v, warnings %q; want typed retval, no warning", fnName, fields, warned)
		case want != "" && (len(warned) != 1 || !strings.Contains(warned[0], "retval is the integer return register") || !strings.Contains(warned[0], want)):
			t.Errorf("%s: warnings %q; want one naming %q", fnName, warned, want)
		}
	}
}
