package usdt

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/bpf"
)

func TestParseArgs(t *testing.T) {
	tests := []parseCase{
		{"-4@%eax", Arg{Size: 4, Signed: true, Kind: Reg, Reg: "eax"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: bpf.RegAX, Size: 4, IsSigned: 1}},
		{"8@%rax", Arg{Size: 8, Kind: Reg, Reg: "rax"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: bpf.RegAX, Size: 8}},
		{"-1@%al", Arg{Size: 1, Signed: true, Kind: Reg, Reg: "al"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: bpf.RegAX, Size: 1, IsSigned: 1}},
		{"2@%ax", Arg{Size: 2, Kind: Reg, Reg: "ax"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: bpf.RegAX, Size: 2}},
		{"-1@%sil", Arg{Size: 1, Signed: true, Kind: Reg, Reg: "sil"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: bpf.RegSI, Size: 1, IsSigned: 1}},
		{"2@%si", Arg{Size: 2, Kind: Reg, Reg: "si"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: bpf.RegSI, Size: 2}},
		{"4@%esi", Arg{Size: 4, Kind: Reg, Reg: "esi"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: bpf.RegSI, Size: 4}},
		{"1@%r8b", Arg{Size: 1, Kind: Reg, Reg: "r8b"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: bpf.RegR8, Size: 1}},
		{"-2@%r8w", Arg{Size: 2, Signed: true, Kind: Reg, Reg: "r8w"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: bpf.RegR8, Size: 2, IsSigned: 1}},
		{"8@%r15", Arg{Size: 8, Kind: Reg, Reg: "r15"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: bpf.RegR15, Size: 8}},
		// Without a size, a register has its own width, unsigned.
		{"%r8d", Arg{Size: 4, Kind: Reg, Reg: "r8d"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: bpf.RegR8, Size: 4}},
		{"%r12", Arg{Size: 8, Kind: Reg, Reg: "r12"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: bpf.RegR12, Size: 8}},
		{"%dil", Arg{Size: 1, Kind: Reg, Reg: "dil"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: bpf.RegDI, Size: 1}},
		{"%bx", Arg{Size: 2, Kind: Reg, Reg: "bx"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: bpf.RegBX, Size: 2}},
		{"%ecx", Arg{Size: 4, Kind: Reg, Reg: "ecx"},
			bpf.ArgSpec{Kind: bpf.KindReg, Reg: bpf.RegCX, Size: 4}},
		{"8@-8(%rbp)", Arg{Size: 8, Kind: Mem, Reg: "rbp", Off: -8},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Reg: bpf.RegBP, Size: 8, Off: -8}},
		{"-4@16(%rsp)", Arg{Size: 4, Signed: true, Kind: Mem, Reg: "rsp", Off: 16},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Reg: bpf.RegSP, Size: 4, IsSigned: 1, Off: 16}},
		{"8@(%rsp)", Arg{Size: 8, Kind: Mem, Reg: "rsp"},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Reg: bpf.RegSP, Size: 8}},
		{"4@0x10(%r12)", Arg{Size: 4, Kind: Mem, Reg: "r12", Off: 16},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Reg: bpf.RegR12, Size: 4, Off: 16}},
		{"-8@-0x18(%rbp)", Arg{Size: 8, Signed: true, Kind: Mem, Reg: "rbp", Off: -24},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Reg: bpf.RegBP, Size: 8, IsSigned: 1, Off: -24}},
		{"8@$5", Arg{Size: 8, Kind: Const, Off: 5},
			bpf.ArgSpec{Kind: bpf.KindConst, Size: 8, Off: 5}},
		{"-4@$-1", Arg{Size: 4, Signed: true, Kind: Const, Off: -1},
			bpf.ArgSpec{Kind: bpf.KindConst, Size: 4, IsSigned: 1, Off: -1}},
		// Constants are truncated and extended like the other kinds.
		{"4@$-1", Arg{Size: 4, Kind: Const, Off: -1},
			bpf.ArgSpec{Kind: bpf.KindConst, Size: 4, Off: 0xffffffff}},
		{"-1@$255", Arg{Size: 1, Signed: true, Kind: Const, Off: 255},
			bpf.ArgSpec{Kind: bpf.KindConst, Size: 1, IsSigned: 1, Off: -1}},
		{"8@$18446744073709551615", Arg{Size: 8, Kind: Const, Off: -1},
			bpf.ArgSpec{Kind: bpf.KindConst, Size: 8, Off: -1}},
		{"$0x20", Arg{Size: 8, Kind: Const, Off: 32},
			bpf.ArgSpec{Kind: bpf.KindConst, Size: 8, Off: 32}},
		{"-4@8(%rax,%rdx,4)", Arg{Size: 4, Signed: true, Kind: SIB, Reg: "rax", IndexReg: "rdx", Scale: 4, Off: 8},
			bpf.ArgSpec{Kind: bpf.KindSIB, Reg: bpf.RegAX, IndexReg: bpf.RegDX, Scale: 4, Size: 4, IsSigned: 1, Off: 8}},
		{"1@-96(%rbp,%rax,8)", Arg{Size: 1, Kind: SIB, Reg: "rbp", IndexReg: "rax", Scale: 8, Off: -96},
			bpf.ArgSpec{Kind: bpf.KindSIB, Reg: bpf.RegBP, IndexReg: bpf.RegAX, Scale: 8, Size: 1, Off: -96}},
		{"(%rax,%rdx)", Arg{Size: 8, Kind: SIB, Reg: "rax", IndexReg: "rdx", Scale: 1},
			bpf.ArgSpec{Kind: bpf.KindSIB, Reg: bpf.RegAX, IndexReg: bpf.RegDX, Scale: 1, Size: 8}},
		{"2@(%r9,%r10,)", Arg{Size: 2, Kind: SIB, Reg: "r9", IndexReg: "r10", Scale: 1},
			bpf.ArgSpec{Kind: bpf.KindSIB, Reg: bpf.RegR9, IndexReg: bpf.RegR10, Scale: 1, Size: 2}},
		// Symbolic operands parse; Read resolves them.
		{"-8@usdt_global(%rip)", Arg{Size: 8, Signed: true, Kind: Mem, Reg: "rip", Sym: "usdt_global"}, bpf.ArgSpec{}},
		{"4@tbl+8(%rip)", Arg{Size: 4, Kind: Mem, Reg: "rip", Sym: "tbl", Off: 8}, bpf.ArgSpec{}},
		{"4@tbl.1-4(%rip)", Arg{Size: 4, Kind: Mem, Reg: "rip", Sym: "tbl.1", Off: -4}, bpf.ArgSpec{}},
		{"8@$.LC0", Arg{Size: 8, Kind: Const, Sym: ".LC0"}, bpf.ArgSpec{}},
		{"8@16(%rip)", Arg{Size: 8, Kind: Mem, Reg: "rip", Off: 16},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Reg: bpf.RegIP, Size: 8, Off: 16}},
		{"8@tbl(%rax)", Arg{Size: 8, Kind: Mem, Reg: "rax", Sym: "tbl"}, bpf.ArgSpec{}},
		// No base register: absolute addresses and index-only SIB.
		{"8@0x601040", Arg{Size: 8, Kind: Mem, Off: 0x601040},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Flags: bpf.AddrNoBase, Size: 8, Off: 0x601040}},
		{"-4@counter", Arg{Size: 4, Signed: true, Kind: Mem, Sym: "counter"}, bpf.ArgSpec{}},
		{"-4@ext_arr(,%rdi,4)", Arg{Size: 4, Signed: true, Kind: SIB, IndexReg: "rdi", Scale: 4, Sym: "ext_arr"}, bpf.ArgSpec{}},
		{"2@16(,%rax,2)", Arg{Size: 2, Kind: SIB, IndexReg: "rax", Scale: 2, Off: 16},
			bpf.ArgSpec{Kind: bpf.KindSIB, Flags: bpf.AddrNoBase, IndexReg: bpf.RegAX, Scale: 2, Size: 2, Off: 16}},
		{"8@(%rax,)", Arg{Size: 8, Kind: Mem, Reg: "rax"},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Reg: bpf.RegAX, Size: 8}},
		// Segment-prefixed (thread-local) operands, as gcc -O2 writes them.
		{"-4@%fs:tv@tpoff", Arg{Size: 4, Signed: true, Kind: Mem, Seg: "fs", Sym: "tv", Mod: "tpoff"}, bpf.ArgSpec{}},
		{"-8@%fs:arr@tpoff+8(,%rcx,8)", Arg{Size: 8, Signed: true, Kind: SIB, Seg: "fs", IndexReg: "rcx", Scale: 8, Sym: "arr", Mod: "tpoff", Off: 8}, bpf.ArgSpec{}},
		{"-4@%fs:(%rdx)", Arg{Size: 4, Signed: true, Kind: Mem, Seg: "fs", Reg: "rdx"},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Flags: bpf.AddrFS, Reg: bpf.RegDX, Size: 4, IsSigned: 1}},
		{"8@%fs:0x28", Arg{Size: 8, Kind: Mem, Seg: "fs", Off: 0x28},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Flags: bpf.AddrFS | bpf.AddrNoBase, Size: 8, Off: 0x28}},
		{"4@%gs:-8(%rax,%rbx,2)", Arg{Size: 4, Kind: SIB, Seg: "gs", Reg: "rax", IndexReg: "rbx", Scale: 2, Off: -8},
			bpf.ArgSpec{Kind: bpf.KindSIB, Flags: bpf.AddrGS, Reg: bpf.RegAX, IndexReg: bpf.RegBX, Scale: 2, Size: 4, Off: -8}},
		{"8@%ds:8(%rax)", Arg{Size: 8, Kind: Mem, Reg: "rax", Off: 8},
			bpf.ArgSpec{Kind: bpf.KindRegDeref, Reg: bpf.RegAX, Size: 8, Off: 8}},
	}
	testParseCases(t, bpf.AMD64, tests)
}

