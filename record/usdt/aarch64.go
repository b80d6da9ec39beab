package usdt

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bpftape/bpftape/bpf"
)

// arm64 operands, as gcc and clang write them through sys/sdt.h (the "nor"
// constraint: an immediate, an offsettable memory operand or a register):
//
//	-4@x0 8@x19 -8@sp          a register; gcc names the 64-bit one whatever the size
//	4@w1                       a 32-bit register (hand-written assembly)
//	-4@5 1@-56 8@#16           an immediate: as the compiler prints it, in the
//	                           operand's size ("1@-56" is the byte 200)
//	8@[x1] -4@[sp, 16]         memory at a base register plus a displacement,
//	-8@[x29, -8] 2@[x2, #-14]  negative or "#"-prefixed too
//
// Hand-written notes may also index ("[x0, x1]", "[x0, x1, lsl #3]") and
// take the low 12 bits of a symbol's address after an adrp
// ("[x1, #:lo12:counter]"). What else the assembler accepts is refused with
// the reason: writeback ("[x0, 8]!", "[x0], 8"), an extended 32-bit index
// ("[x0, w1, sxtw #2]"), pc, floating-point and SIMD registers, other
// relocation operators, register pairs.

// splitARM64 splits an arm64 argument string into its operands: spaces
// separate them, except inside brackets, which hold "[sp, 16]".
func splitARM64(s string) ([]string, error) {
	var ops []string
	start, depth := -1, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if depth == 0 && isSpace(c) {
			if start >= 0 {
				ops = append(ops, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
		switch c {
		case '[':
			depth++
		case ']':
			if depth--; depth < 0 {
				return nil, fmt.Errorf("arg %d %q: ] without [", len(ops)+1, strings.Fields(s[start:])[0])
			}
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("arg %d %q: [ without ]", len(ops)+1, s[start:])
	}
	if start >= 0 {
		ops = append(ops, s[start:])
	}
	return ops, nil
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// parseARM64 parses one arm64 operand.
func parseARM64(text string) (Arg, error) {
	a := Arg{Arch: bpf.ARM64, Text: text}
	op, sized, err := a.cutSize(text)
	if err != nil {
		return a, err
	}
	switch c := op[0]; {
	case c == '[':
		return a, a.parseMemARM64(op)
	case c == '#' || c == '-' || c == '+' || c >= '0' && c <= '9':
		a.Kind = Const
		a.Off, err = parseImmARM64(op)
		return a, err
	}
	w, err := regARM64(op)
	if errors.Is(err, errZeroReg) {
		// xzr and wzr read as 0: the constant.
		a.Kind = Const
		if !sized {
			a.Size = w
		}
		return a, nil
	}
	if err != nil {
		return a, err
	}
	a.Kind, a.Reg = Reg, op
	if !sized {
		a.Size = w
	}
	return a, nil
}

// errZeroReg is regARM64's answer for the zero registers, xzr and wzr.
var errZeroReg = errors.New("zero register")

// regARM64 returns the width in bytes of an arm64 general-purpose register
// name: 8 for xN, sp, fp and lr, 4 for wN and wsp. For xzr and wzr it
// returns their width and errZeroReg; for anything else, why it is no
// register that bpftape reads.
func regARM64(name string) (int, error) {
	switch name {
	case "xzr":
		return 8, errZeroReg
	case "wzr":
		return 4, errZeroReg
	case "pc":
		return 0, errors.New("pc is not readable as an operand (pc-relative operands are unsupported)")
	}
	if _, ok := bpf.ARM64.Reg(name); ok {
		if name[0] == 'w' {
			return 4, nil
		}
		return 8, nil
	}
	if len(name) >= 2 && strings.ContainsRune("bhsdqv", rune(name[0])) {
		if n, err := strconv.Atoi(name[1:]); err == nil && n >= 0 && n <= 31 && name[1] != '+' && name[1] != '-' {
			return 0, fmt.Errorf("floating-point/SIMD register %s is unsupported", name)
		}
	}
	return 0, fmt.Errorf("unsupported operand %q (not an arm64 register, immediate or [base, offset] memory operand)", name)
}

// parseImmARM64 parses an immediate or a displacement, "16", "-8", "0x10",
// with or without a leading "#".
func parseImmARM64(s string) (int64, error) {
	s = strings.TrimPrefix(s, "#")
	if s == "" {
		return 0, errors.New("empty immediate")
	}
	if c := s[0]; c != '-' && c != '+' && (c < '0' || c > '9') {
		return 0, fmt.Errorf("symbolic immediate %q is unsupported", s)
	}
	return parseInt(s)
}

// parseMemARM64 parses a bracketed memory operand into a: "[base]",
// "[base, off]", "[base, :lo12:sym+off]", "[base, index]" or
// "[base, index, lsl #n]".
func (a *Arg) parseMemARM64(op string) error {
	end := strings.IndexByte(op, ']')
	if end < 0 {
		return fmt.Errorf("memory operand %q has no closing ]", op)
	}
	switch rest := op[end+1:]; {
	case rest == "!":
		return fmt.Errorf("pre-indexed operand %q writes its base register back: unsupported", op)
	case strings.HasPrefix(rest, ","):
		return fmt.Errorf("post-indexed operand %q writes its base register back: unsupported", op)
	case rest != "":
		return fmt.Errorf("memory operand %q has %q after the ]", op, rest)
	}
	parts := strings.Split(op[1:end], ",")
	if len(parts) > 3 {
		return fmt.Errorf("memory operand %q has %d parts", op, len(parts))
	}
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	if parts[0] == "" {
		return fmt.Errorf("memory operand %q has no base register", op)
	}
	if err := addrRegARM64(parts[0], "base"); err != nil {
		return err
	}
	a.Kind, a.Reg = Mem, parts[0]
	if len(parts) == 1 {
		return nil
	}
	p := parts[1]
	if p == "" {
		return fmt.Errorf("memory operand %q has an empty offset", op)
	}
	if c := p[0]; c == '#' || c == ':' || c == '-' || c == '+' || c >= '0' && c <= '9' {
		if len(parts) == 3 {
			return fmt.Errorf("memory operand %q has %q after its offset", op, parts[2])
		}
		return a.offsetARM64(p)
	}
	if err := addrRegARM64(p, "index"); err != nil {
		return err
	}
	a.Kind, a.IndexReg, a.Scale = SIB, p, 1
	if len(parts) == 3 {
		shift, amount, _ := strings.Cut(parts[2], " ")
		amount = strings.TrimPrefix(strings.TrimSpace(amount), "#")
		if shift != "lsl" {
			return fmt.Errorf("index extend %q is unsupported (only lsl)", parts[2])
		}
		n, err := strconv.Atoi(amount)
		if err != nil || n < 0 || n > 3 {
			return fmt.Errorf("bad index shift %q (want lsl #0 to #3)", parts[2])
		}
		a.Scale = 1 << n
	}
	return nil
}

// addrRegARM64 checks a base or index register of a memory operand: a
// 64-bit one. sp cannot index, and a 32-bit index needs an extend
// (sxtw, uxtw) that no spec expresses.
func addrRegARM64(name, role string) error {
	w, err := regARM64(name)
	switch {
	case errors.Is(err, errZeroReg):
		return fmt.Errorf("%s cannot be a %s register", name, role)
	case err != nil:
		return err
	case w != 8 && role == "index":
		return fmt.Errorf("32-bit index register %s needs an extend (sxtw, uxtw), which is unsupported", name)
	case w != 8:
		return fmt.Errorf("32-bit register %s cannot be a base register", name)
	case role == "index" && name == "sp":
		return errors.New("sp cannot be an index register")
	}
	return nil
}

// offsetARM64 parses the displacement of a memory operand: a number, with
// or without "#", or ":lo12:sym", ":lo12:sym+8", which Read resolves.
func (a *Arg) offsetARM64(s string) error {
	s = strings.TrimPrefix(s, "#")
	if !strings.HasPrefix(s, ":") {
		v, err := parseImmARM64(s)
		a.Off = v
		return err
	}
	mod, expr, ok := strings.Cut(s[1:], ":")
	if !ok {
		return fmt.Errorf("relocation operator %q has no closing :", s)
	}
	if mod != "lo12" {
		return fmt.Errorf("relocation operator :%s: is unsupported (only :lo12:)", mod)
	}
	if strings.ContainsRune(expr, '@') {
		return fmt.Errorf("bad symbol %q", expr)
	}
	v, sym, _, err := parseDisp(expr)
	if err != nil {
		return err
	}
	if sym == "" {
		return fmt.Errorf(":lo12: of %q, which is no symbol", expr)
	}
	a.Off, a.Sym, a.Mod = v, sym, "lo12"
	return nil
}

// regWidth32 returns 4 if a's register is an arm64 32-bit one (wN, wsp),
// which holds 32 bits whatever the operand's size, else 0.
func (a Arg) regWidth32() int {
	if a.Arch == bpf.ARM64 && strings.HasPrefix(a.Reg, "w") {
		return 4
	}
	return 0
}
