package resolve

import (
	"errors"
	"fmt"
	"sync"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/record/ctypes"
	"github.com/bpftape/bpftape/record/elfsym"
)

// ErrExpr is the error of a field whose parameter or expression cannot be
// resolved: unknown names, no debug info, a type that cannot be recorded.
var ErrExpr = errors.New("cannot resolve field")

// exprBase is the value an expression starts from: the BPF arg kind that
// gives it (8 bytes wide), its C type (nil: an untyped 64-bit argN of a
// function without debug info), and off, added to it before its first
// load (a parameter on the stack is at sp+off).
type exprBase struct {
	arg bpf.ArgSpec
	typ *ctypes.Type
	off int64
	// access, when set, is the whole expression, already resolved from
	// the base by the function's ABI (ctypes.Func.ParamAccess).
	access *ctypes.Access
}

// fieldType is the capture's type for a C integer type of a recorded
// value: pointers and enums as unsigned or signed integers of their size.
func fieldType(t *ctypes.Type) (format.Type, error) {
	if !t.IsInteger() {
		return format.TypeInvalid, fmt.Errorf("%w: a value of type %s (%s, %d bytes) is not an integer; name one of its members or elements", ErrExpr, t, t.Kind, t.Size)
	}
	return intType(int(t.Size), t.Signed), nil
}

// exprSteps converts a probespec path into ctypes steps, after a leading
// run of casts and additions, which apply to the base value: in
// *(u32 *)(arg1 + 16), arg1 + 16 is then read as a u32. Casts and
// additions anywhere else are refused.
func exprSteps(f *probespec.Field, base *exprBase, src ctypes.Source) ([]ctypes.Step, error) {
	var out []ctypes.Step
	lead := true
	for _, st := range f.Steps {
		switch st.Op {
		case probespec.StepCast, probespec.StepAdd:
			if !lead {
				return nil, fmt.Errorf("%w: %s: a cast or + applies to the parameter itself: write *(TYPE *)(ARG + N) or ((struct S *)ARG)->member", ErrExpr, f.FieldName())
			}
			if base.access != nil {
				return nil, fmt.Errorf("%w: %s: a cast or + needs a parameter passed whole in a register", ErrExpr, f.FieldName())
			}
			if st.Op == probespec.StepCast {
				t, err := ctypes.ParseType(st.Name, src)
				if err != nil {
					return nil, fmt.Errorf("%w: %s: %w", ErrExpr, f.FieldName(), err)
				}
				if t.Size > 8 {
					return nil, fmt.Errorf("%w: %s: cast to %s, %d bytes: a value is at most 8", ErrExpr, f.FieldName(), t, t.Size)
				}
				base.typ = t
				continue
			}
			scale := int64(1) // bytes on an integer or a void *, as GCC does
			if base.typ != nil && base.typ.Kind == ctypes.Pointer {
				if e := base.typ.Elem(); e != nil && e.Size > 0 {
					scale = e.Size
				}
			}
			base.off += st.N * scale
		case probespec.StepArrow:
			out, lead = append(out, ctypes.Arrow(st.Name)), false
		case probespec.StepMember:
			out, lead = append(out, ctypes.Dot(st.Name)), false
		case probespec.StepIndex:
			out, lead = append(out, ctypes.Index(st.N)), false
		case probespec.StepDeref:
			out, lead = append(out, ctypes.Deref()), false
		case probespec.StepAddr:
			return nil, fmt.Errorf("%w: %s: & is not supported: record the pointer to the member's struct", ErrExpr, f.FieldName())
		}
	}
	return out, nil
}

