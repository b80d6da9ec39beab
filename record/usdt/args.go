package usdt

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bpftape/bpftape/bpf"
)

// ArgKind is the form of a USDT argument operand.
type ArgKind int

const (
	Const ArgKind = iota // $imm (x86-64), imm (arm64): the value itself
	Reg                  // %reg (x86-64), xN or wN (arm64): a register
	Mem                  // disp(%base) (x86-64), [base, disp] (arm64): Size bytes of memory at base+disp
	SIB                  // disp(%base,%index,scale) (x86-64), [base, index, lsl #n] (arm64): memory at base+index*scale+disp
)

// String names the kind for messages.
func (k ArgKind) String() string {
	switch k {
	case Const:
		return "const"
	case Reg:
		return "reg"
	case Mem:
		return "mem"
	case SIB:
		return "sib"
	}
	return fmt.Sprintf("ArgKind(%d)", int(k))
}

// Arg is one parsed USDT argument: an operand with a size, in the assembler
// syntax of its architecture, such as "-4@-8(%rbp)" (x86-64, AT&T) or
// "-4@[sp, 16]" (arm64).
type Arg struct {
	// Arch is the architecture whose registers Reg and IndexReg name,
	// bpf.AMD64 or bpf.ARM64: ParseArgs's, which Read takes from the ELF
	// file's machine. BPF maps the registers through its pt_regs layout.
	Arch   *bpf.Arch
	Size   int  // 1, 2, 4 or 8 bytes
	Signed bool // a negative size in the spec
	Kind   ArgKind
	// Reg is the (base) register as written, without the %: "rbp", "eax",
	// "r12d", "rip" on x86-64, "x19", "w1", "sp", "fp" on arm64; "" for a
	// memory operand without a base register ("-4@table(,%rax,4)",
	// "-4@%fs:v@tpoff"). IndexReg is the SIB index register.
	Reg, IndexReg string
	Scale         int   // SIB index multiplier, 1, 2, 4 or 8
	Off           int64 // displacement (Mem, SIB) or the value (Const)
	// Seg is the segment of a segment-prefixed memory operand, "fs" or
	// "gs" (x86-64 thread-local storage: the address is relative to the
	// thread's segment base), else "".
	Seg string
	// Sym is a symbol the operand refers to and that is not resolved yet:
	// the displacement of "counter+8(%rip)" (Off is then the addend 8), the
	// immediate "$table" (a non-PIE address), "v@tpoff" (Mod "tpoff": v's
	// offset from the thread pointer), or on arm64 the offset of
	// "[x1, #:lo12:counter+8]" (Mod "lo12": the low 12 bits of the
	// symbol's address plus the addend). Read resolves what it can and
	// clears Sym and Mod; BPF fails while Sym is set.
	Sym, Mod string
	Text     string // the operand as written in the note, size included
}

// NoBase reports whether a is a memory operand without a base register:
// its address is the displacement (plus index*scale, plus the segment base).
func (a *Arg) NoBase() bool { return (a.Kind == Mem || a.Kind == SIB) && a.Reg == "" }

// ParseArgs parses a USDT argument string, the space-separated operands of
// one note, in the assembler syntax of arch (bpf.AMD64 or bpf.ARM64), in
// every form gcc and clang emit: on x86-64 "-4@%eax 8@-8(%rbp) -4@$5
// -8@%fs:v@tpoff(,%rcx,8)", on arm64 "-4@x0 8@[sp, 16] -8@[x1, -8] -4@5".
// Without an "N@" size an operand is unsigned, a register as wide as its
// name and anything else 8 bytes. An operand it does not read exactly is
// an error naming it.
func ParseArgs(arch *bpf.Arch, s string) ([]Arg, error) {
	var ops []string
	parse := parseAMD64
	switch arch {
	case bpf.AMD64:
		ops = strings.Fields(s)
	case bpf.ARM64:
		var err error
		if ops, err = splitARM64(s); err != nil {
			return nil, fmt.Errorf("usdt: %w", err)
		}
		parse = parseARM64
	case nil:
		return nil, errors.New("usdt: no architecture to parse USDT operands for")
	default:
		return nil, fmt.Errorf("usdt: USDT operands of architecture %v are unsupported", arch)
	}
	var args []Arg
	for i, op := range ops {
		a, err := parse(op)
		if err != nil {
			return nil, fmt.Errorf("usdt: arg %d %q: %w", i+1, op, err)
		}
		args = append(args, a)
	}
	return args, nil
}

