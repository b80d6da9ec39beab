package resolve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/probespec"
)

// ErrFilter is the error of a predicate that cannot be compiled for its
// probe, or of a --pid or --comm value: its text says "bad filter", as
// users call them.
var ErrFilter = errors.New("bad filter")

// MaxProcessValues bounds the --pid and --comm lists: a list of n values
// compiles into n comparisons and n-1 ||, and a probe's predicate holds
// bpf.MaxPred operations. The two lists and the probe's own predicate
// share them.
const MaxProcessValues = (bpf.MaxPred + 1) / 2

// ProcessPredicate is the predicate that --pid and --comm (the process
// filter, to users) put on every probe: (pid == A || pid == B ...) &&
// (comm == "x" || ...), nil for none. Each list is one flat node
// (probespec.AnyOf).
func ProcessPredicate(pids []int, comms []string) (*probespec.Predicate, error) {
	for _, l := range []struct {
		flag string
		n    int
	}{{"--pid", len(pids)}, {"--comm", len(comms)}} {
		if l.n > MaxProcessValues {
			return nil, fmt.Errorf("%w: %s: %d values, at most %d (a probe's filter holds %d operations)", ErrFilter, l.flag, l.n, MaxProcessValues, bpf.MaxPred)
		}
	}
	var byPID, byComm []*probespec.Predicate
	for _, p := range pids {
		if p <= 0 {
			return nil, fmt.Errorf("%w: --pid %d: want a process id above 0", ErrFilter, p)
		}
		byPID = append(byPID, &probespec.Predicate{Kind: probespec.PredCmp, Operand: "pid", Cmp: probespec.CmpEq, Int: int64(p), Builtin: true})
	}
	for _, c := range comms {
		if c == "" || len(c) >= bpf.CommLen || strings.IndexByte(c, 0) >= 0 {
			return nil, fmt.Errorf("%w: --comm %q: a comm is 1 to %d bytes (the kernel cuts longer names)", ErrFilter, c, bpf.CommLen-1)
		}
		byComm = append(byComm, &probespec.Predicate{Kind: probespec.PredCmp, Operand: "comm", Cmp: probespec.CmpEq, Str: c, IsStr: true, Builtin: true})
	}
	p, err := probespec.AnyOf(byPID...)
	if err != nil {
		return nil, fmt.Errorf("%w: --pid: %v", ErrFilter, err)
	}
	c, err := probespec.AnyOf(byComm...)
	if err != nil {
		return nil, fmt.Errorf("%w: --comm: %v", ErrFilter, err)
	}
	return both(p, c), nil
}

// both joins a probe's own predicate and the process one with &&.
func both(a, b *probespec.Predicate) *probespec.Predicate {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return &probespec.Predicate{Kind: probespec.PredAnd, L: a, R: b}
}

// bpfCmp returns the BPF operation (PredOp.Op) of a comparison operator,
// false for none.
func bpfCmp(c probespec.CmpOp) (uint8, bool) {
	switch c {
	case probespec.CmpEq:
		return bpf.PredEq, true
	case probespec.CmpNe:
		return bpf.PredNe, true
	case probespec.CmpLt:
		return bpf.PredLt, true
	case probespec.CmpLe:
		return bpf.PredLe, true
	case probespec.CmpGt:
		return bpf.PredGt, true
	case probespec.CmpGe:
		return bpf.PredGe, true
	}
	return 0, false
}

// compilePredicate turns a predicate into the postfix operations of a
// probe's spec, whose fields (nargs of them, in the capture's order) it
// compares. It sets the spec's Pred, Npred and SpecFilterComm.
func compilePredicate(f *probespec.Predicate, fields []format.Field, nargs int, params []string, spec *bpf.ProbeSpec) error {
	if f == nil {
		return nil
	}
	var ops []bpf.PredOp
	var emit func(f *probespec.Predicate) error
	emit = func(f *probespec.Predicate) error {
		switch f.Kind {
		case probespec.PredAnd, probespec.PredOr:
			if err := emit(f.L); err != nil {
				return err
			}
			if err := emit(f.R); err != nil {
				return err
			}
			op := bpf.PredAnd
			if f.Kind == probespec.PredOr {
				op = bpf.PredOr
			}
			ops = append(ops, bpf.PredOp{Op: op})
			return nil
		case probespec.PredNot:
			if err := emit(f.L); err != nil {
				return err
			}
			ops = append(ops, bpf.PredOp{Op: bpf.PredNot})
			return nil
		case probespec.PredAny:
			// As the chain ((a || b) || c) compiles: two values on
			// the stack at most.
			for i, alt := range f.Any {
				if err := emit(alt); err != nil {
					return err
				}
				if i > 0 {
					ops = append(ops, bpf.PredOp{Op: bpf.PredOr})
				}
			}
			return nil
		}
		op, err := compileCmp(f, fields, nargs, params)
		if err != nil {
			return err
		}
		if op.Operand == bpf.OperandComm {
			spec.Flags |= bpf.SpecFilterComm
		}
		ops = append(ops, op)
		return nil
	}
	if err := emit(f); err != nil {
		return err
	}
	if len(ops) > bpf.MaxPred {
		return fmt.Errorf("%w: %s compiles into %d operations; a probe's filter holds %d (with --pid and --comm)", ErrFilter, f, len(ops), bpf.MaxPred)
	}
	spec.Npred = uint8(len(ops))
	copy(spec.Pred[:], ops)
	return nil
}