// parseCase is a USDT operand, the Arg it parses into (Text and Arch
// aside) and the spec it records with (none for an unresolved symbol).
type parseCase struct {
	in   string
	want Arg
	spec bpf.ArgSpec
}

// testParseCases parses each case's operand for arch and checks its Arg,
// its spec, and that the programs of arch take the spec.
func testParseCases(t *testing.T, arch *bpf.Arch, tests []parseCase) {
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			args, err := ParseArgs(arch, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if len(args) != 1 {
				t.Fatalf("got %d args", len(args))
			}
			want := tt.want
			want.Text, want.Arch = tt.in, arch
			if !reflect.DeepEqual(args[0], want) {
				t.Errorf("ParseArgs(%q) =\n %+v, want\n %+v", tt.in, args[0], want)
			}
			spec, err := args[0].BPF()
			if want.Sym != "" {
				if err == nil || !strings.Contains(err.Error(), "unresolved") {
					t.Errorf("BPF() of unresolved %q: %+v, %v", tt.in, spec, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if spec != tt.spec {
				t.Errorf("BPF() = %+v, want %+v", spec, tt.spec)
			}
			checkSpec(t, arch, spec)
		})
	}
}

// checkSpec checks that the programs of arch record spec as meant: its
// registers are arch's, and Validate, which knows the host's registers
// only, takes the rest of it.
func checkSpec(t *testing.T, arch *bpf.Arch, spec bpf.ArgSpec) {
	t.Helper()
	for _, r := range []uint8{spec.Reg, spec.IndexReg} {
		if !arch.ValidReg(r) {
			t.Errorf("spec %+v: register offset %d is not an %s pt_regs register", spec, r, arch)
		}
	}
	s := bpf.ProbeSpec{Nargs: 1, SizeClass: bpf.ClassArgs2}
	s.Args[0] = spec
	s.Args[0].Reg, s.Args[0].IndexReg = 0, 0
	if spec.Kind == bpf.KindSIB {
		s.Args[0].IndexReg = 8
	}
	if err := s.Validate(); err != nil {
		t.Errorf("spec %+v does not validate: %v", spec, err)
	}
}

func TestParseArgsMany(t *testing.T) {
	in := "-4@%eax  8@-8(%rbp)\t-4@$5 1@-96(%rbp,%rax,8) "
	args, err := ParseArgs(bpf.AMD64, in)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, a := range args {
		texts = append(texts, a.Text)
	}
	if want := []string{"-4@%eax", "8@-8(%rbp)", "-4@$5", "1@-96(%rbp,%rax,8)"}; !reflect.DeepEqual(texts, want) {
		t.Errorf("texts %q, want %q", texts, want)
	}
	if args, err := ParseArgs(bpf.AMD64, "  "); err != nil || args != nil {
		t.Errorf("ParseArgs(blank) = %v, %v", args, err)
	}
}

func TestParseArgsErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"8@%fs:%rax", "needs a memory operand"},
		{"8@%fs:$1", "needs a memory operand"},
		{"8@%xs:8(%rax)", "unknown segment"},
		{"16@%rax", "unsupported size 16"},
		{"3@%rax", "unsupported size 3"},
		{"8f@%xmm0", `unsupported size "8f"`},
		{"8@%xmm0", "unsupported register %xmm0"},
		{"8@%foo", "unsupported register %foo"},
		{"1@%ah", "high-byte register %ah"},
		{"8@", "empty operand"},
		{"8@$", "empty immediate"},
		{"8@$1x", "bad number"},
		{"8@8(%rax", "does not end with )"},
		{"8@8)", "without ("},
		{"8@()", "empty parentheses"},
		{"8@8(,,)", "neither a base nor an index"},
		{"8@8(%rax,,4)", "a scale but no index"},
		{"8@8(rax)", "expected a register"},
		{"8@8(%ax)", "16-bit register %ax in an address"},
		{"4@(%eax)", "32-bit register %eax in an address"},
		{"4@(%rax,%ecx,4)", "32-bit register %ecx in an address"},
		{"8@8(%rax,%rdx,3)", "bad scale"},
		{"8@8(%rax,%rdx,4,1)", "4 parts"},
		{"8@8(%rip,%rax,1)", "%rip in an indexed operand"},
		{"8@8(%rax,%rsp,1)", "cannot be an index"},
		{"8@foo@GOTPCREL(%rip)", "modifier @GOTPCREL"},
		{"8@v@tpoff(%rax)", "outside a %fs: operand"},
		{"8@$v@tpoff", "modifier in a constant"},
		{"8@+(%rax)", "bad number"},
		{"8@*8(%rax)", "bad displacement"},
		{"8@%rax 4@%zz:0", "arg 2"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			args, err := ParseArgs(bpf.AMD64, tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseArgs(%q) = %+v, %v; want an error containing %q", tt.in, args, err, tt.want)
			}
		})
	}
}

