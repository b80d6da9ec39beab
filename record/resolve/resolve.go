package resolve

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/humanfmt"
	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/record/ctypes"
	"github.com/bpftape/bpftape/record/elfsym"
	"github.com/bpftape/bpftape/record/host"
	"github.com/bpftape/bpftape/record/tracefs"
	"github.com/bpftape/bpftape/record/usdt"
)

// Probe is one resolved probe: what the capture says about it, and the
// attachments that feed it.
type Probe struct {
	Spec  *probespec.Spec
	Meta  format.Probe
	Class uint8 // bpf size class of its samples
	// StrSlot[i] is the string slot of field i, or -1 for an integer field.
	StrSlot []int8
	Atts    []Attachment
	// DebugFile is the separate debug file whose symbols located a
	// uprobe, "" if the binary's own did.
	DebugFile string
	// UStack and KStack are 1 + the index in Meta.Fields of the fields
	// that hold the user and kernel stack ids, 0 for none; entry is set for a
	// uprobe on a function's first instruction (bpf.SpecStackEntry).
	UStack, KStack int
	entry          bool
}

// Attachment is one place a probe's program is attached: a uprobe at a file
// offset of a binary (one per USDT site) or a tracepoint.
type Attachment struct {
	Path      string // uprobes
	KFunc     string // kprobes, fentry, fexit: the kernel function
	KprobeOff uint64 // kprobes: the offset into kfunc
	Pattern   string // kprobes of a pattern (k:vfs_*): the pattern, which may share a kprobe_multi link
	Tracing   bool   // fentry, fexit: a BPF tracing program on kfunc
	Addr      uint64 // file offset (uprobes)
	RefCtr    uint64 // USDT semaphore file offset, 0 if none
	Ret       bool   // uretprobe
	Hz        uint64 // profile: samples a second on each CPU
	Category  string // tracepoints
	Event     string
	TPEnd     uint32 // tracepoints: the record's end (tracefs.Format.End)
	Spec      bpf.ProbeSpec
	What      string // for errors: "uprobe ./virtnet:virtio_net_receive_rcu"
}

// ThreadBase reports whether the attachment reads a %fs: or %gs: operand,
// which needs bpf.Options.ThreadBases.
func (a *Attachment) ThreadBase() bool {
	for i := range int(a.Spec.Nargs) {
		if a.Spec.Args[i].Flags&(bpf.AddrFS|bpf.AddrGS) != 0 {
			return true
		}
	}
	return false
}

// Resolver turns parsed specs into probes, looking at binaries and tracefs.
type Resolver struct {
	PID       int // -p; 0 otherwise (a -c child has not run its binary yet)
	Warn      func(string)
	DebugDirs []string // where separate debug files are looked for
	tracefs   string   // found on first use
	usdtMemo  map[string][]usdt.Probe
	ksyms     map[string]bool // kernel function names (kallsyms), read on first use
	// ProcPredicate is the --pid/--comm predicate every probe gets, nil for
	// none (ProcessPredicate).
	ProcPredicate *probespec.Predicate
}

