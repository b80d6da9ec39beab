package probespec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A filter ends a probe, between slashes as in bpftrace:
//
//	big=u:./vnet:rx(size)/size >= 8192/
//	t:sched:sched_switch(prev_pid, next_pid)/comm == "qemu" && !(next_pid == 0)/
//
//	FILTER := OR
//	OR     := AND { '||' AND }
//	AND    := NOT { '&&' NOT }
//	NOT    := '!' NOT | '(' OR ')' | CMP
//	CMP    := OPERAND OP CONST | CONST OP OPERAND
//	OP     := == | != | < | <= | > | >=
//
// OPERAND is a recorded field (by its name in the capture), pid, tid, cpu
// or comm; CONST an integer (decimal, 0x hex, negative) or, for comm, a
// "string" compared with == or !=. The recorder compiles it into the
// probe's filter, which the BPF program runs before it reserves ring space.

// FilterOp is a filter node's kind.
type FilterOp uint8

// Filter node kinds.
const (
	FilterAnd FilterOp = iota + 1 // L && R
	FilterOr                      // L || R
	FilterNot                     // !L
	FilterCmp                     // Operand Cmp Int (or Str)
)

// Filter is a parsed filter: a tree of comparisons joined by &&, || and !.
type Filter struct {
	Op   FilterOp
	L, R *Filter
	// A comparison (FilterCmp): Operand Cmp the constant, with the
	// operand always on the left (5 < x is read as x > 5).
	Operand string // a field name, "pid", "tid", "cpu" or "comm"; args.NAME is the field NAME
	Cmp     string // ==, !=, <, <=, >, >=
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

// MaxFilterCmps bounds a filter's comparisons: the BPF program runs at
// most 16 operations, one per comparison, &&, || and !.
const MaxFilterCmps = 16

// Builtin filter operands, which every probe has.
var filterBuiltins = map[string]bool{"pid": true, "tid": true, "cpu": true, "comm": true}

// String writes the filter back, fully parenthesized.
func (f *Filter) String() string {
	switch f.Op {
	case FilterAnd:
		return "(" + f.L.String() + " && " + f.R.String() + ")"
	case FilterOr:
		return "(" + f.L.String() + " || " + f.R.String() + ")"
	case FilterNot:
		return "!" + f.L.String()
	}
	if f.IsStr {
		return f.Operand + " " + f.Cmp + " " + strconv.Quote(f.Str)
	}
	if !f.Neg {
		return f.Operand + " " + f.Cmp + " " + strconv.FormatUint(uint64(f.Int), 10)
	}
	return f.Operand + " " + f.Cmp + " " + strconv.FormatInt(f.Int, 10)
}

// Operands returns the operands the filter compares, each once, in order.
func (f *Filter) Operands() []string {
	var out []string
	seen := map[string]bool{}
	var walk func(*Filter)
	walk = func(f *Filter) {
		if f == nil {
			return
		}
		if f.Op == FilterCmp && !seen[f.Operand] {
			seen[f.Operand] = true
			out = append(out, f.Operand)
		}
		walk(f.L)
		walk(f.R)
	}
	walk(f)
	return out
}

// Size returns the number of operations the filter compiles into.
func (f *Filter) Size() int {
	if f == nil {
		return 0
	}
	return 1 + f.L.Size() + f.R.Size()
}

// ParseFilter parses a filter's text, without the slashes.
func ParseFilter(text string) (*Filter, error) {
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
	if err == nil && f.Size() > MaxFilterCmps {
		err = exprErrorf("%d operations: a filter compiles into at most %d", f.Size(), MaxFilterCmps)
	}
	if err != nil {
		return nil, fmt.Errorf("filter %q: %w", text, err)
	}
	return f, nil
}

func (p *exprParser) or(depth int) (*Filter, error) {
	l, err := p.and(depth)
	for err == nil && p.peek() == "||" {
		p.next()
		var r *Filter
		if r, err = p.and(depth); err == nil {
			l = &Filter{Op: FilterOr, L: l, R: r}
		}
	}
	return l, err
}

func (p *exprParser) and(depth int) (*Filter, error) {
	l, err := p.not(depth)
	for err == nil && p.peek() == "&&" {
		p.next()
		var r *Filter
		if r, err = p.not(depth); err == nil {
			l = &Filter{Op: FilterAnd, L: l, R: r}
		}
	}
	return l, err
}

func (p *exprParser) not(depth int) (*Filter, error) {
	if depth > MaxFilterCmps {
		return nil, exprErrorf("nested too deeply")
	}
	switch p.peek() {
	case "!":
		p.next()
		f, err := p.not(depth + 1)
		if err != nil {
			return nil, err
		}
		return &Filter{Op: FilterNot, L: f}, nil
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

// flipped is the comparison with its sides swapped: 5 < x is x > 5.
var flipped = map[string]string{"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

func (p *exprParser) cmp() (*Filter, error) {
	lhs, err := p.term()
	if err != nil {
		return nil, err
	}
	op := p.next()
	if _, ok := flipped[op]; !ok {
		if op == "" {
			return nil, exprErrorf("%s: want a comparison (==, !=, <, <=, >, >=) and a constant", lhs)
		}
		return nil, exprErrorf("want a comparison (==, !=, <, <=, >, >=), got %q", op)
	}
	rhs, err := p.term()
	if err != nil {
		return nil, err
	}
	operand, constant := lhs, rhs
	if isConstTok(lhs) {
		operand, constant, op = rhs, lhs, flipped[op]
	}
	if isConstTok(operand) || !isConstTok(constant) {
		return nil, exprErrorf("%s %s %s: compare one field (or pid, tid, cpu, comm) with one constant", lhs, op, rhs)
	}
	f := &Filter{Op: FilterCmp, Operand: operand, Cmp: op}
	if strings.HasPrefix(constant, `"`) {
		s, err := strconv.Unquote(constant)
		if err != nil {
			return nil, exprErrorf("bad string %s", constant)
		}
		if operand != "comm" {
			return nil, exprErrorf("%s %s %s: only comm compares with a string", operand, op, constant)
		}
		if op != "==" && op != "!=" {
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

// cutFilter splits a probe's text into the probe and its filter: a filter
// is the last /.../ of the text, whose opening slash is the last one
// outside a "string" before the closing one (a filter holds no '/', but a
// comm it compares may: "kworker/0:1").
func cutFilter(text string) (probe, filter string, ok bool, err error) {
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
