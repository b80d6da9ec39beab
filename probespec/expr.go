package probespec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// An expression field reads through a pointer: a member (req->hdr.size,
// t->task), a pointer chain (file->f_path.dentry->d_name.name), an element
// (v->slots[2]) or memory at an offset (*(u32 *)(arg1 + 16)). The parser
// only checks the syntax; the recorder resolves the steps with the
// binary's DWARF or the kernel's BTF into reads at fixed offsets.
//
//	EXPR    := UNARY
//	UNARY   := '*' UNARY | '&' UNARY | '(' CTYPE ')' UNARY | POSTFIX
//	POSTFIX := PRIMARY { '->' IDENT | '.' IDENT | '[' INT ']' }
//	PRIMARY := IDENT | '(' EXPR [ ('+' | '-') INT ] ')'
//	CTYPE   := [struct | union] IDENT ['*'...] | u8 ... s64, char, int, long, unsigned ...

// StepOp is what one step of an expression does to the value so far.
type StepOp uint8

// Expression steps, applied in order to the base value.
const (
	StepArrow  StepOp = iota + 1 // ->Name: the member of the struct the value points to
	StepMember                   // .Name: the member of the struct the value is
	StepIndex                    // [N]: element N of the array the value is or points to
	StepDeref                    // *: what the value points to
	StepAddr                     // &: the address of the value (a member or element)
	StepAdd                      // + N (or - N): C pointer arithmetic, bytes on an integer
	StepCast                     // (Type): the value as C type Type
)

// Step is one step of an expression.
type Step struct {
	Op   StepOp
	Name string // StepArrow, StepMember: the member; StepCast: the C type as written
	N    int64  // StepIndex, StepAdd
}

// MaxSteps bounds an expression's steps, against hostile input; the
// recorder's limit on pointer loads is lower.
const MaxSteps = 32

// String writes the step as C.
func (s Step) String() string {
	switch s.Op {
	case StepArrow:
		return "->" + s.Name
	case StepMember:
		return "." + s.Name
	case StepIndex:
		return "[" + strconv.FormatInt(s.N, 10) + "]"
	}
	return fmt.Sprintf("Step(%d)", s.Op)
}

// exprText writes base with steps applied in canonical C, the field's name
// in the capture: "req->hdr.size", "*(u32 *)(arg1 + 16)".
func exprText(base string, steps []Step) string {
	s := base
	atom := true // s needs no parentheses before a postfix step
	for _, st := range steps {
		switch st.Op {
		case StepArrow, StepMember, StepIndex:
			if !atom {
				s = "(" + s + ")"
			}
			s += st.String()
			atom = true
		case StepDeref:
			s, atom = "*"+s, false
		case StepAddr:
			s, atom = "&"+s, false
		case StepCast:
			s, atom = "("+st.Name+")"+s, false
		case StepAdd:
			op := " + "
			n := st.N
			if n < 0 {
				op, n = " - ", -n
			}
			s, atom = "("+s+op+strconv.FormatInt(n, 10)+")", true
		}
	}
	return s
}

// exprParser is a recursive-descent parser over the tokens of one
// expression.
type exprParser struct {
	toks []string
	pos  int
}

// ErrExpr is the error of every malformed expression.
var ErrExpr = errors.New("bad expression")

func exprErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrExpr, fmt.Sprintf(format, args...))
}

// parseExpr parses an expression field's text into its base identifier
// and steps. A bare identifier has no steps.
func parseExpr(text string) (base string, steps []Step, err error) {
	toks, err := tokenize(text)
	if err != nil {
		return "", nil, err
	}
	p := &exprParser{toks: toks}
	base, steps, err = p.unary(0)
	if err != nil {
		return "", nil, err
	}
	if p.pos < len(p.toks) {
		return "", nil, exprErrorf("unexpected %q", p.toks[p.pos])
	}
	if len(steps) > MaxSteps {
		return "", nil, exprErrorf("%d steps: at most %d", len(steps), MaxSteps)
	}
	return base, steps, nil
}

// maxTokens bounds the tokens of an expression or a predicate, against
// hostile input.
const maxTokens = 4 * MaxSteps