// Resolve resolves spec s into a probe named name, with its attachments
// and the fields it records.
func (r *Resolver) Resolve(s *probespec.Spec, name string) (*Probe, error) {
	p := &Probe{Spec: s, Meta: format.Probe{Name: name, Kind: s.Kind.String(), Spec: s.Text}}
	// Stack fields are no arguments: the kind's resolver sees the rest of
	// the list (an empty list when only stacks were asked for, which
	// records no argument), and they are added to every attachment.
	stacks, rest := splitStacks(s)
	if stacks != nil {
		c := *s
		c.Fields = rest
		p.Spec = &c
		defer func() { p.Spec = s }()
	}
	var err error
	switch s.Kind {
	case probespec.Uprobe, probespec.Uretprobe:
		err = r.uprobe(p)
	case probespec.USDT:
		err = r.usdt(p)
	case probespec.Tracepoint:
		err = r.tracepoint(p)
	case probespec.Kprobe, probespec.Kretprobe:
		err = r.kprobe(p)
	case probespec.Fentry, probespec.Fexit:
		err = r.fentry(p)
	case probespec.Profile:
		err = r.profile(p)
	default:
		err = fmt.Errorf("unknown probe kind %v", s.Kind)
	}
	if err == nil {
		err = p.addPredicate(both(s.Predicate, r.ProcPredicate))
	}
	if err == nil {
		p.addStacks(stacks)
		if keepsSelf(s) {
			for i := range p.Atts {
				p.Atts[i].Spec.Flags |= bpf.SpecKeepSelf
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", s.Text, err)
	}
	return p, nil
}

// keepsSelf reports whether a probe records the recorder's own events too
// (bpf.SpecKeepSelf), which the programs otherwise leave out:
//   - sched:sched_switch: the switch-in of a traced thread may be the
//     recorder's own switch-out (the program still leaves out a switch
//     between the recorder's threads and the idle task: see
//     bpf.SpecSelfSwitch, which tracepoint sets);
//   - the tracepoints that fire in interrupts (block, irq, napi): one that
//     interrupts the recorder runs as the recorder, though it is not
//     its doing. A block_rq_complete dropped so left an issue unpaired in
//     3 to 141 of 3000 requests (testdata/seed002/biolatency.sh). The
//     recorder's own disk writes are then recorded too: biolatency counts
//     every request of the disk.
func keepsSelf(s *probespec.Spec) bool {
	if s.Kind != probespec.Tracepoint {
		return false
	}
	switch s.Category {
	case "block", "irq", "napi":
		return true
	}
	return s.Category == "sched" && s.Event == "sched_switch"
}

// addPredicate compiles the probe's predicate into every attachment's spec
// and names it in the capture. It runs before the stack fields are added:
// a predicate compares the argument fields only.
func (p *Probe) addPredicate(f *probespec.Predicate) error {
	if f == nil {
		return nil
	}
	for i := range p.Atts {
		a := &p.Atts[i]
		if err := compilePredicate(f, p.Meta.Fields, int(a.Spec.Nargs), probespec.Params(&p.Meta), &a.Spec); err != nil {
			return err
		}
	}
	p.Meta.Filter = predicateText(f)
	return nil
}

// splitStacks separates a spec's stack fields from the others; a profile
// probe without a list records both stacks.
func splitStacks(s *probespec.Spec) (stacks, rest []probespec.Field) {
	if s.Kind == probespec.Profile && s.Fields == nil {
		return probespec.DefaultStacks(), []probespec.Field{}
	}
	for _, f := range s.Fields {
		if f.Source == probespec.Stack {
			stacks = append(stacks, f)
		} else {
			rest = append(rest, f)
		}
	}
	if stacks != nil && rest == nil {
		rest = []probespec.Field{}
	}
	return stacks, rest
}

// addStacks adds the stack fields after the argument fields and sets every
// attachment's depths.
func (p *Probe) addStacks(stacks []probespec.Field) {
	for _, f := range stacks {
		t := format.UserStack
		if f.Kernel {
			t = format.KernelStack
			p.KStack = 1 + len(p.Meta.Fields)
		} else {
			p.UStack = 1 + len(p.Meta.Fields)
		}
		p.addField(f.FieldName(), t)
		for i := range p.Atts {
			a := &p.Atts[i]
			if f.Kernel {
				a.Spec.Kstack = uint8(f.Depth)
			} else {
				a.Spec.Ustack = uint8(f.Depth)
				if p.entry {
					a.Spec.Flags |= bpf.SpecStackEntry
				}
			}
		}
	}
}

// profile resolves profile:hz:N: no arguments, one attachment that is a
// perf event on every CPU.
func (r *Resolver) profile(p *Probe) error {
	spec, err := p.ProbeSpec(nil)
	if err != nil {
		return err
	}
	p.Atts = []Attachment{{Hz: p.Spec.Hz, Spec: spec, What: fmt.Sprintf("profile at %d Hz", p.Spec.Hz)}}
	return nil
}

// TracefsDir returns the tracefs mount, found on first use.
func (r *Resolver) TracefsDir() (string, error) {
	if r.tracefs == "" {
		d, err := tracefs.Dir()
		if err != nil {
			return "", err
		}
		r.tracefs = d
	}
	return r.tracefs, nil
}

// binary resolves a probe's BINARY and fills in Target and BuildID. It
// returns the binary's architecture, and refuses a binary of another
// architecture than the host's (an arm64 program on an x86-64 host), which
// no probe here can trace; arch is nil for a file that is not ELF, which
// the caller's own reading refuses.
func (r *Resolver) binary(p *Probe) (path string, arch *bpf.Arch, err error) {
	path, err = elfsym.ResolveBinary(p.Spec.Binary, r.PID)
	if err != nil {
		return "", nil, err
	}
	if f, err := elfsym.Open(path); err == nil {
		m := f.Machine
		f.Close()
		if err := bpf.HostBinary(m); err != nil {
			return "", nil, fmt.Errorf("%s: %w", path, err)
		}
		arch, _ = bpf.ArchOf(m)
	}
	p.Meta.Target = path
	if id, err := elfsym.BuildID(path); err == nil {
		p.Meta.BuildID = id
	}
	return path, arch, nil
}

func (r *Resolver) uprobe(p *Probe) error {
	s := p.Spec
	path, arch, err := r.binary(p)
	if err != nil {
		return err
	}
	loc, err := elfsym.Locate(path, s.Symbol, r.DebugDirs)
	if err != nil {
		return err
	}
	if arch == nil {
		return fmt.Errorf("%s: cannot read its ELF header", path)
	}
	p.DebugFile = loc.DebugFile
	fields := s.Fields
	ret := s.Kind == probespec.Uretprobe
	p.entry = !ret && loc.Entry()
	if ret && !loc.Entry() {
		where := "no function symbol covers it"
		if loc.Func != "" {
			where = fmt.Sprintf("it is %s+%#x", loc.Func, loc.FuncOff)
		}
		return fmt.Errorf("a uretprobe goes on a function's entry, and %s is not one (%s): the return address is only %s there", s.Symbol, where, returnAddress(arch))
	}
	if loc.IFunc && loc.Entry() {
		impls := "the implementation it picks"
		if len(loc.Impls) > 0 {
			impls += " (" + strings.Join(loc.Impls, ", ") + ")"
		} else {
			impls += " (its debug symbols name them, such as __" + loc.Func + "_avx2 in glibc)"
		}
		r.Warn(fmt.Sprintf("%s: %s is an indirect function (IFUNC): its code is the resolver, which the dynamic linker calls once a process to choose the implementation that every call then runs; this probe sees the resolver, not the calls: probe %s",
			s.Text, loc.Func, impls))
	} else if loc.Resolves != "" && loc.Entry() {
		impls := "the implementation it picks"
		if len(loc.Impls) > 0 {
			impls += " (" + strings.Join(loc.Impls, ", ") + ")"
		}
		r.Warn(fmt.Sprintf("%s: %s is the resolver of the indirect function (IFUNC) %s, which the dynamic linker calls once a process to choose the implementation that every call then runs; this probe sees that choice, not the calls: probe %s",
			s.Text, loc.Func, loc.Resolves, impls))
	}
	if loc.Unverified != "" {
		r.Warn(fmt.Sprintf("%s: cannot check that %#x (file offset %#x) starts an instruction: %s; a breakpoint inside an instruction corrupts the traced program",
			s.Text, loc.Addr, loc.Offset, loc.Unverified))
	}
	var fn *ctypes.Func
	var src ctypes.Source
	if needsTypes(fields) {
		fn, src, err = r.userFunc(path, *loc, fields)
		if err != nil {
			return err
		}
	}
	args, err := p.regArgs(fields, ret, arch, fn, src, func(m string) { r.Warn(s.Text + ": " + m) })
	if err != nil {
		return err
	}
	for i := range args {
		if args[i].Leaf != bpf.LeafNone {
			// The traced program sets the pointers: user memory only.
			args[i].LeafFlags |= bpf.LeafUser
		}
	}
	if isGo(path) {
		if ret {
			r.Warn(fmt.Sprintf("%s: %s is a Go program: Go moves goroutine stacks, which breaks uretprobes (the kernel "+
				"rewrites the return address on the stack): the traced program may crash and return events may be missing", s.Text, path))
		} else {
			r.Warn(fmt.Sprintf("%s: %s is a Go program: %s", s.Text, path, goArgsNote(arch)))
		}
	}
	spec, err := p.ProbeSpec(args)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("%s %s:%s", s.Kind, path, s.Symbol)
	p.Atts = []Attachment{{Path: path, Addr: loc.Offset, Ret: ret, Spec: spec, What: what}}
	return nil
}

// returnAddress says where a function's return address is at its entry
// on arch.
func returnAddress(arch *bpf.Arch) string {
	if arch.LR != bpf.NoReg {
		return "in the link register " + arch.RegName(arch.LR)
	}
	return "on top of the stack"
}

// goArgsNote says how a Go function's arguments differ from argN on arch:
// argN reads the C calling convention's registers, and Go's internal ABI
// (ABIInternal) passes integer arguments in registers of its own.
func goArgsNote(arch *bpf.Arch) string {
	regs := make([]string, len(arch.Args))
	for i, r := range arch.Args {
		regs[i] = arch.RegName(r)
	}
	goRegs := "rax, rbx, rcx, rdi, rsi, r8, r9, r10, r11"
	if arch == bpf.ARM64 {
		goRegs = "x0 to x15 (R0-R15), a string or slice taking two or three of them"
	}
	return fmt.Sprintf("arg0..arg%d are the C ABI registers (%s); Go functions take their integer arguments in %s", len(regs)-1, strings.Join(regs, ", "), goRegs)
}

// defaultRegArgs is how many argN a uprobe or kprobe without a field list
// records: arg0..arg5, on every architecture.
const defaultRegArgs = 6

// regArgs turns the fields of a uprobe or kprobe on code of architecture
// arch (registers at entry, retval at return) into argument specs and the
// probe's fields; without fields, arg0..arg5 at entry and retval at
// return.
//
// With the function's types (fn, from DWARF or BTF; nil without), fields
// may name parameters and follow pointers, and the defaults are the
// parameters, named and typed, or retval typed by the return type.
func (p *Probe) regArgs(fields []probespec.Field, ret bool, arch *bpf.Arch, fn *ctypes.Func, src ctypes.Source, warn func(string)) ([]bpf.ArgSpec, error) {
	if fields == nil && fn != nil {
		fields = typedDefaults(fn, ret, warn)
	}
	if fields == nil {
		if ret {
			fields = []probespec.Field{{Text: "retval", Source: probespec.Retval, Type: format.Int64}}
		} else {
			for i := range defaultRegArgs {
				fields = append(fields, probespec.Field{Text: fmt.Sprintf("arg%d", i), Source: probespec.Arg, Arg: i, Type: format.Uint64})
			}
		}
	}
	var args []bpf.ArgSpec
	for _, f := range fields {
		if f.Source == probespec.Param || f.Steps != nil || f.Source == probespec.Retval && f.Type == format.TypeInvalid && fn != nil {
			a, fld, err := typedField(&f, ret, arch, fn, src)
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			p.Meta.Fields = append(p.Meta.Fields, fld)
			continue
		}
		var a bpf.ArgSpec
		reg := arch.Ret
		if f.Source == probespec.Arg {
			var err error
			if reg, err = argReg(arch, &f); err != nil {
				return nil, err
			}
		}
		switch {
		case f.Str:
			a = bpf.ArgSpec{Kind: bpf.KindUserStr, Reg: reg}
			p.addField(f.FieldName(), format.String)
		default:
			t := f.Type
			if t == format.TypeInvalid {
				t = format.Uint64
				if ret {
					t = format.Int64
				}
			}
			a = intArg(bpf.KindReg, reg, t)
			if ret {
				a.Kind, a.Reg = bpf.KindRetval, 0
			}
			p.addField(f.FieldName(), t)
		}
		args = append(args, a)
	}
	return args, nil
}

// kprobe resolves k:FUNC and kr:FUNC: one kprobe on a kernel function,
// recording its register arguments or its return value.
func (r *Resolver) kprobe(p *Probe) error {
	s := p.Spec
	if pmu, events := host.KernelKprobes(r.TracefsDir); !pmu && !events {
		return host.KprobeUnavailable(s, r.TracefsDir)
	}
	if err := r.checkKernelFunc(s); err != nil {
		return err
	}
	// The kernel is compiled for the host's calling convention.
	arch := bpf.HostArch()
	if arch == nil {
		return fmt.Errorf("kprobes read the kernel's registers by its calling convention, which bpftape knows on x86-64 and arm64 only: this is a %s build", runtime.GOARCH)
	}
	ret := s.Kind == probespec.Kretprobe
	var fn *ctypes.Func
	var src ctypes.Source
	// Only fields that ask for types get them: a kprobe's defaults stay
	// arg0..arg5 and retval, as in BCC and bpftrace.
	if s.Fields != nil && needsTypes(s.Fields) {
		if s.Offset != 0 {
			return fmt.Errorf("%w: parameters are where the ABI puts them only at the function's entry, and the probe is at %s+%#x: use argN",
				ErrExpr, s.Symbol, s.Offset)
		}
		var err error
		if fn, src, err = kernelFuncTypes(s.Symbol); err != nil {
			return err
		}
	}
	args, err := p.regArgs(s.Fields, ret, arch, fn, src, func(m string) { r.Warn(s.Text + ": " + m) })
	if err != nil {
		return err
	}
	// A kernel function's char * points into user memory (a syscall's
	// path) or the kernel's: the program picks by the address.
	for i := range args {
		if args[i].Kind == bpf.KindUserStr {
			args[i].Kind = bpf.KindAddrStr
		}
	}
	spec, err := p.ProbeSpec(args)
	if err != nil {
		return err
	}
	p.Meta.Target = "vmlinux"
	if fn, _, err := findKernelFunc(s.Symbol); err == nil && fn != nil && fn.Module != "" {
		p.Meta.Target = fn.Module // a module's function (where BTF says so)
	}
	what := fmt.Sprintf("%s %s", s.Kind, s.Symbol)
	if s.Offset != 0 {
		what += fmt.Sprintf("+%#x", s.Offset)
	}
	p.Atts = []Attachment{{KFunc: s.Symbol, KprobeOff: s.Offset, Pattern: s.Pattern, Ret: ret, Spec: spec, What: what}}
	return nil
}

func intArg(kind, reg uint8, t format.Type) bpf.ArgSpec {
	a := bpf.ArgSpec{Kind: kind, Reg: reg, Size: uint8(t.Size())}
	if t.Signed() {
		a.IsSigned = 1
	}
	return a
}

func (p *Probe) addField(name string, t format.Type) {
	p.Meta.Fields = append(p.Meta.Fields, format.Field{Name: name, Type: t})
}

// ProbeSpec checks the limits, assigns string slots in field order and
// picks the smallest size class that fits.
func (p *Probe) ProbeSpec(args []bpf.ArgSpec) (bpf.ProbeSpec, error) {
	var s bpf.ProbeSpec
	if len(args) > bpf.MaxArgs {
		return s, fmt.Errorf("%d fields: a probe records at most %d: list the ones you need", len(args), bpf.MaxArgs)
	}
	p.StrSlot = make([]int8, len(args))
	nstr := 0
	for i := range args {
		p.StrSlot[i] = -1
		if p.Meta.Fields[i].Type == format.String {
			if nstr == bpf.MaxStrs {
				return s, fmt.Errorf("more than %d string fields: list the ones you need", bpf.MaxStrs)
			}
			args[i].StrSlot = uint8(nstr)
			p.StrSlot[i] = int8(nstr)
			nstr++
		}
		s.Args[i] = args[i]
	}
	s.Nargs, s.Nstr = uint8(len(args)), uint8(nstr)
	class, ok := bpf.ClassFor(len(args), nstr > 0)
	if !ok {
		return s, fmt.Errorf("%d args: at most %d fit a sample", len(args), bpf.MaxArgs)
	}
	s.SizeClass = class
	p.Class = s.SizeClass
	return s, nil
}

func (r *Resolver) usdt(p *Probe) error {
	s := p.Spec
	path, _, err := r.binary(p)
	if err != nil {
		return err
	}
	if r.usdtMemo == nil {
		r.usdtMemo = map[string][]usdt.Probe{}
	}
	all, ok := r.usdtMemo[path]
	if !ok {
		if all, err = usdt.Read(path); err != nil {
			return err
		}
		r.usdtMemo[path] = all
	}
	up, err := usdt.Find(all, s.Provider, s.Probe)
	if err != nil {
		return err
	}
	full := up.Provider + ":" + up.Name
	if up.Err != nil {
		return fmt.Errorf("usdt probe %s in %s: cannot read its arguments: %w", full, path, up.Err)
	}
	sites := up.Sites
	if len(sites) == 0 {
		for _, loc := range up.Locations {
			sites = append(sites, usdt.Site{Location: loc, Args: up.Args})
		}
	}
	if len(sites) == 0 {
		return fmt.Errorf("usdt probe %s in %s has no locations", full, path)
	}
	fields := s.Fields
	if fields == nil {
		if len(up.Args) > bpf.MaxArgs {
			some := make([]string, bpf.MaxArgs)
			for i := range some {
				some[i] = fmt.Sprintf("arg%d", i)
			}
			return fmt.Errorf("usdt probe %s in %s has %d arguments, more than the %d a probe records: list the ones you need, e.g. '%s(%s)'",
				full, path, len(up.Args), bpf.MaxArgs, s.Target(), strings.Join(some, ","))
		}
		for i := range up.Args {
			fields = append(fields, probespec.Field{Text: fmt.Sprintf("arg%d", i), Source: probespec.Arg, Arg: i})
		}
	}
	for _, f := range fields {
		if f.Arg >= len(up.Args) {
			return fmt.Errorf("usdt probe %s has %s: no arg%d", full, humanfmt.Plural(uint64(len(up.Args)), "argument", "arguments"), f.Arg)
		}
		switch {
		case f.Str:
			p.addField(f.FieldName(), format.String)
		case f.Type != format.TypeInvalid:
			p.addField(f.FieldName(), f.Type)
		default:
			a := up.Args[f.Arg]
			t, err := USDTArgType(a)
			if err != nil {
				return fmt.Errorf("usdt probe %s arg%d (%s): %w", full, f.Arg, a.Text, err)
			}
			p.addField(f.FieldName(), t)
		}
	}
	for _, site := range sites {
		if site.Err != nil {
			return fmt.Errorf("usdt probe %s in %s, site %#x: cannot read its arguments: %w", full, path, site.Location, site.Err)
		}
		if len(site.Args) != len(up.Args) {
			return fmt.Errorf("usdt probe %s: site %#x has %d arguments, another has %d", full, site.Location, len(site.Args), len(up.Args))
		}
		var args []bpf.ArgSpec
		for _, f := range fields {
			a := site.Args[f.Arg]
			var bs bpf.ArgSpec
			if f.Str {
				bs, err = a.BPFString(0) // slot assigned by probeSpec
			} else {
				bs, err = a.BPF()
			}
			if err != nil {
				return fmt.Errorf("usdt probe %s at %#x, arg%d: %w", full, site.Location, f.Arg, err)
			}
			args = append(args, bs)
		}
		spec, err := p.ProbeSpec(args)
		if err != nil {
			return err
		}
		p.Atts = append(p.Atts, Attachment{Path: path, Addr: site.Location, RefCtr: up.Semaphore, Spec: spec,
			What: fmt.Sprintf("usdt %s:%s at %#x", path, full, site.Location)})
	}
	return nil
}

func (r *Resolver) tracepoint(p *Probe) error {
	s := p.Spec
	dir, err := r.TracefsDir()
	if err != nil {
		return err
	}
	tf, err := tracefs.ReadFormat(dir, s.Category, s.Event)
	if err != nil {
		return err
	}
	var args []bpf.ArgSpec
	add := func(f *tracefs.Field, str bool, typ format.Type, explicit bool) error {
		a := bpf.ArgSpec{Off: int64(f.Offset)}
		t := format.String
		switch {
		case f.Kind == tracefs.CharArray:
			a.Kind, a.Size = bpf.KindTPCharArray, uint8(min(f.Size, bpf.StrSlotSize))
		case f.Kind == tracefs.DataLoc:
			a.Kind = bpf.KindTPDataLocStr
		case f.Kind == tracefs.Int && str:
			if f.Size != 8 {
				return fmt.Errorf("str(%s): field %s is a %d-byte %s, not a pointer", f.Name, f.Name, f.Size, f.CType)
			}
			a.Kind = bpf.KindTPUserStr
		case f.Kind == tracefs.Int:
			ft := TracepointFieldType(f)
			if ft == format.TypeInvalid {
				return fmt.Errorf("field %s (%s): a %d-byte integer: bpftape records 1, 2, 4 or 8 bytes", f.Name, f.CType, f.Size)
			}
			a = intArg(bpf.KindTPField, 0, ft)
			a.Off = int64(f.Offset)
			t = ft
			if typ != format.TypeInvalid {
				t = typ
			}
		default:
			if explicit {
				return fmt.Errorf("field %s (%s, %d bytes) is neither an integer nor a string: bpftape cannot record it", f.Name, f.CType, f.Size)
			}
			r.Warn(fmt.Sprintf("%s: skipping field %s (%s, %d bytes): neither an integer nor a string", s.Text, f.Name, f.CType, f.Size))
			return nil
		}
		if t == format.String && typ != format.TypeInvalid {
			return fmt.Errorf("field %s (%s) is a string: it takes no integer type", f.Name, f.CType)
		}
		args = append(args, a)
		p.addField(f.Name, t)
		return nil
	}
	if s.Fields == nil {
		for i := range tf.Fields {
			if err := add(&tf.Fields[i], false, format.TypeInvalid, false); err != nil {
				return err
			}
		}
		nstr := 0
		for _, f := range p.Meta.Fields {
			if f.Type == format.String {
				nstr++
			}
		}
		if len(args) > bpf.MaxArgs || nstr > bpf.MaxStrs {
			return fmt.Errorf("tracepoint %s:%s has %d fields (%d strings); a probe records at most %d (%d strings): list the ones you need, e.g. t:%s:%s(%s)",
				s.Category, s.Event, len(args), nstr, bpf.MaxArgs, bpf.MaxStrs, s.Category, s.Event, strings.Join(tf.FieldNames()[:2], ","))
		}
	} else {
		for _, lf := range s.Fields {
			f := tf.Field(lf.Name)
			if f == nil {
				return fmt.Errorf("tracepoint %s:%s has no field %q%s; its fields: %s", s.Category, s.Event, lf.Name,
					host.HintFor(lf.Name, tf.FieldNames()), strings.Join(tf.FieldNames(), ", "))
			}
			if err := add(f, lf.Str, lf.Type, true); err != nil {
				return err
			}
		}
	}
	spec, err := p.ProbeSpec(args)
	if err != nil {
		return err
	}
	if f := tf.Field("next_pid"); s.Category == "sched" && s.Event == "sched_switch" && f != nil &&
		f.Kind == tracefs.Int && f.Size == 4 && f.Offset%4 == 0 && f.Offset <= bpf.MaxNextTidOff {
		// The recorder's own switches, and the idle task's with it, are
		// left out: see bpf.SpecSelfSwitch.
		spec.Flags |= bpf.SpecSelfSwitch
		spec.NextTidOff = uint16(f.Offset)
	}
	p.Meta.Target = s.Category + ":" + s.Event
	p.Atts = []Attachment{{Category: s.Category, Event: s.Event, TPEnd: uint32(tf.End()), Spec: spec, What: "tracepoint " + s.Category + ":" + s.Event}}
	return nil
}

// isGo reports whether the ELF file at path is a Go program.
func isGo(path string) bool {
	f, err := elfsym.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return f.Section(".go.buildinfo") != nil || f.Section(".gopclntab") != nil
}
