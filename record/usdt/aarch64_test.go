package usdt

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/bpf"
)

// x is arm64's xn as a pt_regs offset, written out from struct
// user_pt_regs (regs[31], then sp) rather than taken from package bpf.
func x(n int) uint8 { return uint8(8 * n) }

const arm64SP = 31 * 8

func TestParseArgsARM64(t *testing.T) {
	tests := []parseCase{
		// Registers: gcc names the 64-bit register whatever the size.
		{"-4@x0", Arg{Size: 4, Signed: true, Kind: Reg, Reg: "x0"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(0), Size: 4, IsSigned: 1}},
		{"8@x19", Arg{Size: 8, Kind: Reg, Reg: "x19"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(19), Size: 8}},
		{"-1@x30", Arg{Size: 1, Signed: true, Kind: Reg, Reg: "x30"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(30), Size: 1, IsSigned: 1}},
		{"2@x7", Arg{Size: 2, Kind: Reg, Reg: "x7"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(7), Size: 2}},
		{"-8@sp", Arg{Size: 8, Signed: true, Kind: Reg, Reg: "sp"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: arm64SP, Size: 8, IsSigned: 1}},
		{"8@fp", Arg{Size: 8, Kind: Reg, Reg: "fp"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(29), Size: 8}},
		{"8@lr", Arg{Size: 8, Kind: Reg, Reg: "lr"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(30), Size: 8}},
		// 32-bit registers hold 32 bits: an 8-byte operand extends them.
		{"4@w1", Arg{Size: 4, Kind: Reg, Reg: "w1"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(1), Size: 4}},
		{"-2@w28", Arg{Size: 2, Signed: true, Kind: Reg, Reg: "w28"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(28), Size: 2, IsSigned: 1}},
		{"-8@w3", Arg{Size: 8, Signed: true, Kind: Reg, Reg: "w3"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(3), Size: 4, IsSigned: 1}},
		{"8@w3", Arg{Size: 8, Kind: Reg, Reg: "w3"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(3), Size: 4}},
		{"-4@wsp", Arg{Size: 4, Signed: true, Kind: Reg, Reg: "wsp"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: arm64SP, Size: 4, IsSigned: 1}},
		// Without a size: as wide as the register, unsigned.
		{"x5", Arg{Size: 8, Kind: Reg, Reg: "x5"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(5), Size: 8}},
		{"w5", Arg{Size: 4, Kind: Reg, Reg: "w5"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: x(5), Size: 4}},
		{"sp", Arg{Size: 8, Kind: Reg, Reg: "sp"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: arm64SP, Size: 8}},
		// The zero registers read 0.
		{"8@xzr", Arg{Size: 8, Kind: Const},
			bpf.ArgSpec{Kind: bpf.KindConst, Size: 8}},
		{"wzr", Arg{Size: 4, Kind: Const},
			bpf.ArgSpec{Kind: bpf.KindConst, Size: 4}},
		// Immediates, in the operand's size: "1@-56" is the byte 200.
		{"-4@5", Arg{Size: 4, Signed: true, Kind: Const, Off: 5},
			bpf.ArgSpec{Kind: bpf.KindConst, Size: 4, IsSigned: 1, Off: 5}},
		{"-4@-1", Arg{Size: 4, Signed: true, Kind: Const, Off: -1},
			bpf.ArgSpec{Kind: bpf.KindConst, Size: 4, IsSigned: 1, Off: -1}},
		{"1@-56", Arg{Size: 1, Kind: Const, Off: -56},
			bpf.ArgSpec{Kind: bpf.KindConst, Size: 1, Off: 200}},
		{"8@-9223372036854775808", Arg{Size: 8, Kind: Const, Off: -1 << 63},
			bpf.ArgSpec{Kind: bpf.KindConst, Size: 8, Off: -1 << 63}},
		{"8@18446744073709551615", Arg{Size: 8, Kind: Const, Off: -1},
			bpf.ArgSpec{Kind: bpf.KindConst, Size: 8, Off: -1}},
		{"4@#16", Arg{Size: 4, Kind: Const, Off: 16},
			bpf.ArgSpec{Kind: bpf.KindConst, Size: 4, Off: 16}},
		{"-2@#-0x10", Arg{Size: 2, Signed: true, Kind: Const, Off: -16},
			bpf.ArgSpec{Kind: bpf.KindConst, Size: 2, IsSigned: 1, Off: -16}},
		{"42", Arg{Size: 8, Kind: Const, Off: 42},
			bpf.ArgSpec{Kind: bpf.KindConst, Size: 8, Off: 42}},
		// Memory.
		{"8@[x1]", Arg{Size: 8, Kind: Mem, Reg: "x1"},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Reg: x(1), Size: 8}},
		{"-4@[sp, 16]", Arg{Size: 4, Signed: true, Kind: Mem, Reg: "sp", Off: 16},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Reg: arm64SP, Size: 4, IsSigned: 1, Off: 16}},
		{"-8@[sp]", Arg{Size: 8, Signed: true, Kind: Mem, Reg: "sp"},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Reg: arm64SP, Size: 8, IsSigned: 1}},
		{"2@[sp, -8]", Arg{Size: 2, Kind: Mem, Reg: "sp", Off: -8},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Reg: arm64SP, Size: 2, Off: -8}},
		{"-8@[x29, -8]", Arg{Size: 8, Signed: true, Kind: Mem, Reg: "x29", Off: -8},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Reg: x(29), Size: 8, IsSigned: 1, Off: -8}},
		{"1@[fp, #-93]", Arg{Size: 1, Kind: Mem, Reg: "fp", Off: -93},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Reg: x(29), Size: 1, Off: -93}},
		{"4@[x0, #0x20]", Arg{Size: 4, Kind: Mem, Reg: "x0", Off: 32},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Reg: x(0), Size: 4, Off: 32}},
		{"-2@[x30,#+4]", Arg{Size: 2, Signed: true, Kind: Mem, Reg: "x30", Off: 4},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Reg: x(30), Size: 2, IsSigned: 1, Off: 4}},
		{"[ x2 ,  8 ]", Arg{Size: 8, Kind: Mem, Reg: "x2", Off: 8},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Reg: x(2), Size: 8, Off: 8}},
		// Index forms, hand-written.
		{"8@[x0, x2]", Arg{Size: 8, Kind: SIB, Reg: "x0", IndexReg: "x2", Scale: 1},
			bpf.ArgSpec{Kind: bpf.KindSIB, Reg: x(0), IndexReg: x(2), Scale: 1, Size: 8}},
		{"-4@[sp, x3, lsl #2]", Arg{Size: 4, Signed: true, Kind: SIB, Reg: "sp", IndexReg: "x3", Scale: 4},
			bpf.ArgSpec{Kind: bpf.KindSIB, Reg: arm64SP, IndexReg: x(3), Scale: 4, Size: 4, IsSigned: 1}},
		{"2@[x1, x30, lsl 1]", Arg{Size: 2, Kind: SIB, Reg: "x1", IndexReg: "x30", Scale: 2},
			bpf.ArgSpec{Kind: bpf.KindSIB, Reg: x(1), IndexReg: x(30), Scale: 2, Size: 2}},
		{"-8@[x1, x4, lsl #3]", Arg{Size: 8, Signed: true, Kind: SIB, Reg: "x1", IndexReg: "x4", Scale: 8},
			bpf.ArgSpec{Kind: bpf.KindSIB, Reg: x(1), IndexReg: x(4), Scale: 8, Size: 8, IsSigned: 1}},
		{"1@[x0, x2, lsl #0]", Arg{Size: 1, Kind: SIB, Reg: "x0", IndexReg: "x2", Scale: 1},
			bpf.ArgSpec{Kind: bpf.KindSIB, Reg: x(0), IndexReg: x(2), Scale: 1, Size: 1}},
		// A symbol's low 12 bits after adrp: Read resolves it.
		{"-4@[x1, #:lo12:counter]", Arg{Size: 4, Signed: true, Kind: Mem, Reg: "x1", Sym: "counter", Mod: "lo12"}, bpf.ArgSpec{}},
		{"8@[x1, :lo12:tbl+8]", Arg{Size: 8, Kind: Mem, Reg: "x1", Sym: "tbl", Mod: "lo12", Off: 8}, bpf.ArgSpec{}},
	}
	testParseCases(t, bpf.ARM64, tests)
}