// segments are the segment prefixes an operand may carry: %fs and %gs
// have a per-thread base; the others have base 0 in 64-bit mode.
var segments = map[string]string{"fs": "fs", "gs": "gs", "cs": "", "ds": "", "es": "", "ss": ""}

// parseAMD64 parses one x86-64 AT&T operand.
func parseAMD64(text string) (Arg, error) {
	a := Arg{Arch: bpf.AMD64, Text: text}
	op, sized, err := a.cutSize(text)
	if err != nil {
		return a, err
	}
	// A segment prefix: "%fs:...".
	if op[0] == '%' {
		if i := strings.IndexByte(op, ':'); i > 0 {
			seg, ok := segments[op[1:i]]
			if !ok {
				return a, fmt.Errorf("unknown segment %q", op[:i+1])
			}
			prefix := op[:i+1]
			a.Seg, op = seg, op[i+1:]
			if op == "" || op[0] == '%' || op[0] == '$' {
				return a, fmt.Errorf("segment prefix %s needs a memory operand", prefix)
			}
		}
	}
	switch op[0] {
	case '%':
		name := op[1:]
		w, err := regWidth(name)
		if err != nil {
			return a, err
		}
		a.Kind, a.Reg = Reg, name
		if !sized {
			a.Size = w
		}
		return a, nil
	case '$':
		if op[1:] == "" {
			return a, errors.New("empty immediate")
		}
		v, sym, mod, err := parseDisp(op[1:])
		if err != nil {
			return a, err
		}
		if mod != "" {
			return a, fmt.Errorf("immediate %q: a symbol modifier in a constant is unsupported", op)
		}
		a.Kind, a.Off, a.Sym = Const, v, sym
		return a, nil
	}
	dispText, inner := op, ""
	if open := strings.IndexByte(op, '('); open >= 0 {
		if !strings.HasSuffix(op, ")") {
			return a, fmt.Errorf("memory operand %q does not end with )", op)
		}
		dispText, inner = op[:open], op[open+1:len(op)-1]
		if inner == "" {
			return a, fmt.Errorf("memory operand %q has empty parentheses", op)
		}
	} else if strings.ContainsRune(op, ')') {
		return a, fmt.Errorf("memory operand %q has a ) without (", op)
	}
	disp, sym, mod, err := parseDisp(dispText)
	if err != nil {
		return a, err
	}
	a.Kind, a.Off, a.Sym, a.Mod = Mem, disp, sym, mod
	if mod != "" && a.Seg != "fs" {
		return a, fmt.Errorf("%s@%s outside a %%fs: operand (thread-local offsets are relative to %%fs)", sym, mod)
	}
	if inner == "" {
		// An absolute address: "-4@counter", "8@0x601040", "%fs:v@tpoff".
		if dispText == "" {
			return a, errors.New("empty memory operand")
		}
		return a, nil
	}
	parts := strings.Split(inner, ",")
	if len(parts) > 3 {
		return a, fmt.Errorf("memory operand %q has %d parts", op, len(parts))
	}
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	if parts[0] != "" {
		if a.Reg, err = memReg(parts[0]); err != nil {
			return a, err
		}
	}
	if len(parts) == 1 {
		return a, nil
	}
	if parts[1] == "" {
		if a.Reg == "" {
			return a, fmt.Errorf("memory operand %q has neither a base nor an index register", op)
		}
		if len(parts) == 3 && parts[2] != "" {
			return a, fmt.Errorf("memory operand %q has a scale but no index register", op)
		}
		return a, nil // "(%rax,)": no index after all
	}
	a.Kind, a.Scale = SIB, 1
	if a.IndexReg, err = memReg(parts[1]); err != nil {
		return a, err
	}
	if a.IndexReg == "rip" || a.Reg == "rip" {
		return a, fmt.Errorf("%%rip in an indexed operand %q", op)
	}
	if a.IndexReg == "rsp" || a.IndexReg == "esp" {
		return a, fmt.Errorf("%%%s cannot be an index register", a.IndexReg)
	}
	if len(parts) == 3 && parts[2] != "" {
		sc, err := strconv.Atoi(parts[2])
		if err != nil || (sc != 1 && sc != 2 && sc != 4 && sc != 8) {
			return a, fmt.Errorf("bad scale %q (want 1, 2, 4 or 8)", parts[2])
		}
		a.Scale = sc
	}
	return a, nil
}

