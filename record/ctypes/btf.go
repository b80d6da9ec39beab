package ctypes

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/cilium/ebpf/btf"

	"github.com/bpftape/bpftape/bpf"
)

// BTF is the types and functions of a BTF spec (the kernel's, from
// /sys/kernel/btf/vmlinux, or a module's), converted on demand.
type BTF struct {
	spec *btf.Spec
	c    *btfConv
	// arch is the kernel's architecture, whose calling convention Func
	// follows: the host's (nil on a build for another).
	arch *bpf.Arch
}

// NewBTF wraps spec, the BTF of the running kernel or of one of its
// modules. Types are converted when looked up, and a pointer's target when
// first asked for (Type.Elem): vmlinux has some 100,000 types, most of
// them reachable from struct task_struct through pointers.
func NewBTF(spec *btf.Spec) *BTF {
	return &BTF{spec: spec, c: newBTFConv(), arch: bpf.HostArch()}
}

// FromBTF converts a BTF type into a Type. Pointer targets are converted
// when first asked for, and each BTF type once per call of FromBTF (a
// *BTF shares the work between its lookups).
func FromBTF(t btf.Type) *Type {
	return newBTFConv().get(t)
}

// btfConv converts BTF types, memoizing them.
type btfConv struct {
	mu   sync.Mutex
	memo map[btf.Type]*Type
}

func newBTFConv() *btfConv { return &btfConv{memo: map[btf.Type]*Type{}} }

func (c *btfConv) get(t btf.Type) *Type {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.convert(t, 0)
}

// convert converts t; c.mu is held.
func (c *btfConv) convert(t btf.Type, depth int) *Type {
	if t == nil {
		return voidType
	}
	if out, ok := c.memo[t]; ok {
		return out
	}
	if depth > maxNesting {
		return unknownType
	}
	out := c.convert1(t, depth)
	c.memo[t] = out
	return out
}

func (c *btfConv) convert1(t btf.Type, depth int) *Type {
	switch u := t.(type) {
	case *btf.Void:
		return voidType
	case *btf.Int:
		switch {
		case u.Encoding == btf.Bool:
			return &Type{Kind: Bool, Size: int64(u.Size), name: u.Name}
		case u.Encoding == btf.Char:
			// BTF's char flag does not say whether char is signed: it
			// is on x86-64 (in kernels before 6.2, which build with
			// -funsigned-char and mark char unsigned instead), not on
			// arm64. The BTF is the running kernel's.
			return &Type{Kind: Int, Size: int64(u.Size), Signed: runtime.GOARCH != "arm64", name: u.Name}
		}
		return &Type{Kind: Int, Size: int64(u.Size), Signed: u.Encoding == btf.Signed, name: u.Name}
	case *btf.Enum:
		return &Type{Kind: Enum, Size: int64(u.Size), Signed: u.Signed, tag: u.Name, name: "enum " + orAnon(u.Name)}
	case *btf.Float:
		return &Type{Kind: Float, Size: int64(u.Size), name: u.Name}
	case *btf.Pointer:
		target := u.Target
		return &Type{Kind: Pointer, Size: 8, name: pointerName(spellBTF(target, 0)), elem: &lazyType{load: func() *Type {
			return c.get(target)
		}}}
	case *btf.Array:
		e := c.convert(u.Type, depth+1)
		return &Type{Kind: Array, Len: int64(u.Nelems), Size: int64(u.Nelems) * e.Size, elem: ready(e), name: arrayName(e.String(), int64(u.Nelems))}
	case *btf.Struct:
		return c.composite(t, Struct, u.Name, u.Size, u.Members, depth)
	case *btf.Union:
		return c.composite(t, Union, u.Name, u.Size, u.Members, depth)
	case *btf.Fwd:
		k := Struct
		if u.Kind == btf.FwdUnion {
			k = Union
		}
		return &Type{Kind: k, Incomplete: true, tag: u.Name, name: u.Kind.String() + " " + u.Name}
	case *btf.Typedef:
		return withName(c.convert(u.Type, depth+1), u.Name)
	case *btf.Const:
		in := c.convert(u.Type, depth+1)
		return withName(in, qualify("const", in))
	case *btf.Volatile:
		in := c.convert(u.Type, depth+1)
		return withName(in, qualify("volatile", in))
	case *btf.Restrict:
		return c.convert(u.Type, depth+1)
	case *btf.TypeTag:
		return c.convert(u.Type, depth+1)
	case *btf.FuncProto, *btf.Func:
		return &Type{Kind: Function, name: "function"}
	}
	return &Type{Kind: Unknown, name: spellBTF(t, 0)}
}

func (c *btfConv) composite(t btf.Type, k Kind, name string, size uint32, members []btf.Member, depth int) *Type {
	kw := "struct "
	if k == Union {
		kw = "union "
	}
	out := &Type{Kind: k, Size: int64(size), tag: name, name: kw + orAnon(name)}
	c.memo[t] = out
	for _, m := range members {
		mt := c.convert(m.Type, depth+1)
		bit := int64(m.Offset)
		mm := Member{Name: m.Name, Offset: bit / 8, Type: mt}
		if m.BitfieldSize != 0 {
			mm.BitOffset, mm.BitSize = bit%8, int64(m.BitfieldSize)
		}
		out.Members = append(out.Members, mm)
	}
	return out
}

