package ctypes

import (
	"fmt"

	"github.com/bpftape/bpftape/bpf"
)

// AAPCS64 (the Procedure Call Standard for the Arm 64-bit Architecture),
// as GCC and Clang follow it on Linux: the rules of its section 6.8,
// "Parameter passing", that decide where the integer registers and the
// stack hold a parameter at a function's first instruction.

// a64Regs is how many x registers (x0..x7) and v registers (v0..v7) pass
// arguments.
const a64Regs = 8

// a64Class is what AAPCS64 does with an argument.
type a64Class uint8

const (
	a64Empty     a64Class = iota // an empty struct: passed in nothing
	a64Int                       // an integer or pointer of at most 8 bytes: one x register
	a64Int128                    // a 16-byte integer: an even-odd pair of x registers
	a64FP                        // a floating-point scalar: one v register
	a64HFA                       // a homogeneous floating-point aggregate (or a complex): 1 to 4 v registers
	a64Composite                 // a struct, union or array of at most 16 bytes: 1 or 2 x registers
	a64Big                       // a composite of more than 16 bytes: passed by reference
)

// a64Arg is an argument's class, its size as the stack holds it, its
// natural alignment and, for an HFA, its number of members.
type a64Arg struct {
	class a64Class
	size  int64
	align int64
	n     int
}

// classifyA64 classifies a value of type t by AAPCS64's stages B and C.
func classifyA64(t *Type) (a64Arg, error) {
	switch t.Kind {
	case Int, Bool, Enum, Pointer:
		switch {
		case t.Size > 0 && t.Size <= 8:
			return a64Arg{class: a64Int, size: 8, align: 8}, nil
		case t.Size == 16:
			return a64Arg{class: a64Int128, size: 16, align: 16}, nil
		}
	case Float:
		if base, n, ok := hfa(t); ok && t.complex {
			return a64Arg{class: a64HFA, size: t.Size, align: base, n: n}, nil
		}
		switch t.Size {
		case 2, 4, 8, 16:
			return a64Arg{class: a64FP, size: t.Size, align: t.Size}, nil
		}
	case Struct, Union, Array:
		if t.Incomplete {
			return a64Arg{}, errorf(ErrIncomplete, "%s is declared but not defined", t)
		}
		if t.Size == 0 {
			return a64Arg{class: a64Empty}, nil
		}
		align := t.Align()
		if base, n, ok := hfa(t); ok {
			return a64Arg{class: a64HFA, size: t.Size, align: max(align, base), n: n}, nil
		}
		if t.Size > 16 {
			// B.4: the caller copies it to memory and passes a pointer.
			return a64Arg{class: a64Big, size: 8, align: 8}, nil
		}
		// B.5: rounded up to a multiple of 8 bytes.
		return a64Arg{class: a64Composite, size: (t.Size + 7) / 8 * 8, align: align}, nil
	}
	return a64Arg{}, errorf(ErrNoLocation, "%s has no size the ABI places", t)
}

// hfa reports whether t is a homogeneous floating-point aggregate: a
// struct, union or array whose members are all of one floating-point type,
// 1 to 4 of them, without padding (a complex type is one of 2). base is
// that type's size, n the number of members.
func hfa(t *Type) (base int64, n int, ok bool) {
	budget := walkBudget
	base, count, ok := hfaWalk(t, 0, &budget)
	if !ok || count < 1 || count > 4 {
		return 0, 0, false
	}
	return base, int(count), true
}

// hfaWalk returns the floating-point type's size and the count of members
// of t, or !ok when t is not made of one floating-point type. base is 0
// for a type with no members (an empty struct).
func hfaWalk(t *Type, depth int, budget *int) (base, count int64, ok bool) {
	if *budget--; depth > maxNesting || *budget < 0 {
		return 0, 0, false
	}
	same := func(b int64) bool { return base == 0 || b == 0 || base == b }
	switch t.Kind {
	case Float:
		if t.complex {
			return t.Size / 2, 2, t.Size > 0
		}
		return t.Size, 1, t.Size > 0
	case Array:
		if t.Len <= 0 {
			return 0, 0, false
		}
		b, c, ok := hfaWalk(t.Elem(), depth+1, budget)
		if !ok || c == 0 {
			return 0, 0, false
		}
		base, count = b, c*t.Len
	case Struct, Union:
		for _, m := range t.Members {
			if m.BitSize != 0 {
				return 0, 0, false
			}
			b, c, ok := hfaWalk(m.Type, depth+1, budget)
			if !ok || !same(b) {
				return 0, 0, false
			}
			if b != 0 {
				base = b
			}
			if t.Kind == Union {
				count = max(count, c)
			} else {
				count += c
			}
		}
		if count == 0 {
			return 0, 0, true
		}
	default:
		return 0, 0, false
	}
	// No padding: the members fill the aggregate.
	return base, count, base > 0 && t.Size == base*count
}

