package probespec

import (
	"fmt"
	"math"
	"slices"
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
	FilterAny                     // Any[0] || Any[1] || ...: a list, flat (AnyOf)
)

// Filter is a parsed filter: a tree of comparisons joined by &&, || and !.
type Filter struct {
	Op   FilterOp
	L, R *Filter
	// Any holds the alternatives of a list (FilterAny), two or more, in
	// order: a list of any length is one node, not a chain of ||.
	Any []*Filter
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

// MaxAny bounds the alternatives of a list (AnyOf), such as the values
// of a --pid or --comm list. The recorder compiles fewer: a probe's BPF
// filter holds a few operations, one per comparison and one per ||.
const MaxAny = 4096

// AnyOf returns the filter that passes when any of fs passes, as
// fs[0] || fs[1] || ...: nil for none, fs[0] alone for one, else one flat
// FilterAny node. It refuses more than MaxAny alternatives, with an error
// that names the count and the limit ("100000 values, at most 4096") for
// the caller to prefix with what the list is.
func AnyOf(fs ...*Filter) (*Filter, error) {
	switch {
	case len(fs) > MaxAny:
		return nil, fmt.Errorf("%d values, at most %d", len(fs), MaxAny)
	case len(fs) == 0:
		return nil, nil
	case len(fs) == 1:
		return fs[0], nil
	}
	return &Filter{Op: FilterAny, Any: slices.Clone(fs)}, nil
}

// String writes the filter back, fully parenthesized. A list (FilterAny)
// writes as the chain of || it stands for, grouped from the left as the
// parser groups it: ((a || b) || c). String keeps a stack of its own and
// writes in time linear in the text, however deep or long the filter.
func (f *Filter) String() string {
	var b strings.Builder
	f.writeTo(&b)
	return b.String()
}

func (f *Filter) writeTo(b *strings.Builder) {
	// todo holds what is left to write, the next on top: a node, or the
	// text lit when the node is nil.
	type item struct {
		f   *Filter
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
		switch n.Op {
		case FilterAnd, FilterOr:
			op := " && "
			if n.Op == FilterOr {
				op = " || "
			}
			b.WriteByte('(')
			todo = append(todo, item{lit: ")"}, item{f: n.R}, item{lit: op}, item{f: n.L})
		case FilterNot:
			b.WriteByte('!')
			todo = append(todo, item{f: n.L})
		case FilterAny:
			// Written in place: the stack grows with how deeply lists
			// nest in lists, not with their length.
			for range len(n.Any) - 1 {
				b.WriteByte('(')
			}
			for i, a := range n.Any {
				if i > 0 {
					b.WriteString(" || ")
				}
				if a.Op == FilterCmp {
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
func (f *Filter) writeCmp(b *strings.Builder) {
	var buf [32]byte
	b.WriteString(f.Operand)
	b.WriteByte(' ')
	b.WriteString(f.Cmp)
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

// walk calls fn on every node of the filter, parents before children and
// left before right, with a stack of its own.
func (f *Filter) walk(fn func(*Filter)) {
	todo := []*Filter{f}
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

// Operands returns the operands the filter compares, each once, in order.
func (f *Filter) Operands() []string {
	var out []string
	seen := map[string]bool{}
	f.walk(func(n *Filter) {
		if n.Op == FilterCmp && !seen[n.Operand] {
			seen[n.Operand] = true
			out = append(out, n.Operand)
		}
	})
	return out
}

// Size returns the number of operations the filter compiles into: one per
// comparison, &&, || and !, a list of n alternatives holding n-1 ||.
func (f *Filter) Size() int {
	size := 0
	f.walk(func(n *Filter) {
		size++
		if n.Op == FilterAny {
			size += len(n.Any) - 2 // n-1 ||, the node counted once
		}
	})
	return size
}

// MaxFilterText bounds the length of a filter's text in bytes, far above
// what MaxFilterCmps operations take; the parser also stops at 128 tokens.
const MaxFilterText = 4096

// ParseFilter parses a filter's text, without the slashes. Its parsing
// is bounded: at most MaxFilterText bytes, 128 tokens and MaxFilterCmps
// levels of nesting.
func ParseFilter(text string) (*Filter, error) {
	if len(text) > MaxFilterText {
		return nil, fmt.Errorf("filter %s: %w: %d bytes, at most %d", quoteShort(text), ErrExpr, len(text), MaxFilterText)
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
