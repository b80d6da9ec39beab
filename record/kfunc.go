package record

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/bpftape/bpftape/record/suggest"
)

// btfDir is where the kernel exposes its BTF and its modules'.
const btfDir = "/sys/kernel/btf"

// KernelFunc is a kernel function as its BTF describes it: what a fentry
// or fexit probe on it would record.
type KernelFunc struct {
	Name   string
	Module string // "" for vmlinux
	Params []KernelParam
	Return string // C type of the return value, "void" if none
}

// KernelParam is one parameter of a KernelFunc.
type KernelParam struct {
	Name, Type string // Type in C syntax: "struct file *"
}

// Args lists the parameters as "args name (type), ...", for messages.
func (f *KernelFunc) Args() string {
	if len(f.Params) == 0 {
		return "no args (it takes none)"
	}
	parts := make([]string, len(f.Params))
	for i, p := range f.Params {
		parts[i] = fmt.Sprintf("%s (%s)", p.Name, p.Type)
	}
	return "args " + strings.Join(parts, ", ")
}

// LookupKernelFunc finds the kernel function name in the BTF of vmlinux and
// then of the loaded modules. An unknown name is an error naming close
// function names from vmlinux, so a typo in fentry:FUNC is caught before
// anything is loaded.
func LookupKernelFunc(name string) (*KernelFunc, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, fmt.Errorf("kernel BTF (%s/vmlinux): %w", btfDir, err)
	}
	if fn, err := findFunc(spec, name); err != nil || fn != nil {
		return fn, err
	}
	mods, _ := os.ReadDir(btfDir)
	for _, m := range mods {
		if m.Name() == "vmlinux" {
			continue
		}
		ms, err := btf.LoadKernelModuleSpec(m.Name())
		if err != nil {
			continue
		}
		if fn, err := findFunc(ms, name); err != nil || fn != nil {
			if fn != nil {
				fn.Module = m.Name()
			}
			return fn, err
		}
	}
	var names []string
	for t, err := range spec.All() {
		if err != nil {
			break
		}
		if f, ok := t.(*btf.Func); ok {
			names = append(names, f.Name)
		}
	}
	sort.Strings(names)
	return nil, fmt.Errorf("no kernel function %q in the kernel's BTF (%s/vmlinux and modules)%s", name, btfDir,
		suggest.Hint(suggest.Closest(name, names, 5)))
}

// findFunc returns the function name of spec, or nil if it has none.
func findFunc(spec *btf.Spec, name string) (*KernelFunc, error) {
	types, err := spec.AnyTypesByName(name)
	if errors.Is(err, btf.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, t := range types {
		fn, ok := t.(*btf.Func)
		if !ok {
			continue
		}
		proto, ok := fn.Type.(*btf.FuncProto)
		if !ok {
			return nil, fmt.Errorf("kernel BTF: %s has no prototype", name)
		}
		kf := &KernelFunc{Name: name, Return: cType(proto.Return)}
		for i, p := range proto.Params {
			n := p.Name
			if n == "" {
				n = fmt.Sprintf("arg%d", i)
			}
			kf.Params = append(kf.Params, KernelParam{Name: n, Type: cType(p.Type)})
		}
		return kf, nil
	}
	return nil, nil
}

// cType writes a BTF type the way C declares it, for messages.
func cType(t btf.Type) string {
	switch t := t.(type) {
	case nil, *btf.Void:
		return "void"
	case *btf.Pointer:
		s := cType(t.Target)
		if strings.HasSuffix(s, "*") {
			return s + "*"
		}
		return s + " *"
	case *btf.Const:
		return "const " + cType(t.Type)
	case *btf.Volatile:
		return "volatile " + cType(t.Type)
	case *btf.Restrict:
		return cType(t.Type)
	case *btf.TypeTag:
		return cType(t.Type)
	case *btf.Struct:
		return "struct " + t.Name
	case *btf.Union:
		return "union " + t.Name
	case *btf.Enum:
		return "enum " + t.Name
	case *btf.Fwd:
		return t.Kind.String() + " " + t.Name
	case *btf.Array:
		return fmt.Sprintf("%s[%d]", cType(t.Type), t.Nelems)
	case *btf.FuncProto:
		return "function"
	}
	if n := t.TypeName(); n != "" {
		return n
	}
	return fmt.Sprintf("%v", t)
}