// cutSize parses the "N@" size prefix of operand text into a.Size and
// a.Signed and returns the rest, and whether there was a size; without one,
// Size is 8.
func (a *Arg) cutSize(text string) (op string, sized bool, err error) {
	op = text
	if at := strings.IndexByte(op, '@'); at > 0 && isSize(op[:at]) {
		n, err := strconv.Atoi(op[:at])
		if err != nil {
			return "", false, fmt.Errorf("bad size %q", op[:at])
		}
		if n < 0 {
			a.Signed, n = true, -n
		}
		switch n {
		case 1, 2, 4, 8:
		default:
			return "", false, fmt.Errorf("unsupported size %d (want 1, 2, 4 or 8)", n)
		}
		a.Size, sized = n, true
		op = op[at+1:]
	}
	if at := strings.IndexByte(op, '@'); !sized && at > 0 && (op[0] == '-' || op[0] >= '0' && op[0] <= '9') {
		return "", false, fmt.Errorf("unsupported size %q", op[:at])
	}
	if op == "" {
		return "", false, errors.New("empty operand")
	}
	if !sized {
		a.Size = 8
	}
	return op, sized, nil
}

// memReg checks an address register "%rbp" and returns its name without
// the %. Only 64-bit registers address memory in x86-64 code: a 32-bit one
// ("(%eax)", the x32 ABI or an addr32 prefix) would need its value cut to 32
// bits, which no compiler asks of a USDT operand, so it is refused rather
// than read wrong.
func memReg(s string) (string, error) {
	name, ok := strings.CutPrefix(s, "%")
	if !ok {
		return "", fmt.Errorf("expected a register, got %q", s)
	}
	if name == "rip" {
		return name, nil
	}
	w, err := regWidth(name)
	if err != nil {
		return "", err
	}
	if w < 8 {
		return "", fmt.Errorf("%d-bit register %%%s in an address (only 64-bit address registers are supported)", 8*w, name)
	}
	return name, nil
}

// regWidth returns the width in bytes of a general-purpose register name.
func regWidth(name string) (int, error) {
	if _, ok := bpf.AMD64.Reg(name); !ok {
		switch name {
		case "ah", "bh", "ch", "dh":
			return 0, fmt.Errorf("high-byte register %%%s is unsupported (compilers do not emit it for USDT arguments)", name)
		}
		return 0, fmt.Errorf("unsupported register %%%s", name)
	}
	switch {
	case name == "rip":
		return 8, nil
	case strings.HasPrefix(name, "r"):
		switch {
		case strings.HasSuffix(name, "d") && len(name) > 2 && name[1] >= '0' && name[1] <= '9':
			return 4, nil
		case strings.HasSuffix(name, "w") && name[1] >= '0' && name[1] <= '9':
			return 2, nil
		case strings.HasSuffix(name, "b") && name[1] >= '0' && name[1] <= '9':
			return 1, nil
		}
		return 8, nil
	case strings.HasPrefix(name, "e"):
		return 4, nil
	case len(name) == 2 && name[1] == 'l', len(name) == 3 && name[2] == 'l':
		return 1, nil // al, bl, cl, dl; sil, dil, bpl, spl
	}
	return 2, nil // ax, bx, cx, dx, si, di, bp, sp
}