func TestBPFArgs(t *testing.T) {
	spec := strings.TrimSpace(strings.Repeat("8@%rax ", bpf.MaxArgs))
	args, err := ParseArgs(bpf.AMD64, spec)
	if err != nil {
		t.Fatal(err)
	}
	if specs, err := BPFArgs(args); err != nil || len(specs) != bpf.MaxArgs {
		t.Errorf("BPFArgs(%d args) = %d, %v", len(args), len(specs), err)
	}
	p := &Probe{Provider: "p", Name: "n", Args: append(args, args[0])}
	if _, err := p.BPFArgs(); err == nil || !strings.Contains(err.Error(), "13 args") || !strings.Contains(err.Error(), "p:n") {
		t.Errorf("BPFArgs of 13 args: %v", err)
	}
	bad := &Probe{Provider: "p", Name: "n", Err: errFake}
	if _, err := bad.BPFArgs(); err == nil {
		t.Error("BPFArgs of a probe with Err succeeded")
	}
}

type fakeErr struct{}

func (fakeErr) Error() string { return "fake" }

var errFake error = fakeErr{}

func TestBPFString(t *testing.T) {
	tests := []struct {
		in   string
		want bpf.ArgSpec
		err  bool
	}{
		{"8@%rsi", bpf.ArgSpec{Kind: bpf.KindUserStr, Reg: bpf.RegSI, StrSlot: 2}, false},
		{"8@16(%rsp)", bpf.ArgSpec{Kind: bpf.KindRegDerefStr, Reg: bpf.RegSP, Off: 16, StrSlot: 2}, false},
		{"8@$5", bpf.ArgSpec{}, true},
		{"8@(%rax,%rdx,8)", bpf.ArgSpec{}, true},
		{"8@%fs:-16", bpf.ArgSpec{Kind: bpf.KindRegDerefStr, Flags: bpf.AddrFS | bpf.AddrNoBase, Off: -16, StrSlot: 2}, false},
	}
	for _, tt := range tests {
		args, err := ParseArgs(bpf.AMD64, tt.in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := args[0].BPFString(2)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("BPFString(%q) = %+v, %v", tt.in, got, err)
		}
	}
}

