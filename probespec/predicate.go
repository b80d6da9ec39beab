package probespec

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// A predicate ends a probe, between slashes as in bpftrace (users call it
// the probe's filter):
//
//	big=u:./vnet:rx(size)/size >= 8192/
//	t:sched:sched_switch(prev_pid, next_pid)/comm == "qemu" && !(next_pid == 0)/
//
//	PRED   := OR
//	OR     := AND { '||' AND }
//	AND    := NOT { '&&' NOT }
//	NOT    := '!' NOT | '(' OR ')' | CMP
//	CMP    := OPERAND OP CONST | CONST OP OPERAND
//	OP     := == | != | < | <= | > | >=
//
// OPERAND is a recorded field (by its name in the capture), pid, tid, cpu
// or comm; CONST an integer (decimal, 0x hex, negative) or, for comm, a
// "string" compared with == or !=. The recorder compiles it into the
// probe's BPF predicate, which the program runs before it reserves ring
// space.

// PredicateKind is a predicate node's kind.
type PredicateKind uint8

// Predicate node kinds.
const (
	PredAnd PredicateKind = iota + 1 // L && R
	PredOr                           // L || R
	PredNot                          // !L
	PredCmp                          // Operand Cmp Int (or Str)
	PredAny                          // Any[0] || Any[1] || ...: a list, flat (AnyOf)
)

// CmpOp is a comparison's operator. Its zero value is no operator.
type CmpOp uint8

// Comparison operators.
const (
	CmpEq CmpOp = iota + 1 // ==
	CmpNe                  // !=
	CmpLt                  // <
	CmpLe                  // <=
	CmpGt                  // >
	CmpGe                  // >=
)

// cmpText is each operator's C spelling, indexed by CmpOp.
var cmpText = [...]string{CmpEq: "==", CmpNe: "!=", CmpLt: "<", CmpLe: "<=", CmpGt: ">", CmpGe: ">="}

// String returns the operator as C writes it: ==, !=, <, <=, > or >=.
func (o CmpOp) String() string {
	if int(o) < len(cmpText) && cmpText[o] != "" {
		return cmpText[o]
	}
	return "CmpOp(" + strconv.Itoa(int(o)) + ")"
}

// Flip returns the operator with its sides swapped: 5 < x is x > 5.
func (o CmpOp) Flip() CmpOp {
	switch o {
	case CmpLt:
		return CmpGt
	case CmpLe:
		return CmpGe
	case CmpGt:
		return CmpLt
	case CmpGe:
		return CmpLe
	}
	return o
}

// parseCmpOp returns the operator a token spells, false for none.
func parseCmpOp(tok string) (CmpOp, bool) {
	for o, t := range cmpText {
		if t != "" && t == tok {
			return CmpOp(o), true
		}
	}
	return 0, false
}

// Predicate is a parsed predicate: a tree of comparisons joined by &&,
// || and !.
type Predicate struct {
	Kind PredicateKind
	L, R *Predicate
	// Any holds the alternatives of a list (PredAny), two or more, in
	// order: a list of any length is one node, not a chain of ||.
	Any []*Predicate
	// A comparison (PredCmp): Operand Cmp the constant, with the
	// operand always on the left (5 < x is read as x > 5).
	Operand string // a field name, "pid", "tid", "cpu" or "comm"; args.NAME is the field NAME
	Cmp     CmpOp
	// Int is the constant's 64 bits: negative when Neg, else read as
	// unsigned (0xffff888000000000 has them all).
	Int   int64
	Neg   bool
	Str   string // for comm
	IsStr bool
	// Builtin says that pid, tid, cpu or comm is the event's, even if the
	// probe records a field of that name (--pid and --comm).
	Builtin bool
}

// MaxPredicateOps bounds the operations a predicate compiles into (Size):
// the BPF program runs at most 16, one per comparison, &&, || and !.
const MaxPredicateOps = 16

// builtinOperands are the predicate operands every probe has.
var builtinOperands = map[string]bool{"pid": true, "tid": true, "cpu": true, "comm": true}