// resolveExpr resolves a field (a typed parameter, or an expression)
// from its base into the spec of the value to record and the field the
// capture describes: named f.FieldName(), of its type, and marked as an
// address (format.Field's Pointer) when the value recorded is a pointer of
// the function's types and no :TYPE asked for an integer. src resolves the
// names a cast uses (nil: none).
func resolveExpr(f *probespec.Field, base exprBase, src ctypes.Source) (bpf.ArgSpec, format.Field, error) {
	fld := format.Field{Name: f.FieldName()}
	var steps []ctypes.Step
	var err error
	if base.access == nil {
		if steps, err = exprSteps(f, &base, src); err != nil {
			return bpf.ArgSpec{}, fld, err
		}
	}
	var acc ctypes.Access
	switch {
	case base.access != nil:
		acc = *base.access
	case base.typ == nil && len(steps) > 0:
		return bpf.ArgSpec{}, fld, fmt.Errorf("%w: %s: the function has no debug info that says what %s points to: cast it, e.g. *(u32 *)(%s + 8) or ((struct S *)%s)->member",
			ErrExpr, f.FieldName(), f.FieldName(), baseName(f), baseName(f))
	case base.typ == nil:
		acc = ctypes.Access{Leaf: ctypes.LeafValue, Size: 8}
	default:
		acc, err = ctypes.ResolveNamed(baseName(f), base.typ, steps)
		if err != nil {
			return bpf.ArgSpec{}, fld, fmt.Errorf("%w: %w", ErrExpr, err)
		}
	}
	a := base.arg
	a.Size, a.IsSigned = 8, 0
	// The pending offset goes before the first load, or onto the leaf.
	reads := make([]int64, len(acc.Reads))
	for i, r := range acc.Reads {
		reads[i] = r.Off
	}
	leafOff := acc.Off
	if len(reads) > 0 {
		reads[0] += base.off
	} else {
		leafOff += base.off
	}
	if len(reads) > bpf.MaxReads {
		return a, fld, fmt.Errorf("%w: %s loads %d pointers; at most %d", ErrExpr, f.FieldName(), len(reads), bpf.MaxReads)
	}
	for i, r := range reads {
		if r != int64(int32(r)) {
			return a, fld, fmt.Errorf("%w: %s: offset %d out of range", ErrExpr, f.FieldName(), r)
		}
		a.ReadOff[i] = int32(r)
	}
	if leafOff != int64(int32(leafOff)) {
		return a, fld, fmt.Errorf("%w: %s: offset %d out of range", ErrExpr, f.FieldName(), leafOff)
	}
	a.Nread, a.LeafOff = uint8(len(reads)), int32(leafOff)

	leaf := acc.Type
	if base.typ == nil && base.access == nil {
		leaf = nil // an untyped argN + N
	}
	switch {
	case f.Str:
		switch {
		case acc.Leaf == ctypes.LeafAddr || acc.Leaf == ctypes.LeafValue && len(reads) == 0:
			// A char array's address, or a pointer's value.
			if leaf != nil && acc.Leaf == ctypes.LeafAddr && !leaf.IsCharArray() {
				return a, fld, fmt.Errorf("%w: str(%s): %s is not a string", ErrExpr, f.FieldName(), leaf)
			}
			a.Leaf, a.LeafFlags = bpf.LeafAddr, bpf.LeafStr
		case acc.Leaf == ctypes.LeafRead && acc.Size == 8:
			a.Leaf, a.LeafSize, a.LeafFlags = bpf.LeafRead, 8, bpf.LeafStr
		default:
			return a, fld, fmt.Errorf("%w: str(%s): %s is not a string or a pointer to one", ErrExpr, f.FieldName(), leaf)
		}
		if leaf != nil && acc.Leaf != ctypes.LeafAddr && leaf.Kind != ctypes.Pointer {
			return a, fld, fmt.Errorf("%w: str(%s): %s is not a pointer", ErrExpr, f.FieldName(), leaf)
		}
		// A char * (or a void *, or an untyped value): not a pointer to
		// a struct, whose bytes are no string.
		if leaf != nil && leaf.Kind == ctypes.Pointer && !leaf.IsCharPointer() {
			if e := leaf.Elem(); e != nil && e.Kind != ctypes.Void {
				return a, fld, fmt.Errorf("%w: str(%s): %s does not point to chars: name a char * or char array member, or cast", ErrExpr, f.FieldName(), leaf)
			}
		}
		fld.Type = format.String
		return a, fld, nil
	case acc.Leaf == ctypes.LeafAddr:
		return a, fld, fmt.Errorf("%w: %s is %s: name an element, or record it as a string with str()", ErrExpr, f.FieldName(), leaf)
	}
	t := format.Uint64
	if leaf != nil {
		if t, err = fieldType(leaf); err != nil {
			return a, fld, fmt.Errorf("%s: %w", f.FieldName(), err)
		}
	}
	// A pointer is an address, unless a :TYPE made it an integer.
	fld.Pointer = leaf != nil && leaf.Kind == ctypes.Pointer && f.Type == format.TypeInvalid
	if f.Type != format.TypeInvalid {
		t = f.Type // the user's :TYPE: the value cut to its width
	}
	fld.Type = t
	// What to read, and how to extend it, as a C conversion from the
	// source type to the recorded one does: a narrower :TYPE cuts the
	// value (the low bytes come first, little-endian) and extends by its
	// own sign; a wider one extends the source by the source's sign.
	srcSize, srcSigned := uint8(acc.Size), acc.Signed
	if srcSize == 0 || srcSize > 8 {
		srcSize = 8
	}
	size, signed := uint8(t.Size()), t.Signed()
	if size > srcSize {
		size, signed = srcSize, srcSigned
	}
	if acc.Leaf == ctypes.LeafRead {
		a.Leaf, a.LeafSize = bpf.LeafRead, size
		if signed {
			a.LeafFlags = bpf.LeafSigned
		}
		return a, fld, nil
	}
	// The value itself: the base register, maybe plus an offset.
	if len(reads) == 0 && leafOff == 0 {
		a.Size = size
		if signed {
			a.IsSigned = 1
		}
		return a, fld, nil
	}
	a.Leaf = bpf.LeafAddr
	return a, format.Field{Name: fld.Name, Type: format.Uint64}, nil
}