// tokenize splits an expression or predicate into identifiers, numbers,
// strings and operators.
func tokenize(text string) ([]string, error) {
	var toks []string
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case isIdentByte(c):
			j := i
			for j < len(text) && isIdentByte(text[j]) {
				j++
			}
			toks = append(toks, text[i:j])
			i = j
		case c == '"':
			j := i + 1
			for j < len(text) && text[j] != '"' {
				if text[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(text) {
				return nil, exprErrorf("unterminated string")
			}
			toks = append(toks, text[i:j+1])
			i = j + 1
		default:
			op := ""
			for _, o := range []string{"->", "==", "!=", "<=", ">=", "&&", "||"} {
				if strings.HasPrefix(text[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				if !strings.ContainsRune("*&()[].+-<>!", rune(c)) {
					return nil, exprErrorf("unexpected character %q", c)
				}
				op = text[i : i+1]
			}
			toks = append(toks, op)
			i += len(op)
		}
		if len(toks) > maxTokens {
			return nil, exprErrorf("too long: more than %d tokens", maxTokens)
		}
	}
	return toks, nil
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *exprParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *exprParser) next() string {
	t := p.peek()
	if t != "" {
		p.pos++
	}
	return t
}

func (p *exprParser) expect(t string) error {
	if got := p.next(); got != t {
		if got == "" {
			return exprErrorf("missing %q", t)
		}
		return exprErrorf("want %q, got %q", t, got)
	}
	return nil
}

// unary parses UNARY; depth bounds the recursion.
func (p *exprParser) unary(depth int) (string, []Step, error) {
	if depth > MaxSteps {
		return "", nil, exprErrorf("nested too deeply")
	}
	switch p.peek() {
	case "*", "&":
		op := StepDeref
		if p.next() == "&" {
			op = StepAddr
		}
		base, steps, err := p.unary(depth + 1)
		return base, append(steps, Step{Op: op}), err
	case "(":
		if p.isCast() {
			p.next()
			ctype, err := p.ctype()
			if err != nil {
				return "", nil, err
			}
			if err := p.expect(")"); err != nil {
				return "", nil, err
			}
			base, steps, err := p.unary(depth + 1)
			return base, append(steps, Step{Op: StepCast, Name: ctype}), err
		}
	}
	return p.postfix(depth)
}

// cTypeWords start a C type in a cast: the words of types.go's integer
// names and C's other type keywords.
var cTypeWords = func() map[string]bool {
	words := map[string]bool{
		"struct": true, "union": true, "enum": true, "const": true, "void": true, "bool": true, "_Bool": true,
	}
	for _, w := range cIntKeywords {
		words[w] = true
	}
	for _, ft := range fieldTypes {
		words[ft.name] = true
	}
	for name := range cIntTypedefs {
		words[name] = true
	}
	return words
}()

// isCast reports whether the '(' at pos opens a cast: a type word follows,
// or an identifier and then '*' or ')' ... followed by an operand.
func (p *exprParser) isCast() bool {
	if p.pos+1 >= len(p.toks) {
		return false
	}
	if cTypeWords[p.toks[p.pos+1]] {
		return true
	}
	// (name *)x: a typedef'd pointer.
	return p.pos+2 < len(p.toks) && isIdent(p.toks[p.pos+1]) && p.toks[p.pos+2] == "*" &&
		p.pos+3 < len(p.toks) && (p.toks[p.pos+3] == "*" || p.toks[p.pos+3] == ")")
}

// ctype parses the type of a cast: words, then stars; it returns it
// written with single spaces: "struct foo *", "u32 *", "unsigned int".
func (p *exprParser) ctype() (string, error) {
	var words []string
	for isIdent(p.peek()) {
		words = append(words, p.next())
	}
	if len(words) == 0 {
		return "", exprErrorf("want a type in the cast")
	}
	if (words[0] == "struct" || words[0] == "union" || words[0] == "enum") && len(words) != 2 {
		return "", exprErrorf("want %s NAME", words[0])
	}
	stars := ""
	for p.peek() == "*" {
		p.next()
		stars += "*"
	}
	t := strings.Join(words, " ")
	if stars != "" {
		t += " " + stars
	}
	return t, nil
}

func (p *exprParser) postfix(depth int) (string, []Step, error) {
	var base string
	var steps []Step
	switch t := p.next(); {
	case t == "(":
		var err error
		base, steps, err = p.unary(depth + 1)
		if err != nil {
			return "", nil, err
		}
		if op := p.peek(); op == "+" || op == "-" {
			p.next()
			n, err := parseInt(p.next())
			if err != nil {
				return "", nil, err
			}
			if op == "-" {
				n = -n
			}
			steps = append(steps, Step{Op: StepAdd, N: n})
		}
		if err := p.expect(")"); err != nil {
			return "", nil, err
		}
	case isIdent(t) && !isDigits(t[:1]):
		base = t
	case t == "":
		return "", nil, exprErrorf("missing operand")
	default:
		return "", nil, exprErrorf("unexpected %q", t)
	}
	for {
		switch p.peek() {
		case "->", ".":
			op := StepArrow
			if p.next() == "." {
				op = StepMember
			}
			name := p.next()
			if !isIdent(name) || isDigits(name[:1]) {
				return "", nil, exprErrorf("want a member name after %s", map[StepOp]string{StepArrow: "->", StepMember: "."}[op])
			}
			steps = append(steps, Step{Op: op, Name: name})
		case "[":
			p.next()
			n, err := parseInt(p.next())
			if err != nil {
				return "", nil, err
			}
			if n < 0 {
				return "", nil, exprErrorf("negative index %d", n)
			}
			if err := p.expect("]"); err != nil {
				return "", nil, err
			}
			steps = append(steps, Step{Op: StepIndex, N: n})
		default:
			return base, steps, nil
		}
		if len(steps) > MaxSteps {
			return "", nil, exprErrorf("more than %d steps", MaxSteps)
		}
	}
}

// parseInt parses a decimal or 0x hexadecimal constant.
func parseInt(t string) (int64, error) {
	n, err := strconv.ParseInt(t, 0, 64)
	if err != nil {
		if u, uerr := strconv.ParseUint(t, 0, 64); uerr == nil {
			return int64(u), nil
		}
		return 0, exprErrorf("want an integer, got %q", t)
	}
	return n, nil
}