// MaxAny bounds the alternatives of a list (AnyOf), such as the values
// of a --pid or --comm list. The recorder compiles fewer: a probe's BPF
// predicate holds a few operations, one per comparison and one per ||.
const MaxAny = 4096

// AnyOf returns the predicate that passes when any of fs passes, as
// fs[0] || fs[1] || ...: nil for none, fs[0] alone for one, else one flat
// PredAny node. It refuses more than MaxAny alternatives, with an error
// that names the count and the limit ("100000 values, at most 4096") for
// the caller to prefix with what the list is.
func AnyOf(fs ...*Predicate) (*Predicate, error) {
	switch {
	case len(fs) > MaxAny:
		return nil, fmt.Errorf("%d values, at most %d", len(fs), MaxAny)
	case len(fs) == 0:
		return nil, nil
	case len(fs) == 1:
		return fs[0], nil
	}
	return &Predicate{Kind: PredAny, Any: slices.Clone(fs)}, nil
}

// String writes the predicate back, fully parenthesized. A list (PredAny)
// writes as the chain of || it stands for, grouped from the left as the
// parser groups it: ((a || b) || c). String keeps a stack of its own and
// writes in time linear in the text, however deep or long the predicate.
func (f *Predicate) String() string {
	var b strings.Builder
	f.writeTo(&b)
	return b.String()
}

func (f *Predicate) writeTo(b *strings.Builder) {
	// todo holds what is left to write, the next on top: a node, or the
	// text lit when the node is nil.
	type item struct {
		f   *Predicate
		lit string
	}
	todo := []item{{f: f}}
	for len(todo) > 0 {
		it := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		n := it.f
		if n == nil {
			b.WriteString(it.lit)
			continue
		}
		switch n.Kind {
		case PredAnd, PredOr:
			op := " && "
			if n.Kind == PredOr {
				op = " || "
			}
			b.WriteByte('(')
			todo = append(todo, item{lit: ")"}, item{f: n.R}, item{lit: op}, item{f: n.L})
		case PredNot:
			b.WriteByte('!')
			todo = append(todo, item{f: n.L})
		case PredAny:
			// Written in place: the stack grows with how deeply lists
			// nest in lists, not with their length.
			for range len(n.Any) - 1 {
				b.WriteByte('(')
			}
			for i, a := range n.Any {
				if i > 0 {
					b.WriteString(" || ")
				}
				if a.Kind == PredCmp {
					a.writeCmp(b)
				} else {
					a.writeTo(b)
				}
				if i > 0 {
					b.WriteByte(')')
				}
			}
		default:
			n.writeCmp(b)
		}
	}
}

// writeCmp writes a comparison.
func (f *Predicate) writeCmp(b *strings.Builder) {
	var buf [32]byte
	b.WriteString(f.Operand)
	b.WriteByte(' ')
	b.WriteString(f.Cmp.String())
	b.WriteByte(' ')
	switch {
	case f.IsStr:
		b.Write(strconv.AppendQuote(buf[:0], f.Str))
	case f.Neg:
		b.Write(strconv.AppendInt(buf[:0], f.Int, 10))
	default:
		b.Write(strconv.AppendUint(buf[:0], uint64(f.Int), 10))
	}
}

// walk calls fn on every node of the predicate, parents before children
// and left before right, with a stack of its own.
func (f *Predicate) walk(fn func(*Predicate)) {
	todo := []*Predicate{f}
	for len(todo) > 0 {
		n := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if n == nil {
			continue
		}
		fn(n)
		for i := len(n.Any) - 1; i >= 0; i-- {
			todo = append(todo, n.Any[i])
		}
		todo = append(todo, n.R, n.L)
	}
}

// Operands returns the operands the predicate compares, each once, in
// order.
func (f *Predicate) Operands() []string {
	var out []string
	seen := map[string]bool{}
	f.walk(func(n *Predicate) {
		if n.Kind == PredCmp && !seen[n.Operand] {
			seen[n.Operand] = true
			out = append(out, n.Operand)
		}
	})
	return out
}