// baseName is the name of the value a field starts from.
func baseName(f *probespec.Field) string {
	switch f.Source {
	case probespec.Arg:
		return fmt.Sprintf("arg%d", f.Arg)
	case probespec.Retval:
		return "retval"
	}
	return f.Name
}

// needsTypes reports whether fields (nil: the defaults) want the function's
// debug info: a parameter by name, an expression, or the default fields,
// which then are the parameters, named and typed, or the typed retval.
func needsTypes(fields []probespec.Field) bool {
	if fields == nil {
		return true
	}
	for _, f := range fields {
		if f.Source == probespec.Param || f.Steps != nil {
			return true
		}
	}
	return false
}

// typedArg is typedField's spec and type.
func typedArg(f *probespec.Field, ret bool, arch *bpf.Arch, fn *ctypes.Func, src ctypes.Source) (bpf.ArgSpec, format.Type, error) {
	a, fld, err := typedField(f, ret, arch, fn, src)
	return a, fld.Type, err
}

// typedField resolves a field of a uprobe, uretprobe, kprobe or kretprobe
// on code of architecture arch with the function's types, fn (nil when it
// has no debug info: only argN and casts then work), into its spec and the
// field the capture describes.
func typedField(f *probespec.Field, ret bool, arch *bpf.Arch, fn *ctypes.Func, src ctypes.Source) (bpf.ArgSpec, format.Field, error) {
	var base exprBase
	switch {
	case ret:
		base.arg = bpf.ArgSpec{Kind: bpf.KindRetval}
		if fn == nil {
			break
		}
		if f.Steps != nil && hasLeadingCast(f) {
			if fn.RetErr != nil {
				return bpf.ArgSpec{}, format.Field{}, fmt.Errorf("%w: %w", ErrExpr, fn.RetErr)
			}
			base.typ = fn.Return
			break
		}
		steps, err := exprSteps(f, &exprBase{}, src)
		if err != nil {
			return bpf.ArgSpec{}, format.Field{}, err
		}
		loc, acc, err := fn.RetAccess(steps)
		if err != nil {
			return bpf.ArgSpec{}, format.Field{}, fmt.Errorf("%w: %w", ErrExpr, err)
		}
		reg, off, ok := loc.PtRegs()
		if !ok || off != 0 || loc.Stack {
			return bpf.ArgSpec{}, format.Field{}, fmt.Errorf("%w: retval of %s is at %s at the return, which bpftape cannot read", ErrExpr, fn.Signature(), loc)
		}
		if reg != arch.Ret {
			// The second register of a value returned in two (rdx,
			// x1): a register at the return like any other.
			base.arg = bpf.ArgSpec{Kind: bpf.KindReg, Reg: reg}
		}
		base.access = &acc
	default:
		name := f.Name
		if f.Source == probespec.Arg {
			// argN is the Nth integer argument register, as a plain argN
			// reads it, and a 64-bit integer, as in bpftrace: argN + 12
			// adds bytes. Its type is that of the parameter in that
			// register, if one is there whole (a float or a two-register
			// struct before it shifts the parameters).
			reg, err := argReg(arch, f)
			if err != nil {
				return bpf.ArgSpec{}, format.Field{}, err
			}
			p := paramInReg(fn, f.Arg)
			if p == nil || hasLeadingCast(f) {
				base.arg = bpf.ArgSpec{Kind: bpf.KindReg, Reg: reg}
				break
			}
			name = p.ArgName()
		}
		if fn == nil {
			return bpf.ArgSpec{}, format.Field{}, fmt.Errorf("%w: %s: no debug info names the function's parameters: use argN", ErrExpr, f.FieldName())
		}
		p, err := fn.Param(name)
		if err != nil {
			return bpf.ArgSpec{}, format.Field{}, fmt.Errorf("%w: %w", ErrExpr, err)
		}
		if hasLeadingCast(f) {
			reg, off, ok := p.Loc.PtRegs()
			if !ok || off != 0 || p.Loc.Stack {
				return bpf.ArgSpec{}, format.Field{}, fmt.Errorf("%w: %s: a cast or + needs a parameter passed whole in a register; %s is at %s", ErrExpr, f.FieldName(), name, p.Loc)
			}
			base.arg, base.typ = bpf.ArgSpec{Kind: bpf.KindReg, Reg: reg}, p.Type
			break
		}
		steps, err := exprSteps(f, &exprBase{}, src)
		if err != nil {
			return bpf.ArgSpec{}, format.Field{}, err
		}
		loc, acc, err := fn.ParamAccess(name, steps)
		if err != nil {
			return bpf.ArgSpec{}, format.Field{}, fmt.Errorf("%w: %w", ErrExpr, err)
		}
		reg, off, ok := loc.PtRegs()
		if !ok {
			return bpf.ArgSpec{}, format.Field{}, fmt.Errorf("%w: %s is at %s, which bpftape cannot read", ErrExpr, name, loc)
		}
		base.arg, base.off, base.access = bpf.ArgSpec{Kind: bpf.KindReg, Reg: reg}, off, &acc
	}
	return resolveExpr(f, base, src)
}

