package ctypes

import (
	"fmt"
	"strings"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/record/suggest"
)

// intRegs are the x86-64 System V integer argument registers, in order.
var intRegs = [...]string{"di", "si", "dx", "cx", "r8", "r9"}

// numSSERegs is how many xmm registers pass arguments.
const numSSERegs = 8

// Location is where a value is at a function's entry (a parameter) or
// return (its return value), by the calling convention of Arch. The zero
// Location is nowhere.
type Location struct {
	// Arch is the architecture whose registers Reg and Reg2 name and
	// whose stack pointer StackOff counts from (bpf.AMD64, bpf.ARM64).
	Arch *bpf.Arch
	// Reg is the register holding the value, or its first eight bytes:
	// on x86-64 "di", "si", "dx", "cx", "r8", "r9" ("ax" for a return
	// value), on arm64 "x0" to "x7" ("x0" for a return value); "" when
	// the value is on the stack.
	Reg string
	// Reg2 holds bytes 8 to 15 of a 9- to 16-byte value passed or
	// returned in two registers ("" otherwise).
	Reg2 string
	// Stack: the value is on the stack, at sp+StackOff at the function's
	// first instruction. On x86-64 the call pushed the return address at
	// rsp+0, so the first stack argument is at rsp+8; on arm64 the return
	// address is in x30 and the first stack argument is at sp+0.
	Stack    bool
	StackOff int64
	// Indirect: the register (or, with Stack, the stack slot) holds the
	// address of the value, not the value: a struct returned in memory on
	// x86-64 (rax holds the address the caller passed in rdi), a struct
	// of more than 16 bytes passed by reference on arm64.
	Indirect bool
}

// OnStack reports whether the value, or with Indirect its address, is on
// the stack at entry.
func (l Location) OnStack() bool { return l.Stack }

// regName spells a register of l's architecture as in assembly: "rdi",
// "r8", "x0".
func (l Location) regName(r string) string {
	if l.Arch != nil {
		if off, ok := l.Arch.Reg(r); ok {
			if n := l.Arch.RegName(off); n != "" {
				return n
			}
		}
	}
	return r
}

func (l Location) String() string {
	switch {
	case l.Arch == nil || !l.Stack && l.Reg == "":
		return "nowhere"
	case l.Stack:
		s := fmt.Sprintf("%s+%d", l.Arch.RegName(l.Arch.SP), l.StackOff)
		if l.Indirect {
			return "*(" + s + ")"
		}
		return s
	case l.Indirect:
		return "*" + l.regName(l.Reg)
	case l.Reg2 != "":
		return l.regName(l.Reg) + ":" + l.regName(l.Reg2)
	}
	return l.regName(l.Reg)
}

// PtRegs maps the base of an Access (the Location ParamAccess and
// RetAccess return) to the struct pt_regs of l's architecture: V is the
// register at byte offset reg of pt_regs (as bpf.Arch.Reg gives it), plus
// off; for a location on the stack reg is the architecture's stack pointer
// and off StackOff, V being the address sp+StackOff. ok is false for a
// location that is not such a base (nowhere, two registers, or indirect).
func (l Location) PtRegs() (reg uint8, off int64, ok bool) {
	switch {
	case l.Arch == nil || l.Indirect:
		return 0, 0, false
	case l.Stack:
		return l.Arch.SP, l.StackOff, true
	case l.Reg == "" || l.Reg2 != "":
		return 0, 0, false
	}
	reg, ok = l.Arch.Reg(l.Reg)
	return reg, 0, ok
}

// Param is one parameter of a function.
type Param struct {
	Name  string // "" when the debug info names none
	Index int    // position in the declaration, from 0
	Type  *Type
	// Loc is where the parameter is at the function's first instruction,
	// valid when Err is nil.
	Loc Location
	// Err says why Loc cannot be read: ErrSSEParam for a float or double
	// (in an xmm or v register), ErrNoLocation for an empty struct or one
	// after a parameter of unknown type.
	Err error
}

// ArgName is the parameter's name, or argN when it has none.
func (p *Param) ArgName() string {
	if p.Name == "" {
		return fmt.Sprintf("arg%d", p.Index)
	}
	return p.Name
}

// Func is a function's signature and where its parameters and return
// value are, by the calling convention of Arch: the x86-64 System V ABI
// or AAPCS64 (see the package documentation).
type Func struct {
	Name string
	// Arch is the architecture of the code (of the binary, or the host's
	// for kernel BTF), whose calling convention places the parameters;
	// nil when bpftape knows none for it, and every parameter has an
	// error then.
	Arch     *bpf.Arch
	Params   []Param
	Variadic bool  // a ... follows Params, which are the named ones
	Return   *Type // Kind Void for a function returning nothing
	// RetLoc is where the return value is at the function's return, valid
	// when RetErr is nil.
	RetLoc Location
	RetErr error
	// Source is the file whose debug info described the function (a
	// separate debug file for a stripped binary), "" for kernel BTF.
	Source string
}