// parseDisp parses a displacement or immediate: "", "-8", "0x10", or a
// symbol with an optional modifier and addend, "counter", "counter+8",
// "counter-8", "v@tpoff", "v@tpoff+8". The only modifiers are tpoff and
// ntpoff (a thread-local variable's offset from the thread pointer).
func parseDisp(s string) (v int64, sym, mod string, err error) {
	if s == "" {
		return 0, "", "", nil
	}
	if c := s[0]; c == '-' || c == '+' || c >= '0' && c <= '9' {
		v, err := parseInt(s)
		return v, "", "", err
	}
	end := 0
	for end < len(s) && isSymChar(s[end]) {
		end++
	}
	if end == 0 {
		return 0, "", "", fmt.Errorf("bad displacement %q", s)
	}
	sym, rest := s[:end], s[end:]
	if strings.HasPrefix(rest, "@") {
		m := 1
		for m < len(rest) && isSymChar(rest[m]) {
			m++
		}
		mod, rest = rest[1:m], rest[m:]
		switch mod {
		case "tpoff", "ntpoff":
			mod = "tpoff"
		default:
			return 0, "", "", fmt.Errorf("symbol modifier @%s in %q is unsupported (only @tpoff)", mod, s)
		}
	}
	if rest == "" {
		return 0, sym, mod, nil
	}
	if rest[0] != '+' && rest[0] != '-' {
		return 0, "", "", fmt.Errorf("bad displacement %q", s)
	}
	v, err = parseInt(rest)
	return v, sym, mod, err
}