// hasLeadingCast reports whether an expression starts with a cast or an
// addition, which apply to the base value.
func hasLeadingCast(f *probespec.Field) bool {
	return len(f.Steps) > 0 && (f.Steps[0].Op == probespec.StepCast || f.Steps[0].Op == probespec.StepAdd)
}

// typedDefaults are the default fields of a function with types: its
// parameters by name (those that can be recorded, at most the sample's
// 12), or its typed retval; nil to fall back on the untyped defaults.
func typedDefaults(fn *ctypes.Func, ret bool, warn func(string)) []probespec.Field {
	if ret {
		if errors.Is(fn.RetErr, ctypes.ErrSSEParam) {
			// Recorded anyway (the return event times the call), as
			// bpftrace's retval: the integer return register.
			warn(fmt.Sprintf("retval is the integer return register, not the value: %v", fn.RetErr))
		}
		if fn.RetErr != nil || fn.Return == nil || !fn.Return.IsInteger() {
			return nil
		}
		return []probespec.Field{{Text: "retval", Source: probespec.Retval}}
	}
	var fields []probespec.Field
	for _, p := range fn.Params {
		switch {
		case p.Err != nil:
			warn(fmt.Sprintf("parameter %s left out: %v", p.ArgName(), p.Err))
			continue
		case !p.Type.IsInteger():
			warn(fmt.Sprintf("parameter %s left out: a %s; name its members to record them", p.ArgName(), p.Type))
			continue
		case len(fields) == bpf.MaxArgs:
			warn(fmt.Sprintf("parameter %s and later ones left out: a probe records %d fields", p.ArgName(), bpf.MaxArgs))
			return fields
		}
		fields = append(fields, probespec.Field{Text: p.ArgName(), Source: probespec.Param, Name: p.ArgName()})
	}
	if len(fields) == 0 {
		return nil
	}
	return fields
}