// FuzzParseArgs parses arbitrary x86-64 (arm false) and arm64 operands: what
// ParseArgs accepts without a symbol must become a spec the programs run as
// meant. bpf's Validate bounds register offsets by x86-64's pt_regs, so an
// arm64 spec's offsets are checked against arm64's (sp, at 248, is the last)
// and the rest of it by Validate.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{"-4@%eax", "8@-8(%rbp)", "-4@8(%rax,%rdx,4)", "8@$5", "%r8d", "(%rax,%rdx)", "8@sym+8(%rip)", "8@%fs:0",
		"-8@%fs:arr@tpoff(,%rcx,8)", "-4@%fs:(%rdx)", "-4@ext(,%rdi,4)"} {
		f.Add(s, false)
	}
	for _, s := range []string{"-4@x0 8@[sp, 16]", "-8@[x29, #-8]", "4@w1 -4@5 1@-56", "8@[x0, x1, lsl #3]", "-4@[x1, #:lo12:v+8]",
		"x0 wzr sp", "-1@[sp, 231] 2@[x2]"} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, arm bool) {
		arch := bpf.AMD64
		if arm {
			arch = bpf.ARM64
		}
		args, err := ParseArgs(arch, s)
		if err != nil {
			return
		}
		for _, a := range args {
			if a.Arch != arch {
				t.Fatalf("ParseArgs(%v, %q): arg of architecture %v", arch, s, a.Arch)
			}
			if a.Sym != "" {
				continue
			}
			spec, err := a.BPF()
			if err != nil {
				t.Fatalf("ParseArgs(%q) accepted %+v but BPF fails: %v", s, a, err)
			}
			ps := bpf.ProbeSpec{Nargs: 1, SizeClass: bpf.ClassArgs2}
			ps.Args[0] = spec
			if arm {
				if spec.Reg%8 != 0 || spec.Reg > bpf.RegARM64SP || spec.IndexReg%8 != 0 || spec.IndexReg > bpf.RegARM64SP {
					t.Fatalf("ParseArgs(%q): spec %+v has a register offset past arm64's pt_regs", s, spec)
				}
				ps.Args[0].Reg, ps.Args[0].IndexReg = 0, 8
			}
			if err := ps.Validate(); err != nil {
				t.Fatalf("ParseArgs(%q): spec %+v invalid: %v", s, spec, err)
			}
		}
	})
}