// spellBTF is a BTF type's C spelling, without converting it.
func spellBTF(t btf.Type, depth int) string {
	if depth > 8 {
		return "?"
	}
	switch u := t.(type) {
	case nil, *btf.Void:
		return "void"
	case *btf.Pointer:
		return pointerName(spellBTF(u.Target, depth+1))
	case *btf.Const:
		if _, ok := u.Type.(*btf.Pointer); ok {
			return spellBTF(u.Type, depth+1) + "const"
		}
		return "const " + spellBTF(u.Type, depth+1)
	case *btf.Volatile:
		if _, ok := u.Type.(*btf.Pointer); ok {
			return spellBTF(u.Type, depth+1) + "volatile"
		}
		return "volatile " + spellBTF(u.Type, depth+1)
	case *btf.Restrict:
		return spellBTF(u.Type, depth+1)
	case *btf.TypeTag:
		return spellBTF(u.Type, depth+1)
	case *btf.Struct:
		return "struct " + orAnon(u.Name)
	case *btf.Union:
		return "union " + orAnon(u.Name)
	case *btf.Enum:
		return "enum " + orAnon(u.Name)
	case *btf.Fwd:
		return u.Kind.String() + " " + u.Name
	case *btf.Array:
		return arrayName(spellBTF(u.Type, depth+1), int64(u.Nelems))
	case *btf.FuncProto, *btf.Func:
		return "function"
	}
	if n := t.TypeName(); n != "" {
		return n
	}
	return "?"
}

// Func finds a function's prototype in the BTF and places its parameters
// by the calling convention of the host's architecture (the x86-64 System
// V ABI or AAPCS64: the kernel is compiled for it), as a kprobe on its
// entry sees them (fentry reads them by position instead). On a build for
// another architecture it is an error.
func (s *BTF) Func(name string) (*Func, error) {
	if s.arch == nil {
		return nil, errorf(ErrNoLocation, "ctypes: BTF: kernel function %s: bpftape knows the kernel's calling convention on x86-64 and arm64 only, and this is a %s build", name, runtime.GOARCH)
	}
	types, err := s.spec.AnyTypesByName(name)
	if err != nil && !errors.Is(err, btf.ErrNotFound) {
		return nil, fmt.Errorf("ctypes: BTF: %w", err)
	}
	for _, t := range types {
		f, ok := t.(*btf.Func)
		if !ok {
			continue
		}
		proto, ok := f.Type.(*btf.FuncProto)
		if !ok {
			return nil, errorf(ErrBadDWARF, "ctypes: BTF: function %s has no prototype", name)
		}
		fn := &Func{Name: name, Return: s.c.get(proto.Return), Arch: s.arch}
		for i, p := range proto.Params {
			if i == len(proto.Params)-1 && p.Name == "" {
				if _, void := p.Type.(*btf.Void); void || p.Type == nil {
					fn.Variadic = true // BTF spells ... as a last nameless void parameter
					break
				}
			}
			fn.Params = append(fn.Params, Param{Name: p.Name, Index: i, Type: s.c.get(p.Type)})
		}
		fn.place()
		return fn, nil
	}
	return nil, errorf(ErrNoFunc, "ctypes: no function %s in the BTF", name)
}

// LookupType finds a type by its C name: "struct file", "union
// bpf_attr", "enum pid_type", or a typedef or integer type name
// ("pid_t", "unsigned int").
func (s *BTF) LookupType(name string) (*Type, error) {
	name = strings.Join(strings.Fields(name), " ")
	kw, tag, _ := strings.Cut(name, " ")
	want := func(t btf.Type) bool {
		switch t.(type) {
		case *btf.Typedef, *btf.Int, *btf.Float:
			return true
		}
		return false
	}
	switch kw {
	case "struct":
		want = func(t btf.Type) bool { _, ok := t.(*btf.Struct); return ok }
	case "union":
		want = func(t btf.Type) bool { _, ok := t.(*btf.Union); return ok }
	case "enum":
		want = func(t btf.Type) bool { _, ok := t.(*btf.Enum); return ok }
	default:
		tag = name
	}
	types, err := s.spec.AnyTypesByName(tag)
	if err != nil && !errors.Is(err, btf.ErrNotFound) {
		return nil, fmt.Errorf("ctypes: BTF: %w", err)
	}
	for _, t := range types {
		if want(t) {
			return s.c.get(t), nil
		}
	}
	return nil, errorf(ErrNoType, "ctypes: no type %s in the BTF", name)
}

// LookupStruct is LookupType("struct " + name).
func (s *BTF) LookupStruct(name string) (*Type, error) {
	return s.LookupType("struct " + name)
}