// Signature is the function's C declaration, for messages:
// "long rx(struct req *req, size_t size)".
func (f *Func) Signature() string {
	parts := make([]string, 0, len(f.Params)+1)
	for _, p := range f.Params {
		ts := p.Type.String()
		sep := " "
		if strings.HasSuffix(ts, "*") {
			sep = ""
		}
		parts = append(parts, ts+sep+p.ArgName())
	}
	if f.Variadic {
		parts = append(parts, "...")
	}
	if len(parts) == 0 {
		parts = append(parts, "void")
	}
	return fmt.Sprintf("%s %s(%s)", f.Return, f.Name, strings.Join(parts, ", "))
}

// Param returns the parameter called name (or argN, the Nth), with its
// location's error if it has one.
func (f *Func) Param(name string) (*Param, error) {
	var names []string
	for i := range f.Params {
		p := &f.Params[i]
		if p.Name == name || p.Name == "" && p.ArgName() == name {
			if p.Err != nil {
				return p, p.Err
			}
			return p, nil
		}
		names = append(names, p.ArgName())
	}
	return nil, errorf(ErrNoParam, "%s has no parameter %s%s (it is %s)", f.Name, name,
		suggest.Hint(suggest.Closest(name, names, 3)), f.Signature())
}

// ParamAccess resolves a path from parameter name at the function's entry:
// base says what V is (a register's value, or the address sp+StackOff of
// a parameter on the stack: Location.PtRegs), and the Access how to go
// from V to the value (a parameter passed by reference starts with a load
// of its address). A struct passed in registers allows paths to its
// members that fill whole registers (s.ptr, s.len of struct { char *ptr;
// long len; }), as a register cannot be read at an offset.
func (f *Func) ParamAccess(name string, path []Step) (base Location, a Access, err error) {
	p, err := f.Param(name)
	if err != nil {
		return Location{}, Access{}, err
	}
	return valueAccess(p.ArgName(), p.Type, p.Loc, path)
}

// RetAccess resolves a path from the return value at the function's
// return (a uretprobe's retval), as ParamAccess.
func (f *Func) RetAccess(path []Step) (base Location, a Access, err error) {
	if f.RetErr != nil {
		return Location{}, Access{}, f.RetErr
	}
	return valueAccess("retval", f.Return, f.RetLoc, path)
}

// valueAccess resolves path from a value of type t at loc; see
// ParamAccess.
func valueAccess(name string, t *Type, loc Location, path []Step) (Location, Access, error) {
	switch {
	case loc.Stack && loc.Indirect:
		// The stack slot at V = sp+StackOff holds the value's address:
		// **(T **)V.
		base := Location{Arch: loc.Arch, Stack: true, StackOff: loc.StackOff}
		a, err := resolveFrom(name, PointerTo(PointerTo(t)), append([]Step{Deref(), Deref()}, path...), skipDerefs(name, 2))
		return base, a, err
	case loc.Stack || loc.Indirect:
		// In memory at V = sp+StackOff or V = the register: *(T *)V.
		base := Location{Arch: loc.Arch, Reg: loc.Reg, Stack: loc.Stack, StackOff: loc.StackOff}
		a, err := resolveFrom(name, PointerTo(t), append([]Step{Deref()}, path...), skipDerefs(name, 1))
		return base, a, err
	}
	if t.Kind != Struct && t.Kind != Union {
		a, err := ResolveNamed(name, t, path)
		return Location{Arch: loc.Arch, Reg: loc.Reg}, a, err
	}
	// A struct or union in one or two registers: walk its members to
	// one that fills a register from its first byte.
	off, cur, i := int64(0), t, 0
	for ; i < len(path) && (cur.Kind == Struct || cur.Kind == Union) && path[i].Kind == StepDot; i++ {
		m, ok := cur.findMember(path[i].Name)
		if !ok || m.m.BitSize != 0 {
			break // Resolve's error below names the member
		}
		off, cur = off+m.m.Offset, m.m.Type
	}
	where := FormatPath(name, path[:i])
	switch {
	case i < len(path) && path[i].Kind == StepDot && (cur.Kind == Struct || cur.Kind == Union):
		_, err := resolveFrom(name, PointerTo(t), append([]Step{Deref()}, path...), skipDerefs(name, 1))
		return Location{}, Access{}, err
	case cur.Kind == Struct || cur.Kind == Union:
		if i == 0 {
			return Location{}, Access{}, errorf(ErrAggregate, "%s is %s, passed in registers: name one of its members (%s)", name, t, listNames(t.MemberNames(), 8))
		}
		return Location{}, Access{}, errorf(ErrAggregate, "%s is %s: name one of its members (%s)", where, cur, listNames(cur.MemberNames(), 8))
	case off%8 != 0 || !cur.IsInteger() && cur.Kind != Array && cur.Kind != Float:
		return Location{}, Access{}, errorf(ErrRegStruct, "%s: %s is passed in registers, and its member at byte %d (%s) does not start a register", where, t, off, cur)
	case cur.Kind == Array:
		return Location{}, Access{}, errorf(ErrRegStruct, "%s: %s is passed in registers, so its array member has no address", where, t)
	}
	reg := loc.Reg
	if off >= 8 {
		reg = loc.Reg2
	}
	a, err := resolveFrom(name, cur, path[i:], func(p []Step) string { return FormatPath(where, p) })
	return Location{Arch: loc.Arch, Reg: reg}, a, err
}