// isSize reports whether s looks like the "N" or "-N" of a size prefix.
func isSize(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isSymChar reports whether c may be part of a symbol name in an operand. '@'
// is not: "foo@GOTPCREL" is a GOT reference, not foo's address.
func isSymChar(c byte) bool {
	return c == '_' || c == '.' || c == '$' ||
		c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// parseInt parses a signed decimal or 0x-hex integer; values above
// MaxInt64 wrap, as the assembler's would.
func parseInt(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 0, 64)
	if err == nil {
		return v, nil
	}
	neg := strings.HasPrefix(s, "-")
	u, uerr := strconv.ParseUint(strings.TrimLeft(s, "+-"), 0, 64)
	if uerr != nil {
		return 0, fmt.Errorf("bad number %q", s)
	}
	if neg {
		return -int64(u), nil
	}
	return int64(u), nil
}

// BPF returns the spec that records a as an integer, sub-registers mapped to
// the pt_regs slot of their 64-bit register in a.Arch's layout. A Const's
// value is truncated to Size and extended here, as the program does for the
// other kinds. An arm64 32-bit register (wN) holds 32 bits whatever the
// operand's size: "-8@w1" records w1 sign-extended, "8@w1" zero-extended.
func (a Arg) BPF() (bpf.ArgSpec, error) {
	if err := a.check(); err != nil {
		return bpf.ArgSpec{}, err
	}
	switch a.Size {
	case 1, 2, 4, 8:
	default:
		return bpf.ArgSpec{}, fmt.Errorf("usdt: arg %q: size %d is not 1, 2, 4 or 8", a.Text, a.Size)
	}
	s := bpf.ArgSpec{Size: uint8(a.Size), Off: a.Off}
	if a.Signed {
		s.IsSigned = 1
	}
	var err error
	switch a.Kind {
	case Const:
		s.Kind = bpf.KindConst
		s.Off = extend(a.Off, a.Size, a.Signed)
	case Reg:
		s.Kind = bpf.KindReg
		s.Off = 0
		s.Reg, err = a.regOff(a.Reg)
		if w := a.regWidth32(); w != 0 && int(s.Size) > w {
			s.Size = uint8(w)
		}
	case Mem:
		s.Kind = bpf.KindRegDeref
		s.Reg, s.Flags, err = a.base()
	case SIB:
		s.Kind = bpf.KindSIB
		if s.Reg, s.Flags, err = a.base(); err == nil {
			s.IndexReg, err = a.regOff(a.IndexReg)
		}
		switch a.Scale {
		case 1, 2, 4, 8:
			s.Scale = uint8(a.Scale)
		default:
			err = fmt.Errorf("scale %d is not 1, 2, 4 or 8", a.Scale)
		}
	default:
		err = fmt.Errorf("unknown kind %v", a.Kind)
	}
	if err != nil {
		return bpf.ArgSpec{}, fmt.Errorf("usdt: arg %q: %w", a.Text, err)
	}
	return s, nil
}

// BPFString returns the spec that records a as a pointer to a user C string
// copied into string slot slot: a register (KindUserStr) or a pointer in
// memory at disp(%base) or [base, disp] (KindRegDerefStr).
func (a Arg) BPFString(slot uint8) (bpf.ArgSpec, error) {
	if err := a.check(); err != nil {
		return bpf.ArgSpec{}, err
	}
	s := bpf.ArgSpec{StrSlot: slot}
	var err error
	switch a.Kind {
	case Reg:
		s.Kind = bpf.KindUserStr
		s.Reg, err = a.regOff(a.Reg)
		if a.regWidth32() != 0 {
			err = fmt.Errorf("32-bit register %s cannot hold a 64-bit pointer", a.Reg)
		}
	case Mem:
		s.Kind = bpf.KindRegDerefStr
		s.Off = a.Off
		s.Reg, s.Flags, err = a.base()
	default:
		err = fmt.Errorf("a %v operand cannot be read as a string pointer", a.Kind)
	}
	if err != nil {
		return bpf.ArgSpec{}, fmt.Errorf("usdt: arg %q: %w", a.Text, err)
	}
	return s, nil
}

// check reports why a cannot become a spec before its kind is looked at: no
// architecture, an unresolved symbol, or an x86-64 segment on arm64.
func (a Arg) check() error {
	switch {
	case a.Arch == nil:
		return fmt.Errorf("usdt: arg %q: no architecture (ParseArgs sets it)", a.Text)
	case a.Sym != "":
		return fmt.Errorf("usdt: arg %q: symbol %q is unresolved", a.Text, a.Sym)
	case a.Seg != "" && a.Arch != bpf.AMD64:
		return fmt.Errorf("usdt: arg %q: segment %%%s: is x86-64 only", a.Text, a.Seg)
	}
	return nil
}

// base returns the base register and address flags of a memory operand.
func (a Arg) base() (reg, flags uint8, err error) {
	switch a.Seg {
	case "fs":
		flags |= bpf.AddrFS
	case "gs":
		flags |= bpf.AddrGS
	}
	if a.Reg == "" {
		return 0, flags | bpf.AddrNoBase, nil
	}
	reg, err = a.regOff(a.Reg)
	return reg, flags, err
}

// ThreadBase reports whether reading a needs the thread's segment base
// (bpf.Options.ThreadBases): a %fs: or %gs: operand.
func (a Arg) ThreadBase() bool { return a.Seg != "" && (a.Kind == Mem || a.Kind == SIB) }

// regOff returns the pt_regs offset of register name in a.Arch's layout.
func (a Arg) regOff(name string) (uint8, error) {
	r, ok := a.Arch.Reg(name)
	if !ok {
		if a.Arch == bpf.AMD64 {
			return 0, fmt.Errorf("unsupported register %%%s", name)
		}
		return 0, fmt.Errorf("unsupported %v register %s", a.Arch, name)
	}
	return r, nil
}

// extend truncates v to size bytes and sign- or zero-extends it.
func extend(v int64, size int, signed bool) int64 {
	if size >= 8 {
		return v
	}
	shift := uint(64 - 8*size)
	if signed {
		return v << shift >> shift
	}
	return int64(uint64(v) << shift >> shift)
}

// BPFArgs returns the integer specs of args, failing if there are more than
// bpf.MaxArgs.
func BPFArgs(args []Arg) ([]bpf.ArgSpec, error) {
	if len(args) > bpf.MaxArgs {
		return nil, fmt.Errorf("usdt: %d args, more than the %d bpftape records", len(args), bpf.MaxArgs)
	}
	specs := make([]bpf.ArgSpec, len(args))
	for i, a := range args {
		s, err := a.BPF()
		if err != nil {
			return nil, fmt.Errorf("arg %d: %w", i+1, err)
		}
		specs[i] = s
	}
	return specs, nil
}