// userFunc reads the types of a uprobe's function from the binary's DWARF
// or its debug file. Without debug info it returns no function and no
// error when the fields can do without (the defaults, argN casts).
func (r *Resolver) userFunc(path string, loc elfsym.Location, fields []probespec.Field) (*ctypes.Func, ctypes.Source, error) {
	need := false // a field that cannot do without types
	for i := range fields {
		f := &fields[i]
		need = need || f.Source == probespec.Param || f.Steps != nil && !hasLeadingCast(f)
	}
	b, err := ctypes.OpenBinary(path, r.DebugDirs)
	if err != nil {
		if need {
			return nil, nil, fmt.Errorf("%w: %s: %w", ErrExpr, path, err)
		}
		return nil, nil, nil
	}
	fn, err := b.Func(loc.Func)
	if err != nil {
		if need {
			return nil, b, fmt.Errorf("%w: %w", ErrExpr, err)
		}
		return nil, b, nil
	}
	if !loc.Entry() && !need {
		return nil, b, nil // the defaults: argN, as the registers may have changed
	}
	if !loc.Entry() {
		return nil, nil, fmt.Errorf("%w: parameters are where the ABI puts them only at the function's entry, and the probe is at %s+%#x: use argN or a uretprobe's retval",
			ErrExpr, loc.Func, loc.FuncOff)
	}
	return fn, b, nil
}

// kernelBTF holds the ctypes view of the kernel's and modules' BTF, by
// module ("" for vmlinux): types convert on demand and stay converted.
var (
	kernelBTF   = map[string]*ctypes.BTF{}
	kernelBTFMu sync.Mutex
)

// kernelFuncTypes finds a kernel function's types in the kernel's or its
// module's BTF.
func kernelFuncTypes(name string) (*ctypes.Func, ctypes.Source, error) {
	kf, spec, err := findKernelFunc(name)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrExpr, err)
	}
	if kf == nil {
		return nil, nil, fmt.Errorf("%w: no kernel function %s in the kernel's BTF", ErrExpr, name)
	}
	if kf.Module != "" {
		if spec, err = kernelTypes.Module(kf.Module); err != nil {
			return nil, nil, fmt.Errorf("%w: BTF of module %s: %w", ErrExpr, kf.Module, err)
		}
	}
	kernelBTFMu.Lock()
	b := kernelBTF[kf.Module]
	if b == nil {
		b = ctypes.NewBTF(spec)
		kernelBTF[kf.Module] = b
	}
	kernelBTFMu.Unlock()
	fn, err := b.Func(name)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrExpr, err)
	}
	return fn, b, nil
}