// Size returns the number of operations the predicate compiles into: one
// per comparison, &&, || and !, a list of n alternatives holding n-1 ||.
func (f *Predicate) Size() int {
	size := 0
	f.walk(func(n *Predicate) {
		size++
		if n.Kind == PredAny {
			size += len(n.Any) - 2 // n-1 ||, the node counted once
		}
	})
	return size
}

// MaxPredicateText bounds the length of a predicate's text in bytes, far
// above what MaxPredicateOps operations take; the parser also stops at 128
// tokens.
const MaxPredicateText = 4096

// ParsePredicate parses a predicate's text, without the slashes. Its
// parsing is bounded: at most MaxPredicateText bytes, 128 tokens and
// MaxPredicateOps levels of nesting. Its errors call the predicate a
// filter, as users do.
func ParsePredicate(text string) (*Predicate, error) {
	if len(text) > MaxPredicateText {
		return nil, fmt.Errorf("filter %s: %w: %d bytes, at most %d", quoteShort(text), ErrExpr, len(text), MaxPredicateText)
	}
	toks, err := tokenize(text)
	if err != nil {
		return nil, fmt.Errorf("filter %q: %w", text, err)
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("filter %q: %w: empty", text, ErrExpr)
	}
	p := &exprParser{toks: toks}
	f, err := p.or(0)
	if err == nil && p.pos < len(p.toks) {
		err = exprErrorf("unexpected %q", p.toks[p.pos])
	}
	if err == nil && f.Size() > MaxPredicateOps {
		err = exprErrorf("%d operations: a filter compiles into at most %d", f.Size(), MaxPredicateOps)
	}
	if err != nil {
		return nil, fmt.Errorf("filter %q: %w", text, err)
	}
	return f, nil
}

func (p *exprParser) or(depth int) (*Predicate, error) {
	l, err := p.and(depth)
	for err == nil && p.peek() == "||" {
		p.next()
		var r *Predicate
		if r, err = p.and(depth); err == nil {
			l = &Predicate{Kind: PredOr, L: l, R: r}
		}
	}
	return l, err
}

func (p *exprParser) and(depth int) (*Predicate, error) {
	l, err := p.not(depth)
	for err == nil && p.peek() == "&&" {
		p.next()
		var r *Predicate
		if r, err = p.not(depth); err == nil {
			l = &Predicate{Kind: PredAnd, L: l, R: r}
		}
	}
	return l, err
}

func (p *exprParser) not(depth int) (*Predicate, error) {
	if depth > MaxPredicateOps {
		return nil, exprErrorf("nested too deeply")
	}
	switch p.peek() {
	case "!":
		p.next()
		f, err := p.not(depth + 1)
		if err != nil {
			return nil, err
		}
		return &Predicate{Kind: PredNot, L: f}, nil
	case "(":
		p.next()
		f, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		return f, p.expect(")")
	}
	return p.cmp()
}