func TestParseArgsARM64Many(t *testing.T) {
	in := "-1@[sp, 231]\t1@x1 -4@-1  8@[x1, x2, lsl #3] -8@[ sp ]\n4@w2 "
	args, err := ParseArgs(bpf.ARM64, in)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, a := range args {
		texts = append(texts, a.Text)
	}
	if want := []string{"-1@[sp, 231]", "1@x1", "-4@-1", "8@[x1, x2, lsl #3]", "-8@[ sp ]", "4@w2"}; !reflect.DeepEqual(texts, want) {
		t.Errorf("texts %q, want %q", texts, want)
	}
	if args, err := ParseArgs(bpf.ARM64, " \t"); err != nil || args != nil {
		t.Errorf("ParseArgs(blank) = %v, %v", args, err)
	}
	// x86-64 operands are not arm64's, and the other way round.
	if _, err := ParseArgs(bpf.ARM64, "-4@%eax"); err == nil {
		t.Errorf("arm64 accepted %q", "-4@%eax")
	}
	if _, err := ParseArgs(bpf.AMD64, "-4@[x0]"); err == nil {
		t.Error("x86-64 accepted -4@[x0]")
	}
	if _, err := ParseArgs(&bpf.Arch{Name: "riscv64"}, "8@a0"); err == nil || !strings.Contains(err.Error(), "riscv64") {
		t.Errorf("an unknown architecture: %v", err)
	}
	if _, err := ParseArgs(nil, "8@x0"); err == nil || !strings.Contains(err.Error(), "no architecture") {
		t.Errorf("no architecture: %v", err)
	}
}