// a64Reg is the name of x register n.
func a64Reg(n int) string { return fmt.Sprintf("x%d", n) }

// placeAAPCS64 is place by AAPCS64: integers, pointers and composites of
// at most 16 bytes in x0 to x7 (NGRN counts them), floating-point values
// and homogeneous floating-point aggregates in v0 to v7 (NSRN), which
// probes cannot read, and the rest on the stack from sp+0 (NSAA).
func (f *Func) placeAAPCS64() {
	ngrn, nsrn, nsaa := 0, 0, int64(0)
	arch := bpf.ARM64
	f.RetLoc, f.RetErr = Location{}, nil
	ret := f.Return
	switch r, err := classifyA64(ret); {
	case ret.Kind == Void:
		f.RetErr = errorf(ErrNotValue, "%s returns void", f.Name)
	case err != nil:
		f.RetErr = fmt.Errorf("%s returns %s: %w", f.Name, ret, err)
	case r.class == a64Empty:
		f.RetErr = errorf(ErrNoLocation, "%s returns an empty %s", f.Name, ret)
	case r.class == a64FP:
		f.RetErr = errorf(ErrSSEParam, "%s returns %s, in v0, which probes cannot read", f.Name, ret)
	case r.class == a64HFA:
		f.RetErr = errorf(ErrSSEParam, "%s returns %s, in %s, which probes cannot read", f.Name, ret, vRegs(0, r.n))
	case r.class == a64Big:
		// The caller passes the address of the memory to write it to in
		// x8, which the callee need not preserve, nor return in x0: at
		// the return the address is in no register.
		f.RetErr = errorf(ErrNoLocation, "%s returns %s (%d bytes) in memory at an address the caller passes in x8, which the callee need not keep: at the return no register holds it", f.Name, ret, ret.Size)
	case r.class == a64Int128 || r.class == a64Composite && ret.Size > 8:
		f.RetLoc = Location{Arch: arch, Reg: "x0", Reg2: "x1"}
	default:
		f.RetLoc = Location{Arch: arch, Reg: "x0"}
	}

	var lost string // a parameter before this one could not be placed
	for i := range f.Params {
		p := &f.Params[i]
		p.Loc, p.Err = Location{}, nil
		if lost != "" {
			p.Err = errorf(ErrNoLocation, "parameter %s of %s: follows %s, whose passing is unknown", p.ArgName(), f.Name, lost)
			continue
		}
		a, err := classifyA64(p.Type)
		if err != nil {
			p.Err = fmt.Errorf("parameter %s of %s: %w", p.ArgName(), f.Name, err)
			lost = p.ArgName()
			continue
		}
		onStack := func(align int64) {
			nsaa = (nsaa + align - 1) / align * align
			p.Loc = Location{Arch: arch, Stack: true, StackOff: nsaa, Indirect: a.class == a64Big}
			nsaa += a.size
		}
		switch a.class {
		case a64Empty:
			p.Err = errorf(ErrNoLocation, "parameter %s of %s is an empty %s, passed in nothing", p.ArgName(), f.Name, p.Type)
		case a64FP:
			if nsrn < a64Regs { // C.1
				p.Err = errorf(ErrSSEParam, "parameter %s of %s is %s, passed in v%d, which probes cannot read", p.ArgName(), f.Name, p.Type, nsrn)
				nsrn++
				continue
			}
			// C.4, C.5: an 8-byte slot (a 16-byte, 16-aligned one for
			// a quad).
			a.size = max(a.size, 8)
			onStack(max(8, a.align))
		case a64HFA:
			if nsrn+a.n <= a64Regs { // C.2
				p.Err = errorf(ErrSSEParam, "parameter %s of %s is %s, passed in %s, which probes cannot read", p.ArgName(), f.Name, p.Type, vRegs(nsrn, a.n))
				nsrn += a.n
				continue
			}
			// C.3, C.4: no more v registers for it or anything after.
			nsrn = a64Regs
			a.size = (a.size + 7) / 8 * 8
			onStack(min(max(8, a.align), 16))
		default: // a64Int, a64Int128, a64Composite, a64Big
			n := int(a.size / 8) // x registers it takes
			if a.align >= 16 {   // C.8
				ngrn += ngrn % 2
			}
			if ngrn+n <= a64Regs { // C.9 to C.11
				p.Loc = Location{Arch: arch, Reg: a64Reg(ngrn), Indirect: a.class == a64Big}
				if n == 2 {
					p.Loc.Reg2 = a64Reg(ngrn + 1)
				}
				ngrn += n
				continue
			}
			// C.12 to C.16: on the stack, and so is every later integer.
			ngrn = a64Regs
			onStack(max(8, a.align))
		}
	}
}

// vRegs names n consecutive v registers from v[first]: "v0", "v1 to v4".
func vRegs(first, n int) string {
	if n == 1 {
		return fmt.Sprintf("v%d", first)
	}
	return fmt.Sprintf("v%d to v%d", first, first+n-1)
}