func (p *exprParser) cmp() (*Predicate, error) {
	lhs, err := p.term()
	if err != nil {
		return nil, err
	}
	tok := p.next()
	op, ok := parseCmpOp(tok)
	if !ok {
		if tok == "" {
			return nil, exprErrorf("%s: want a comparison (==, !=, <, <=, >, >=) and a constant", lhs)
		}
		return nil, exprErrorf("want a comparison (==, !=, <, <=, >, >=), got %q", tok)
	}
	rhs, err := p.term()
	if err != nil {
		return nil, err
	}
	operand, constant, written := lhs, rhs, op
	if isConstTok(lhs) {
		operand, constant, op = rhs, lhs, op.Flip()
	}
	if isConstTok(operand) || !isConstTok(constant) {
		return nil, exprErrorf("%s %s %s: compare one field (or pid, tid, cpu, comm) with one constant", lhs, written, rhs)
	}
	f := &Predicate{Kind: PredCmp, Operand: operand, Cmp: op}
	if strings.HasPrefix(constant, `"`) {
		s, err := strconv.Unquote(constant)
		if err != nil {
			return nil, exprErrorf("bad string %s", constant)
		}
		if operand != "comm" {
			return nil, exprErrorf("%s %s %s: only comm compares with a string", operand, op, constant)
		}
		if op != CmpEq && op != CmpNe {
			return nil, exprErrorf("comm %s %s: a comm compares with == or != only", op, constant)
		}
		if len(s) > 15 || strings.IndexByte(s, 0) >= 0 {
			return nil, exprErrorf("comm %q: a comm is at most 15 bytes with no NUL", s)
		}
		f.Str, f.IsStr = s, true
		return f, nil
	}
	if operand == "comm" {
		return nil, exprErrorf("comm %s %s: compare comm with a \"string\"", op, constant)
	}
	if rest, neg := strings.CutPrefix(constant, "-"); neg {
		u, err := strconv.ParseUint(rest, 0, 64)
		if err != nil || u > 1<<63 {
			return nil, exprErrorf("%s: want an integer from %d", constant, int64(math.MinInt64))
		}
		f.Int, f.Neg = -int64(u), u != 0
		return f, nil
	}
	u, err := strconv.ParseUint(constant, 0, 64)
	if err != nil {
		return nil, exprErrorf("want an integer, got %q", constant)
	}
	f.Int = int64(u)
	return f, nil
}

// term returns one operand or constant: an identifier (a field name may
// be an expression: arg0->len is recorded under that name), a number, a
// negative number or a string.
func (p *exprParser) term() (string, error) {
	t := p.next()
	switch {
	case t == "":
		return "", exprErrorf("missing operand")
	case t == "-":
		n := p.next()
		if n == "" || !isDigits(n[:1]) {
			return "", exprErrorf("want a number after '-'")
		}
		return "-" + n, nil
	case strings.HasPrefix(t, `"`), t[0] >= '0' && t[0] <= '9':
		return t, nil
	case isIdent(t):
		// A field recorded from an expression is named by it: take
		// the postfix steps along (arg0->len, req->hdr.size).
		name := t
		for p.peek() == "->" || p.peek() == "." || p.peek() == "[" {
			op := p.next()
			if op == "[" {
				// The index as the field's name has it: decimal.
				n, err := strconv.ParseUint(p.next(), 0, 63)
				if err != nil || p.expect("]") != nil {
					return "", exprErrorf("want [N] in %s", name)
				}
				name += "[" + strconv.FormatUint(n, 10) + "]"
				continue
			}
			m := p.next()
			if !isIdent(m) {
				return "", exprErrorf("want a member name after %s", op)
			}
			name += op + m
		}
		return name, nil
	}
	return "", exprErrorf("unexpected %q", t)
}

func isConstTok(t string) bool {
	return t != "" && (t[0] >= '0' && t[0] <= '9' || t[0] == '-' || t[0] == '"')
}

// cutPredicate splits a probe's text into the probe and its predicate: a
// predicate is the last /.../ of the text, whose opening slash is the last
// one outside a "string" before the closing one (a predicate holds no '/',
// but a comm it compares may: "kworker/0:1").
func cutPredicate(text string) (probe, pred string, ok bool, err error) {
	t := strings.TrimSpace(text)
	if !strings.HasSuffix(t, "/") {
		return text, "", false, nil
	}
	inStr := false
	for i := len(t) - 2; i >= 0; i-- {
		switch t[i] {
		case '"':
			// Escaped by an odd run of backslashes before it.
			bs := 0
			for k := i - 1; k >= 0 && t[k] == '\\'; k-- {
				bs++
			}
			if bs%2 == 0 {
				inStr = !inStr
			}
		case '/':
			if !inStr {
				if i == 0 {
					return "", "", false, fmt.Errorf("%w: a filter ends a probe: TYPE:TARGET(FIELDS)/FILTER/", ErrExpr)
				}
				return t[:i], t[i+1 : len(t)-1], true, nil
			}
		}
	}
	return "", "", false, fmt.Errorf("%w: the filter's closing '/' has no opening one", ErrExpr)
}