// skipDerefs spells a path that starts with the n Derefs valueAccess adds
// without them: the user wrote b.c of a struct on the stack, not (*b).c.
func skipDerefs(name string, n int) func([]Step) string {
	return func(p []Step) string {
		if len(p) <= n {
			return name
		}
		return FormatPath(name, p[n:])
	}
}

// resolveFrom is ResolveNamed with errors spelling the path by format.
func resolveFrom(name string, base *Type, path []Step, format func([]Step) string) (Access, error) {
	c := cursor{t: base, name: name}
	for i, st := range path {
		c.where, c.prev = format(path[:i+1]), format(path[:i])
		if err := c.step(st); err != nil {
			return Access{}, err
		}
	}
	if len(path) == 0 {
		c.where = format(nil)
	}
	return c.leaf()
}

// class is an eightbyte's class in the ABI's classification (3.2.3).
type class uint8

const (
	classNone class = iota
	classInteger
	classSSE
	classMemory
)

func merge(a, b class) class {
	switch {
	case a == b:
		return a
	case a == classNone:
		return b
	case b == classNone:
		return a
	case a == classMemory || b == classMemory:
		return classMemory
	case a == classInteger || b == classInteger:
		return classInteger
	}
	return classSSE
}

// classify returns the class of each eightbyte of a value of type t, or
// [classMemory] for a value passed in memory; nil for an empty struct.
func classify(t *Type) ([]class, error) {
	switch t.Kind {
	case Int, Bool, Enum, Pointer:
		switch {
		case t.Size <= 8 && t.Size > 0:
			return []class{classInteger}, nil
		case t.Size == 16:
			return []class{classInteger, classInteger}, nil
		}
	case Float:
		switch {
		case t.Size == 16 && !t.complex, t.Size > 16: // long double: X87, in memory
			return []class{classMemory}, nil
		case t.Size == 16:
			return []class{classSSE, classSSE}, nil
		case t.Size > 0:
			return []class{classSSE}, nil
		}
	case Struct, Union, Array:
		if t.Incomplete {
			return nil, errorf(ErrIncomplete, "%s is declared but not defined", t)
		}
		if t.Size > 16 {
			return []class{classMemory}, nil
		}
		if t.Size == 0 {
			return nil, nil
		}
		cls := make([]class, (t.Size+7)/8)
		budget := walkBudget
		if err := classifyInto(cls, t, 0, 0, &budget); err != nil {
			return nil, err
		}
		for _, c := range cls {
			if c == classMemory {
				return []class{classMemory}, nil
			}
		}
		return cls, nil
	}
	return nil, errorf(ErrNoLocation, "%s has no size the ABI places", t)
}

// classifyInto merges the classes of the scalars of t, at byte off of the
// outer aggregate, into cls.
func classifyInto(cls []class, t *Type, off int64, depth int, budget *int) error {
	if *budget--; depth > maxNesting || *budget < 0 {
		return errorf(ErrBadDWARF, "%s nests too deep", t)
	}
	switch t.Kind {
	case Struct, Union:
		for _, m := range t.Members {
			if m.BitSize != 0 {
				bit := (off+m.Offset)*8 + m.BitOffset
				if i := bit / 64; i >= 0 && i < int64(len(cls)) {
					cls[i] = merge(cls[i], classInteger)
				}
				continue
			}
			if err := classifyInto(cls, m.Type, off+m.Offset, depth+1, budget); err != nil {
				return err
			}
		}
		return nil
	case Array:
		e := t.Elem()
		if e.Size <= 0 || t.Len <= 0 {
			return nil
		}
		end := int64(len(cls)) * 8 // an array longer than its struct is malformed
		for i := int64(0); i < t.Len && off+i*e.Size < end; i++ {
			if err := classifyInto(cls, e, off+i*e.Size, depth+1, budget); err != nil {
				return err
			}
		}
		return nil
	}
	sub, err := classify(t)
	if err != nil {
		return err
	}
	if off%t.Align() != 0 { // an unaligned field: the whole in memory
		sub = []class{classMemory}
	}
	for i, c := range sub {
		if j := off/8 + int64(i); j >= 0 && j < int64(len(cls)) {
			cls[j] = merge(cls[j], c)
		}
	}
	return nil
}