func TestParseArgsARM64Errors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"16@x0", "unsupported size 16"},
		{"3@x0", "unsupported size 3"},
		{"8f@x0", `unsupported size "8f"`},
		{"8@", "empty operand"},
		{"8@x31", `unsupported operand "x31"`},
		{"8@w31", `unsupported operand "w31"`},
		{"8@X0", `unsupported operand "X0"`},
		{"8@%rax", `unsupported operand "%rax"`},
		{"8@counter", `unsupported operand "counter"`},
		{"8@pc", "pc is not readable"},
		{"8@d0", "floating-point/SIMD register d0"},
		{"4@s31", "floating-point/SIMD register s31"},
		{"16@q1", "unsupported size 16"},
		{"8@v2", "floating-point/SIMD register v2"},
		{"8@x0:x1", `unsupported operand "x0:x1"`},
		{"8@#", "empty immediate"},
		{"8@#sym", `symbolic immediate "sym"`},
		{"8@5x", "bad number"},
		{"8@[x0", "[ without ]"},
		{"8@x0]", "] without ["},
		{"8@[x0, 8]!", "pre-indexed"},
		{"8@[x0], 8", "post-indexed"}, // operands "8@[x0]," and "8"
		{"8@[x0],8", "post-indexed"},
		{"8@[x0]x", `"x" after the ]`},
		{"8@[]", "no base register"},
		{"8@[, 8]", "no base register"},
		{"8@[w0]", "32-bit register w0 cannot be a base"},
		{"8@[xzr, 8]", "xzr cannot be a base register"},
		{"8@[pc, 8]", "pc is not readable"},
		{"8@[x0, ]", "empty offset"},
		{"8@[x0, 8, 8]", `"8" after its offset`},
		{"8@[x0, 8x]", "bad number"},
		{"8@[x0, x1, x2, x3]", "4 parts"},
		{"4@[x0, w1, sxtw #2]", "32-bit index register w1 needs an extend"},
		{"4@[x0, w1, uxtw]", "32-bit index register w1 needs an extend"},
		{"4@[x0, x1, sxtx #2]", `index extend "sxtx #2" is unsupported`},
		{"4@[x0, x1, lsl #4]", "bad index shift"},
		{"4@[x0, x1, lsl]", "bad index shift"},
		{"4@[x0, sp]", "sp cannot be an index"},
		{"4@[x0, xzr]", "xzr cannot be a index register"},
		{"4@[x0, d1]", "floating-point/SIMD register d1"},
		{"4@[x0, #:got_lo12:counter]", "relocation operator :got_lo12: is unsupported"},
		{"4@[x0, #:tprel_lo12_nc:tv]", "relocation operator :tprel_lo12_nc: is unsupported"},
		{"4@[x0, #:lo12]", "has no closing :"},
		{"4@[x0, #:lo12:]", "which is no symbol"},
		{"4@[x0, #:lo12:8]", "which is no symbol"},
		{"4@[x0, #:lo12:v@tpoff]", "bad symbol"},
		{"8@x0 4@[sp, 8] 2@q0", "arg 3"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			args, err := ParseArgs(bpf.ARM64, tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseArgs(%q) = %+v, %v; want an error containing %q", tt.in, args, err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is not one line", err)
			}
		})
	}
}

