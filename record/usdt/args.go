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
	Const ArgKind = iota // $imm: the value itself
	Reg                  // %reg: a register
	Mem                  // disp(%base): Size bytes of memory at base+disp
	SIB                  // disp(%base,%index,scale): memory at base+index*scale+disp
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

// Arg is one parsed USDT argument, an x86-64 AT&T operand with a size such as
// "-4@-8(%rbp)".
type Arg struct {
	Size   int  // 1, 2, 4 or 8 bytes
	Signed bool // a negative size in the spec
	Kind   ArgKind
	// Reg is the (base) register as written, without the %: "rbp", "eax",
	// "r12d", "rip"; IndexReg the SIB index register.
	Reg, IndexReg string
	Scale         int   // SIB index multiplier, 1, 2, 4 or 8
	Off           int64 // displacement (Mem, SIB) or the value (Const)
	// Sym is a symbol the operand refers to and that is not resolved yet:
	// the displacement of "counter+8(%rip)" (Off is then the addend 8), or
	// the immediate "$table" (a non-PIE address). Read resolves what it can
	// and clears Sym; BPF fails while Sym is set.
	Sym  string
	Text string // the operand as written in the note, size included
}

// ParseArgs parses a USDT argument string of space-separated x86-64
// operands such as "-4@%eax 8@-8(%rbp) -4@$5"; without an "N@" size an operand
// is unsigned, a register as wide as its name and anything else 8 bytes.
// Segment-prefixed (%fs:), absolute-address and non-integer operands are errors.
func ParseArgs(s string) ([]Arg, error) {
	var args []Arg
	for i, op := range strings.Fields(s) {
		a, err := parseArg(op)
		if err != nil {
			return nil, fmt.Errorf("usdt: arg %d %q: %w", i+1, op, err)
		}
		args = append(args, a)
	}
	return args, nil
}

func parseArg(text string) (Arg, error) {
	a := Arg{Text: text}
	op := text
	sized := false
	if at := strings.IndexByte(op, '@'); at > 0 && isSize(op[:at]) {
		n, err := strconv.Atoi(op[:at])
		if err != nil {
			return a, fmt.Errorf("bad size %q", op[:at])
		}
		if n < 0 {
			a.Signed, n = true, -n
		}
		switch n {
		case 1, 2, 4, 8:
		default:
			return a, fmt.Errorf("unsupported size %d (want 1, 2, 4 or 8)", n)
		}
		a.Size, sized = n, true
		op = op[at+1:]
	}
	if at := strings.IndexByte(op, '@'); !sized && at > 0 && (op[0] == '-' || op[0] >= '0' && op[0] <= '9') {
		return a, fmt.Errorf("unsupported size %q", op[:at])
	}
	if op == "" {
		return a, errors.New("empty operand")
	}
	if i := strings.IndexByte(op, ':'); i >= 0 {
		return a, fmt.Errorf("segment-prefixed operand %q is unsupported (thread-local storage cannot be read)", op[:i+1])
	}
	if !sized {
		a.Size = 8
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
		v, sym, err := parseDisp(op[1:])
		if err != nil {
			return a, err
		}
		a.Kind, a.Off, a.Sym = Const, v, sym
		return a, nil
	}
	open := strings.IndexByte(op, '(')
	if open < 0 {
		return a, fmt.Errorf("absolute memory operand %q is unsupported", op)
	}
	if !strings.HasSuffix(op, ")") {
		return a, fmt.Errorf("memory operand %q does not end with )", op)
	}
	disp, sym, err := parseDisp(op[:open])
	if err != nil {
		return a, err
	}
	a.Off, a.Sym = disp, sym
	parts := strings.Split(op[open+1:len(op)-1], ",")
	if len(parts) > 3 {
		return a, fmt.Errorf("memory operand %q has %d parts", op, len(parts))
	}
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	base := parts[0]
	if base == "" {
		return a, fmt.Errorf("memory operand %q has no base register (unsupported)", op)
	}
	if a.Reg, err = memReg(base); err != nil {
		return a, err
	}
	if sym != "" && a.Reg != "rip" {
		return a, fmt.Errorf("symbolic displacement %q with base %%%s is unsupported (only %%rip)", sym, a.Reg)
	}
	if len(parts) == 1 {
		a.Kind = Mem
		return a, nil
	}
	a.Kind, a.Scale = SIB, 1
	if a.IndexReg, err = memReg(parts[1]); err != nil {
		return a, err
	}
	if a.IndexReg == "rip" || a.Reg == "rip" {
		return a, fmt.Errorf("%%rip in an indexed operand %q", op)
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

// memReg checks an address register "%rbp" (64-bit, or 32-bit with an
// address-size prefix) and returns its name without the %.
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
	if w < 4 {
		return "", fmt.Errorf("%d-bit register %%%s in an address", 8*w, name)
	}
	return name, nil
}

// regWidth returns the width in bytes of a general-purpose register name.
func regWidth(name string) (int, error) {
	if _, ok := bpf.RegOffset(name); !ok {
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
// symbol with an optional addend, "counter", "counter+8", "counter-8".
func parseDisp(s string) (int64, string, error) {
	if s == "" {
		return 0, "", nil
	}
	if c := s[0]; c == '-' || c == '+' || c >= '0' && c <= '9' {
		v, err := parseInt(s)
		return v, "", err
	}
	end := 0
	for end < len(s) && isSymChar(s[end]) {
		end++
	}
	if end == 0 {
		return 0, "", fmt.Errorf("bad displacement %q", s)
	}
	sym, rest := s[:end], s[end:]
	if rest == "" {
		return 0, sym, nil
	}
	if rest[0] != '+' && rest[0] != '-' {
		return 0, "", fmt.Errorf("bad displacement %q", s)
	}
	v, err := parseInt(rest)
	return v, sym, err
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
// the pt_regs slot of their 64-bit register. A Const's value is truncated to
// Size and extended here, as the program does for the other kinds.
func (a Arg) BPF() (bpf.ArgSpec, error) {
	if a.Sym != "" {
		return bpf.ArgSpec{}, fmt.Errorf("usdt: arg %q: symbol %q is unresolved", a.Text, a.Sym)
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
		s.Reg, err = regOff(a.Reg)
	case Mem:
		s.Kind = bpf.KindRegDeref
		s.Reg, err = regOff(a.Reg)
	case SIB:
		s.Kind = bpf.KindSIB
		if s.Reg, err = regOff(a.Reg); err == nil {
			s.IndexReg, err = regOff(a.IndexReg)
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
// memory at disp(%base) (KindRegDerefStr).
func (a Arg) BPFString(slot uint8) (bpf.ArgSpec, error) {
	if a.Sym != "" {
		return bpf.ArgSpec{}, fmt.Errorf("usdt: arg %q: symbol %q is unresolved", a.Text, a.Sym)
	}
	s := bpf.ArgSpec{StrSlot: slot}
	var err error
	switch a.Kind {
	case Reg:
		s.Kind = bpf.KindUserStr
		s.Reg, err = regOff(a.Reg)
	case Mem:
		s.Kind = bpf.KindRegDerefStr
		s.Off = a.Off
		s.Reg, err = regOff(a.Reg)
	default:
		err = fmt.Errorf("a %v operand cannot be read as a string pointer", a.Kind)
	}
	if err != nil {
		return bpf.ArgSpec{}, fmt.Errorf("usdt: arg %q: %w", a.Text, err)
	}
	return s, nil
}

func regOff(name string) (uint8, error) {
	r, ok := bpf.RegOffset(name)
	if !ok {
		return 0, fmt.Errorf("unsupported register %%%s", name)
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