// compileCmp compiles one comparison. pid, tid, cpu and comm are the
// event's; a probe that records a field of one of those names must name
// the field args.NAME, and the builtin alone is refused as ambiguous
// (--pid and --comm, Builtin, always mean the event's).
func compileCmp(f *probespec.Predicate, fields []format.Field, nargs int, params []string) (bpf.PredOp, error) {
	var op bpf.PredOp
	var ok bool
	if op.Op, ok = bpfCmp(f.Cmp); !ok {
		return op, fmt.Errorf("%w: %s: unknown comparison", ErrFilter, f)
	}
	field := func(name string) int {
		for k := range nargs {
			if fields[k].Name == name {
				return k
			}
		}
		return -1
	}
	name, isArg := strings.CutPrefix(f.Operand, "args.")
	if builtinOperands[name] && !isArg {
		if !f.Builtin && field(name) >= 0 {
			return op, fmt.Errorf("%w: %s: the probe records a field %s too: write args.%s for the field (%s alone would be the event's)",
				ErrFilter, f, name, name, name)
		}
		if f.IsStr != (name == "comm") {
			if f.IsStr {
				return op, fmt.Errorf("%w: %s: only comm compares with a string", ErrFilter, f)
			}
			return op, fmt.Errorf("%w: %s: compare comm with a \"string\"", ErrFilter, f)
		}
		switch name {
		case "pid":
			op.Operand = bpf.OperandPID
		case "tid":
			op.Operand = bpf.OperandTID
		case "cpu":
			op.Operand = bpf.OperandCPU
		case "comm":
			var b [bpf.CommLen]byte
			copy(b[:], f.Str)
			op.Operand, op.Len = bpf.OperandComm, uint8(len(f.Str)+1)
			op.Val, op.Val2 = binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])
			return op, nil
		}
		if f.Neg || uint64(f.Int) > math.MaxUint32 {
			return op, fmt.Errorf("%w: %s: %s holds 0..%d", ErrFilter, f, name, uint64(math.MaxUint32))
		}
		op.Val = uint64(f.Int)
		return op, nil
	}
	i := field(name)
	if k, ok := probespec.ArgIndex(name); i < 0 && ok && k < len(params) {
		i = field(params[k]) // argN: the N-th parameter, as the analyses take it
	}
	if i < 0 {
		var names []string
		for k := range nargs {
			names = append(names, fields[k].Name)
		}
		switch len(params) {
		case 0:
		case 1:
			names = append(names, "arg0 for it")
		default:
			names = append(names, fmt.Sprintf("arg0..arg%d for them", len(params)-1))
		}
		return op, fmt.Errorf("%w: %s: the probe records no field %q; a filter compares recorded fields (%s), pid, tid, cpu or comm",
			ErrFilter, f, name, strings.Join(names, ", "))
	}
	t := fields[i].Type
	if !t.IsInt() || f.IsStr {
		return op, fmt.Errorf("%w: %s: field %s is a %s; a filter compares integer fields with integers, and comm with a string",
			ErrFilter, f, name, probespec.TypeName(t))
	}
	op.Operand, op.Field, op.Val = bpf.OperandField, uint8(i), uint64(f.Int)
	// The program compares the recorded value, extended to 64 bits.
	lo, hi := intRange(t)
	switch {
	case t.Signed():
		op.IsSigned = 1
		if !f.Neg && f.Int < 0 || f.Int < lo || f.Int > hi {
			return op, fmt.Errorf("%w: %s: %s holds %d..%d (%s)", ErrFilter, f, name, lo, hi, probespec.TypeName(t))
		}
	case f.Neg:
		return op, fmt.Errorf("%w: %s: field %s is unsigned (%s); compare it with a constant of 0 or more", ErrFilter, f, name, probespec.TypeName(t))
	case t.Size() < 8 && uint64(f.Int) > uint64(hi):
		return op, fmt.Errorf("%w: %s: %s holds 0..%d (%s)", ErrFilter, f, name, hi, probespec.TypeName(t))
	}
	return op, nil
}

// builtinOperands are what every event has: a predicate compares them
// without recording them.
var builtinOperands = map[string]bool{"pid": true, "tid": true, "cpu": true, "comm": true}

// intRange is the range of an integer type (of a u64: 0..MaxInt64, the
// upper half being checked apart).
func intRange(t format.Type) (lo, hi int64) {
	bits := uint(t.Size() * 8)
	if bits == 64 {
		if t.Signed() {
			return math.MinInt64, math.MaxInt64
		}
		return 0, math.MaxInt64
	}
	if t.Signed() {
		return -1 << (bits - 1), 1<<(bits-1) - 1
	}
	return 0, 1<<bits - 1
}

// predicateText is how the capture names a probe's predicate (its
// format.Probe.Filter).
func predicateText(f *probespec.Predicate) string {
	if f == nil {
		return ""
	}
	s := f.String()
	// Drop the outermost parentheses String puts around && and ||.
	if strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")") && balanced(s[1:len(s)-1]) {
		return s[1 : len(s)-1]
	}
	return s
}

// balanced reports whether the parentheses of s pair up outside strings.
func balanced(s string) bool {
	depth, inStr := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' && (i == 0 || s[i-1] != '\\'):
			inStr = !inStr
		case inStr:
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}
