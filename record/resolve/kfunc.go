package resolve

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/record/host"
	"github.com/bpftape/bpftape/record/kallsyms"
	"github.com/bpftape/bpftape/record/suggest"
	"github.com/bpftape/bpftape/record/tracefs"
)

// KernelFunc is a kernel function as its BTF describes it: what a fentry
// or fexit probe on it would record.
type KernelFunc struct {
	Name   string
	Module string // "" for vmlinux
	Params []KernelParam
	Return string // C type of the return value, "void" if none
	Ret    Value  // how fexit records the return value
}

// Signature is the function's C declaration: "ssize_t vfs_read(struct file *file, ...)".
func (f *KernelFunc) Signature() string {
	parts := make([]string, len(f.Params))
	for i, p := range f.Params {
		sep := " "
		if strings.HasSuffix(p.Type, "*") {
			sep = ""
		}
		parts[i] = p.Type + sep + p.Name
	}
	return fmt.Sprintf("%s %s(%s)", f.Return, f.Name, strings.Join(parts, ", "))
}

// KernelParam is one parameter of a KernelFunc.
type KernelParam struct {
	Name, Type string // Type in C syntax: "struct file *"
	Value      Value
}

// Value says how a fentry/fexit program records a parameter or return
// value of a type: as an integer of Size bytes (a pointer is an 8-byte
// unsigned integer), or not at all (Size 0: a struct or union passed by
// value, or void).
type Value struct {
	Size    int
	Signed  bool
	Pointer bool
	// CharPtr: a pointer to char, which str() can read as a C string.
	CharPtr bool
}