// funcExpr is funcField's spec and type.
func funcExpr(f *probespec.Field, kf *KernelFunc) (bpf.ArgSpec, format.Type, error) {
	a, fld, err := funcField(f, kf)
	return a, fld.Type, err
}

// funcField resolves an expression of a fentry or fexit probe, whose
// program reads its function's arguments by position (bpf_get_func_arg),
// so the base is the parameter's value whatever the ABI does with it, into
// its spec and the field the capture describes.
func funcField(f *probespec.Field, kf *KernelFunc) (bpf.ArgSpec, format.Field, error) {
	fn, src, err := kernelFuncTypes(kf.Name)
	if err != nil {
		return bpf.ArgSpec{}, format.Field{}, err
	}
	var base exprBase
	switch f.Source {
	case probespec.Retval:
		if fn.Return == nil || fn.Return.Kind == ctypes.Void {
			return bpf.ArgSpec{}, format.Field{}, fmt.Errorf("%w: %s returns nothing", ErrExpr, fn.Name)
		}
		base.arg, base.typ = bpf.ArgSpec{Kind: bpf.KindFuncRet}, fn.Return
	default:
		i := f.Arg
		if f.Source == probespec.Param {
			p, err := fn.Param(f.Name)
			if p == nil {
				return bpf.ArgSpec{}, format.Field{}, fmt.Errorf("%w: %w", ErrExpr, err)
			}
			i = p.Index
		}
		if i >= len(fn.Params) || i >= bpf.MaxFuncArgs {
			return bpf.ArgSpec{}, format.Field{}, fmt.Errorf("%w: %s takes %d arguments: %s", ErrExpr, fn.Name, len(fn.Params), fn.Signature())
		}
		base.arg = bpf.ArgSpec{Kind: bpf.KindFuncArg, Reg: uint8(i)}
		if f.Source == probespec.Param || !hasLeadingCast(f) {
			base.typ = fn.Params[i].Type // argN + 12 adds bytes, as for uprobes
		}
	}
	if f.Str && base.arg.Kind == bpf.KindFuncRet {
		return bpf.ArgSpec{}, format.Field{}, fmt.Errorf("%w: str() of a fexit's retval is not supported", ErrExpr)
	}
	return resolveExpr(f, base, src)
}

// argReg returns the register of argN (f.Arg) on arch: the Nth integer
// argument register of its calling convention, which has six on x86-64
// (arg0..arg5) and eight on arm64 (arg0..arg7).
func argReg(arch *bpf.Arch, f *probespec.Field) (uint8, error) {
	if f.Arg < 0 || f.Arg >= len(arch.Args) {
		last := len(arch.Args) - 1
		return 0, usage.Errorf("field %q: the %s calling convention passes %d integer arguments in registers, arg0..arg%d (%s to %s): name the parameter instead (with debug info bpftape finds it on the stack)",
			f.Text, arch.ABI, len(arch.Args), last, arch.RegName(arch.Args[0]), arch.RegName(arch.Args[last]))
	}
	return arch.Args[f.Arg], nil
}

// regIndex returns N of the argN whose register holds p whole at the
// function's entry, or -1 when none does: a parameter on the stack, in two
// registers, passed by reference, or in a floating-point register.
func regIndex(p *ctypes.Param) int {
	if p.Err != nil || p.Loc.Stack || p.Loc.Reg2 != "" || p.Loc.Indirect || p.Loc.Arch == nil {
		return -1
	}
	reg, _, ok := p.Loc.PtRegs()
	if !ok {
		return -1
	}
	for n, r := range p.Loc.Arch.Args {
		if r == reg {
			return n
		}
	}
	return -1
}

// paramInReg returns the parameter of fn that is, whole, in the register of
// argN at the entry, or nil.
func paramInReg(fn *ctypes.Func, n int) *ctypes.Param {
	if fn == nil || n < 0 {
		return nil
	}
	for i := range fn.Params {
		if p := &fn.Params[i]; regIndex(p) == n {
			return p
		}
	}
	return nil
}