// place sets where each parameter is at entry and where the return value
// is at return, by the calling convention of f.Arch.
func (f *Func) place() {
	switch f.Arch {
	case bpf.AMD64:
		f.placeSysV()
	case bpf.ARM64:
		f.placeAAPCS64()
	default:
		err := errorf(ErrNoLocation, "%s: bpftape knows the calling conventions of x86-64 and arm64 only", f.Name)
		for i := range f.Params {
			f.Params[i].Err = err
		}
		f.RetErr = err
	}
}

// placeSysV is place by the x86-64 System V ABI (3.2.3).
func (f *Func) placeSysV() {
	gpr, sse, stack := 0, 0, int64(0) // stack: bytes of the argument area used
	ret := f.Return
	switch cls, err := classify(ret); {
	case ret.Kind == Void:
		f.RetErr = errorf(ErrNotValue, "%s returns void", f.Name)
	case err != nil:
		f.RetErr = fmt.Errorf("%s returns %s: %w", f.Name, ret, err)
	case len(cls) == 0:
		f.RetErr = errorf(ErrNoLocation, "%s returns an empty %s", f.Name, ret)
	case cls[0] == classMemory:
		// The caller passes where to write it in rdi; rax holds that
		// address at return.
		gpr = 1
		f.RetLoc = Location{Arch: bpf.AMD64, Reg: "ax", Indirect: true}
	case cls[0] == classSSE || len(cls) == 2 && cls[1] == classSSE:
		f.RetErr = errorf(ErrSSEParam, "%s returns %s, in xmm0, which probes cannot read", f.Name, ret)
	case len(cls) == 2:
		f.RetLoc = Location{Arch: bpf.AMD64, Reg: "ax", Reg2: "dx"}
	default:
		f.RetLoc = Location{Arch: bpf.AMD64, Reg: "ax"}
	}
	var lost string // a parameter before this one could not be placed
	for i := range f.Params {
		p := &f.Params[i]
		if lost != "" {
			p.Err = errorf(ErrNoLocation, "parameter %s of %s: follows %s, whose passing is unknown", p.ArgName(), f.Name, lost)
			continue
		}
		cls, err := classify(p.Type)
		if err != nil {
			p.Err = fmt.Errorf("parameter %s of %s: %w", p.ArgName(), f.Name, err)
			lost = p.ArgName()
			continue
		}
		if len(cls) == 0 {
			p.Err = errorf(ErrNoLocation, "parameter %s of %s is an empty %s, passed in nothing", p.ArgName(), f.Name, p.Type)
			continue
		}
		nInt, nSSE := 0, 0
		for _, c := range cls {
			switch c {
			case classInteger:
				nInt++
			case classSSE:
				nSSE++
			}
		}
		if cls[0] != classMemory && gpr+nInt <= len(intRegs) && sse+nSSE <= numSSERegs {
			var regs []string
			for _, c := range cls {
				if c == classInteger {
					regs = append(regs, "r"+strings.TrimPrefix(intRegs[gpr], "r"))
					gpr++
				} else {
					regs = append(regs, fmt.Sprintf("xmm%d", sse))
					sse++
				}
			}
			if nSSE > 0 {
				p.Err = errorf(ErrSSEParam, "parameter %s of %s is %s, passed in %s, which probes cannot read", p.ArgName(), f.Name, p.Type, strings.Join(regs, " and "))
				p.Loc = Location{}
				continue
			}
			p.Loc = Location{Arch: bpf.AMD64, Reg: intRegs[gpr-len(regs)]}
			if len(regs) == 2 {
				p.Loc.Reg2 = intRegs[gpr-1]
			}
			continue
		}
		// In memory: the next eightbyte of the argument area, which the
		// caller aligns to 16 bytes and which starts above the return
		// address (rsp+8); 16-byte types take a 16-byte aligned slot.
		align := max(8, p.Type.Align())
		stack = (stack + align - 1) / align * align
		p.Loc = Location{Arch: bpf.AMD64, Stack: true, StackOff: 8 + stack}
		stack += (p.Type.Size + 7) / 8 * 8
	}
}