func TestArgsStringARM64(t *testing.T) {
	tests := []struct {
		in   string
		want bpf.ArgSpec
		err  string
	}{
		{"8@x1", bpf.ArgSpec{Kind: bpf.KindUserStr, Reg: x(1), StrSlot: 2}, ""},
		{"8@[sp, 16]", bpf.ArgSpec{Kind: bpf.KindRegDerefStr, Reg: arm64SP, Off: 16, StrSlot: 2}, ""},
		{"8@[x29, -8]", bpf.ArgSpec{Kind: bpf.KindRegDerefStr, Reg: x(29), Off: -8, StrSlot: 2}, ""},
		{"4@w1", bpf.ArgSpec{}, "32-bit register w1 cannot hold a 64-bit pointer"},
		{"8@5", bpf.ArgSpec{}, "cannot be read as a string pointer"},
		{"8@[x0, x1, lsl #3]", bpf.ArgSpec{}, "cannot be read as a string pointer"},
	}
	for _, tt := range tests {
		args, err := ParseArgs(bpf.ARM64, tt.in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := args[0].BPFString(2)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("BPFString(%q) = %+v, %v; want an error containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("BPFString(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

// TestArgsArch checks that an Arg maps its registers through its own
// architecture's pt_regs, and that one without an architecture or with an
// x86-64 segment on arm64 is refused rather than read wrong.
func TestArgsArch(t *testing.T) {
	a := Arg{Arch: bpf.ARM64, Size: 8, Kind: Mem, Reg: "sp", Off: 8, Text: "8@[sp, 8]"}
	if s, err := a.BPF(); err != nil || s.Reg != arm64SP {
		t.Errorf("arm64 sp: %+v, %v", s, err)
	}
	a.Arch, a.Reg = bpf.AMD64, "rsp"
	if s, err := a.BPF(); err != nil || s.Reg != bpf.RegSP {
		t.Errorf("x86-64 rsp: %+v, %v", s, err)
	}
	a.Reg = "sp" // x86-64's 16-bit %sp, whose slot is rsp's
	if s, err := a.BPF(); err != nil || s.Reg != bpf.RegSP {
		t.Errorf("x86-64 sp: %+v, %v", s, err)
	}
	a.Arch, a.Reg = bpf.ARM64, "rsp"
	if _, err := a.BPF(); err == nil || !strings.Contains(err.Error(), "unsupported arm64 register rsp") {
		t.Errorf("arm64 rsp: %v", err)
	}
	a.Arch = nil
	if _, err := a.BPF(); err == nil || !strings.Contains(err.Error(), "no architecture") {
		t.Errorf("no architecture: %v", err)
	}
	if _, err := a.BPFString(0); err == nil || !strings.Contains(err.Error(), "no architecture") {
		t.Errorf("no architecture, string: %v", err)
	}
	b := Arg{Arch: bpf.ARM64, Size: 8, Kind: Mem, Reg: "x0", Seg: "fs", Text: "?"}
	if _, err := b.BPF(); err == nil || !strings.Contains(err.Error(), "x86-64 only") {
		t.Errorf("%%fs: on arm64: %v", err)
	}
}