// valueOf classifies BTF type t (see Value).
func valueOf(t btf.Type) Value {
	switch u := btf.UnderlyingType(t).(type) {
	case *btf.Int:
		return Value{Size: int(u.Size), Signed: u.Encoding&btf.Signed != 0}
	case *btf.Enum:
		return Value{Size: int(u.Size), Signed: u.Signed}
	case *btf.Pointer:
		v := Value{Size: 8, Pointer: true}
		if i, ok := btf.UnderlyingType(u.Target).(*btf.Int); ok && i.Size == 1 {
			v.CharPtr = true
		}
		return v
	}
	return Value{}
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
	fn, spec, err := findKernelFunc(name)
	if err != nil || fn != nil {
		return fn, err
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
	return nil, fmt.Errorf("no kernel function %q in the kernel's BTF (%s/vmlinux and modules)%s", name, host.BTFDir,
		suggest.Hint(suggest.Closest(name, names, 5)))
}

// kernelTypes holds the kernel's and modules' BTF once decoded: decoding
// vmlinux's took 16.5 ms per call here (LoadKernelSpec does not cache it), once per
// function of a pattern before (k:vfs_* took 16 s to get ready).
var kernelTypes = btf.NewCache()

// findKernelFunc finds function name in vmlinux's BTF, then in the loaded
// modules'; fn is nil if none has it. spec is vmlinux's BTF.
func findKernelFunc(name string) (fn *KernelFunc, spec *btf.Spec, err error) {
	spec, err = kernelTypes.Kernel()
	if err != nil {
		return nil, nil, fmt.Errorf("kernel BTF (%s/vmlinux): %w", host.BTFDir, err)
	}
	if fn, err := findFunc(spec, name); err != nil || fn != nil {
		return fn, spec, err
	}
	mods, _ := os.ReadDir(host.BTFDir)
	for _, m := range mods {
		if m.Name() == "vmlinux" {
			continue
		}
		ms, err := kernelTypes.Module(m.Name())
		if err != nil {
			continue
		}
		if fn, err := findFunc(ms, name); err != nil || fn != nil {
			if fn != nil {
				fn.Module = m.Name()
			}
			return fn, spec, err
		}
	}
	return nil, spec, nil
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
		kf := &KernelFunc{Name: name, Return: cType(proto.Return), Ret: valueOf(proto.Return)}
		for i, p := range proto.Params {
			n := p.Name
			if n == "" {
				n = fmt.Sprintf("arg%d", i)
			}
			kf.Params = append(kf.Params, KernelParam{Name: n, Type: cType(p.Type), Value: valueOf(p.Type)})
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

// fentry resolves f:FUNC and fr:FUNC: a BPF tracing program attached to a
// kernel function through its BTF, recording its parameters by name with
// their BTF types (and, at exit, its return value).
func (r *Resolver) fentry(p *Probe) error {
	s := p.Spec
	if !host.FileExists(host.BTFDir + "/vmlinux") {
		return fmt.Errorf("%s probes need the kernel's BTF (CONFIG_DEBUG_INFO_BTF), and %s/vmlinux does not exist; %s",
			s.Kind, host.BTFDir, host.FuncAlternative(s, r.TracefsDir))
	}
	fn, err := LookupKernelFunc(s.Symbol)
	if err != nil {
		return err
	}
	if len(fn.Params) > bpf.MaxFuncArgs {
		return fmt.Errorf("%s takes %d arguments, and BPF trampolines pass at most %d; %s", fn.Name, len(fn.Params), bpf.MaxFuncArgs, host.FuncAlternative(s, r.TracefsDir))
	}
	exit := s.Kind == probespec.Fexit
	fields := s.Fields
	if fields == nil {
		for i, prm := range fn.Params {
			if prm.Value.Size == 0 || i >= bpf.MaxFuncArgs {
				continue // a struct passed by value
			}
			fields = append(fields, probespec.Field{Text: prm.Name, Source: probespec.Param, Name: prm.Name})
		}
		if exit && fn.Ret.Size != 0 {
			fields = append(fields, probespec.Field{Text: "retval", Source: probespec.Retval})
		}
		if len(fields) > bpf.MaxArgs {
			fields = fields[:bpf.MaxArgs]
		}
	}
	var args []bpf.ArgSpec
	for _, f := range fields {
		if f.Steps != nil {
			a, fld, err := funcField(&f, fn)
			if err != nil {
				return err
			}
			args = append(args, a)
			p.Meta.Fields = append(p.Meta.Fields, fld)
			continue
		}
		var v Value
		var what string
		a := bpf.ArgSpec{Kind: bpf.KindFuncArg}
		switch f.Source {
		case probespec.Retval:
			if fn.Ret.Size == 0 {
				return fmt.Errorf("field %q: %s returns %s, which fexit cannot record", f.Text, fn.Name, fn.Return)
			}
			a.Kind, v, what = bpf.KindFuncRet, fn.Ret, "retval ("+fn.Return+")"
		case probespec.Param, probespec.Arg:
			i := f.Arg
			if f.Source == probespec.Param {
				i = -1
				for k, prm := range fn.Params {
					if prm.Name == f.Name {
						i = k
					}
				}
				if i < 0 {
					return fmt.Errorf("field %q: %s has no parameter %s: it takes %s", f.Text, fn.Name, f.Name, fn.Args())
				}
			}
			if i >= len(fn.Params) {
				return fmt.Errorf("field %q: %s takes %d arguments: %s", f.Text, fn.Name, len(fn.Params), fn.Args())
			}
			prm := fn.Params[i]
			if prm.Value.Size == 0 {
				return fmt.Errorf("field %q: %s's parameter %s is a %s passed by value, which fentry cannot record", f.Text, fn.Name, prm.Name, prm.Type)
			}
			a.Reg, v, what = uint8(i), prm.Value, prm.Name+" ("+prm.Type+")"
		default:
			return fmt.Errorf("field %q: a %s records its function's parameters by name, argN or retval", f.Text, s.Kind)
		}
		if f.Str {
			if !v.CharPtr {
				return fmt.Errorf("field %q: str() reads a C string, and %s is not a char pointer", f.Text, what)
			}
			if a.Kind == bpf.KindFuncRet {
				return fmt.Errorf("field %q: str(retval) is not supported for fexit yet; record retval as an integer", f.Text)
			}
			a.Kind = bpf.KindFuncStr
			args = append(args, a)
			p.addField(f.FieldName(), format.String)
			continue
		}
		t := f.Type
		if t == format.TypeInvalid {
			t = intType(v.Size, v.Signed)
		}
		a.Size = uint8(t.Size())
		if t.Signed() {
			a.IsSigned = 1
		}
		args = append(args, a)
		// A pointer is an address, unless a :TYPE made it an integer.
		p.Meta.Fields = append(p.Meta.Fields, format.Field{Name: f.FieldName(), Type: t, Pointer: v.Pointer && f.Type == format.TypeInvalid})
	}
	spec, err := p.ProbeSpec(args)
	if err != nil {
		return err
	}
	// The fields first, so that a spec is checked on any host; then
	// whether this kernel runs it.
	if err := r.checkKernelFunc(s); err != nil {
		return err
	}
	if err := host.TracingAttachUnavailable(s); err != nil {
		return fmt.Errorf("%w; %s", err, wouldRecord(s, fn, host.FuncAlternative(s, r.TracefsDir)))
	}
	if err := bpf.HaveFuncArgs(); err != nil {
		return fmt.Errorf("%s probes read their arguments with bpf_get_func_arg (Linux 5.17), which this kernel refused (%v); %s",
			s.Kind, err, wouldRecord(s, fn, host.FuncAlternative(s, r.TracefsDir)))
	}
	p.Meta.Target = "vmlinux"
	if fn.Module != "" {
		p.Meta.Target = fn.Module
	}
	p.Atts = []Attachment{{KFunc: fn.Name, Tracing: true, Ret: exit, Spec: spec, What: fmt.Sprintf("%s %s", s.Kind, fn.Name)}}
	return nil
}

// intType is the capture's integer type of size bytes.
func intType(size int, signed bool) format.Type {
	switch size {
	case 1:
		if signed {
			return format.Int8
		}
		return format.Uint8
	case 2:
		if signed {
			return format.Int16
		}
		return format.Uint16
	case 4:
		if signed {
			return format.Int32
		}
		return format.Uint32
	}
	if signed {
		return format.Int64
	}
	return format.Uint64
}

// wouldRecord says what a fentry or fexit probe on fn would have recorded,
// then the alternative, for the errors of kernels that cannot run it.
func wouldRecord(s *probespec.Spec, fn *KernelFunc, alt string) string {
	what := fmt.Sprintf("kernel function %s", fn.Name)
	if fn.Module != "" {
		what += " (module " + fn.Module + ")"
	}
	would := fmt.Sprintf("%s exists and %s:%s would record %s from BTF", what, s.Kind, fn.Name, fn.Args())
	if s.Kind == probespec.Fexit {
		would += fmt.Sprintf(", and retval (%s)", fn.Return)
	}
	return would + "; " + alt
}

// checkKernelFunc reports, before anything is attached, why a kprobe,
// fentry or fexit probe on s.Symbol cannot be: a name the kernel has no
// function of (mistyped, or inlined into every caller, which leaves no
// symbol), or, for fentry and fexit, a function that ftrace cannot trace
// (notrace), which BPF trampolines need. Each error names close function
// names, and tracepoints with names close to it, or the kprobe that can
// still reach a notrace function. It checks nothing it cannot read (the
// kernel may hide kallsyms or the traceable list) and nothing for the
// expansions of a pattern, which come from the traceable list.
func (r *Resolver) checkKernelFunc(s *probespec.Spec) error {
	if s.Pattern != "" {
		return nil
	}
	if r.ksyms == nil {
		r.ksyms = host.KernelTextSymbols()
	}
	if r.ksyms != nil && !r.ksyms[s.Symbol] {
		names := make([]string, 0, len(r.ksyms))
		for n := range r.ksyms {
			names = append(names, n)
		}
		msg := fmt.Sprintf("the kernel has no function %s (not in %s: mistyped, or inlined into its callers, which leaves no function to probe)%s",
			s.Symbol, kallsyms.Path, host.HintFor(s.Symbol, names))
		if alt := host.RelatedTracepointsOf(s.Symbol, r.TracefsDir); alt != "" {
			msg += "; " + alt
		}
		return fmt.Errorf("%s", msg)
	}
	if s.Kind != probespec.Fentry && s.Kind != probespec.Fexit {
		return nil
	}
	dir, err := r.TracefsDir()
	if err != nil {
		return nil
	}
	fns, err := tracefs.Functions(dir)
	if err != nil {
		return nil
	}
	for _, fn := range fns {
		if fn.Name == s.Symbol {
			return nil
		}
	}
	return fmt.Errorf("%s attaches through ftrace, and %s is not traceable (not in available_filter_functions: notrace); a kprobe can still reach it: k:%s",
		s.Kind, s.Symbol, s.Symbol)
}
