package resolve

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/record/ctypes"
	"github.com/bpftape/bpftape/record/elfsym"
	"github.com/bpftape/bpftape/record/host"
	"github.com/bpftape/bpftape/record/tracefs"
	"github.com/bpftape/bpftape/record/usdt"
)

// This file is the listing policy behind `bpftape list`: what Record can
// attach to, each as the probe spec that attaches to it, and which names a
// glob selects. The caller prints.

// Glob selects the names a listing shows, as bpftrace -l does (the FILTER
// of `bpftape list`). A glob with wildcards (*, ?, [...]) and a ':' matches
// the whole name (PROVIDER:PROBE, FUNCTION, CATEGORY:EVENT), one without a
// ':' the last part alone (the probe, function or event). A glob without a
// wildcard selects that exact name or last part, or every event of the
// tracepoint category it names. The empty glob selects everything.
type Glob struct {
	text string
	wild bool
}

// ParseGlob checks a glob: a malformed one is a usage error.
func ParseGlob(text string) (Glob, error) {
	g := Glob{text: text, wild: strings.ContainsAny(text, "*?[")}
	if g.wild {
		if _, err := path.Match(text, ""); err != nil {
			return Glob{}, usage.Errorf("bad filter %q: %w", text, err)
		}
	}
	return g, nil
}

// String returns the glob as given.
func (g Glob) String() string { return g.text }

// match reports whether a name matches the glob: whole is the full name,
// last its last part, and group a category an exact glob selects in full
// ("" if the name has none).
func (g Glob) match(whole, last, group string) bool {
	switch {
	case g.text == "":
		return true
	case g.wild && strings.Contains(g.text, ":"):
		ok, _ := path.Match(g.text, whole)
		return ok
	case g.wild:
		ok, _ := path.Match(g.text, last)
		return ok
	}
	return g.text == whole || g.text == last || (group != "" && g.text == group)
}

// ListQuery says what List lists.
type ListQuery struct {
	// Target is a binary or library, named as a probe's BINARY (its USDT
	// probes and functions); "tracepoint" or "t" (kernel tracepoints); or
	// "" (the USDT probes of the files PID maps when PID is set, else
	// kernel tracepoints). Without a Glob or PID, a Target without '/'
	// that names no binary is a tracepoint glob.
	Target string
	Glob   string
	// PID resolves Target among the files the process maps.
	PID int
	// USDT and Functions say what a binary lists; neither means both.
	USDT, Functions bool
	// TracepointFields reads each listed tracepoint's fields.
	TracepointFields bool
	// FunctionTypes reads each listed function's prototype from the
	// binary's DWARF or its debug file (the Target binary's only; the
	// DWARF is read once, and only for the functions the glob keeps).
	FunctionTypes bool
	// DebugDirs are where a stripped binary's debug file is looked for
	// (see elfsym.DebugDirs).
	DebugDirs []string
}

// Listing is what List found.
type Listing struct {
	// Glob is the glob applied: the query's, or its Target taken as a
	// tracepoint glob.
	Glob Glob
	// Binaries holds the Target binary, or each file the PID maps that
	// has USDT probes.
	Binaries    []ListedBinary
	Tracepoints []ListedTracepoint
	// KernelFuncs are the traceable kernel functions of a k:, kr:, f: or
	// fr: Target.
	KernelFuncs []ListedKernelFunc
	// AlsoCategory is set when the Target, a bare word, names both a
	// program and a tracepoint category: the program is listed.
	AlsoCategory bool
}

// Len returns how many probes the listing holds.
func (l *Listing) Len() int {
	n := len(l.Tracepoints) + len(l.KernelFuncs)
	for i := range l.Binaries {
		n += len(l.Binaries[i].USDT) + len(l.Binaries[i].Functions)
	}
	return n
}

// ListedBinary is what a listing holds of one binary.
type ListedBinary struct {
	Path string
	// BuildID is the Target binary's, "" if it has none (and for the
	// files a process maps).
	BuildID string
	USDT    []ListedUSDT
	// Functions come from the binary's symbols, or from the separate
	// debug file DebugFile of a stripped binary.
	Functions []ListedFunction
	DebugFile string
	// TypesErr, with ListQuery.FunctionTypes, says why the functions have
	// no prototypes: the binary has no DWARF and no debug file has it.
	TypesErr error
}

// ListedUSDT is a USDT probe with all its sites: USDTArgType says how each
// argument is recorded.
type ListedUSDT struct {
	Spec string // usdt:BINARY:PROVIDER:PROBE
	usdt.Probe
	// TooManyArgs is set when the probe has more arguments than a probe
	// records (probespec.MaxFields): its spec must name the ones to record.
	TooManyArgs bool
}

// ListedFunction is a function a uprobe attaches to: with its prototype,
// as the probe spec with the parameters a uprobe records by default, so
// that the line pastes as it is and can be trimmed.
type ListedFunction struct {
	Spec string // uprobe:BINARY:FUNCTION, uprobe:BINARY:FUNCTION(PARAM,...)
	elfsym.Func
	// Proto is the function as the DWARF declares it, with where each
	// parameter is at its entry; nil without ListQuery.FunctionTypes, or
	// when the DWARF does not describe the function.
	Proto *ctypes.Func
}

// ListedTracepoint is a kernel tracepoint: TracepointFieldType says how each
// field is recorded.
type ListedTracepoint struct {
	Spec string // tracepoint:CATEGORY:EVENT
	Name string // CATEGORY:EVENT
	// Fields are read with ListQuery.TracepointFields; FormatErr is why
	// they could not be.
	Fields    []tracefs.Field
	FormatErr error
}

// ListedKernelFunc is a traceable kernel function, as the probe spec of
// the kind asked for: for fentry and fexit with the fields they record by
// default, so that the line pastes as it is and can be trimmed.
type ListedKernelFunc struct {
	Spec   string // k:FUNC, kr:FUNC, f:FUNC(PARAM,...), fr:FUNC(PARAM,...,retval)
	Name   string
	Module string // "" for vmlinux
	// Func is the function as its BTF declares it, nil without BTF.
	Func *KernelFunc
}

// USDTArgType returns the type Record gives a USDT argument a probe spec
// names without a TYPE: the argument's size and sign.
func USDTArgType(a usdt.Arg) (format.Type, error) {
	return format.IntType(a.Size, a.Signed)
}

// TracepointFieldType returns the type Record gives a tracepoint field a
// probe spec names without str() or a TYPE, or that it records by default:
// integers (pointers too) their size and sign, char arrays and __data_loc
// strings String. It is TypeInvalid for a field Record cannot record.
func TracepointFieldType(f *tracefs.Field) format.Type {
	switch f.Kind {
	case tracefs.Int:
		t, err := format.IntType(f.Size, f.Signed)
		if err != nil {
			return format.TypeInvalid
		}
		return t
	case tracefs.CharArray, tracefs.DataLoc:
		return format.String
	}
	return format.TypeInvalid
}

// List returns what q asks for. It fails if the Target is neither a binary
// nor a tracepoint glob, and with a usage error for a malformed glob; a
// glob that matches nothing is an empty listing.
func List(q ListQuery) (*Listing, error) {
	if !q.USDT && !q.Functions {
		q.USDT, q.Functions = true, true
	}
	l := &Listing{}
	var err error
	if l.Glob, err = ParseGlob(q.Glob); err != nil {
		return nil, err
	}
	if kind, pattern, ok := kernelTarget(q.Target); ok {
		if q.Glob != "" {
			return nil, usage.Errorf("%s takes no FILTER: put the pattern in it (k:vfs_*)", q.Target)
		}
		if err := kernelKindUnavailable(kind, pattern); err != nil {
			return nil, fmt.Errorf("%s: %w", q.Target, err)
		}
		return l, l.kernelFuncs(kind, pattern)
	}
	switch {
	case q.Target == "tracepoint" || q.Target == "t":
		return l, l.tracepoints(q.TracepointFields)
	case q.Target == "" && q.PID != 0:
		return l, l.mapped(q.PID)
	case q.Target == "":
		return l, l.tracepoints(q.TracepointFields)
	}
	bin, rerr := elfsym.ResolveBinary(q.Target, q.PID)
	bare := q.Glob == "" && !strings.Contains(q.Target, "/")
	switch {
	case rerr == nil && isELFFile(bin):
		l.AlsoCategory = bare && isCategory(q.Target)
		return l, l.binary(bin, q)
	case bare && q.PID == 0:
		if l.Glob, err = ParseGlob(q.Target); err != nil {
			return nil, err
		}
		if err := l.tracepoints(q.TracepointFields); err != nil {
			return nil, err
		}
		if len(l.Tracepoints) == 0 && rerr != nil {
			return nil, fmt.Errorf("no tracepoint matches %q, and it names no binary: %w", q.Target, rerr)
		}
		return l, nil
	case rerr != nil:
		return nil, rerr
	}
	return nil, fmt.Errorf("%s is not an ELF file", bin)
}

// binary lists a binary's USDT probes and functions.
func (l *Listing) binary(bin string, q ListQuery) error {
	b := ListedBinary{Path: bin}
	if id, err := elfsym.BuildID(bin); err == nil {
		b.BuildID = id
	}
	if q.USDT {
		probes, err := usdt.Read(bin)
		if err != nil {
			return err
		}
		b.USDT = l.usdtProbes(bin, probes)
	}
	if q.Functions {
		fns, debug, err := elfsym.Functions(bin, q.DebugDirs)
		if err != nil {
			return err
		}
		b.DebugFile = debug
		for _, f := range fns {
			if l.Glob.match(f.Name, f.Name, "") {
				b.Functions = append(b.Functions, ListedFunction{Spec: "uprobe:" + bin + ":" + f.Name, Func: f})
			}
		}
		if q.FunctionTypes && len(b.Functions) > 0 {
			b.TypesErr = functionTypes(bin, q.DebugDirs, b.Functions)
		}
	}
	l.Binaries = append(l.Binaries, b)
	return nil
}

// functionTypes reads the prototypes of fns from the DWARF of bin or of its
// debug file, and gives each spec the parameters a uprobe on it records by
// default. The DWARF is opened once; its error is returned, and leaves the
// functions as they are.
func functionTypes(bin string, dirs []string, fns []ListedFunction) error {
	b, err := ctypes.OpenBinary(bin, dirs)
	if err != nil {
		return err
	}
	for i := range fns {
		f := &fns[i]
		if !b.HasFunc(f.Name) {
			continue // assembly, or a unit built without -g
		}
		proto, err := b.Func(f.Name)
		if err != nil {
			continue
		}
		f.Proto = proto
		var names []string
		for _, p := range typedDefaults(proto, false, func(string) {}) {
			names = append(names, p.Name)
		}
		spec := f.Spec + "(" + strings.Join(names, ",") + ")"
		if _, err := probespec.Parse(spec); len(names) > 0 && err == nil {
			f.Spec = spec // not a Go program's ~r0, which no spec can name
		}
	}
	return nil
}

// ParamRegister returns N of the argN that reads parameter p whole (the
// Nth integer argument register at the function's entry, by the calling
// convention of the function's architecture), or -1 when no argN does: a
// parameter on the stack, in two registers, passed by reference or in a
// floating-point register.
func ParamRegister(p *ctypes.Param) int { return regIndex(p) }

// usdtProbes returns the probes of bin that match the glob.
func (l *Listing) usdtProbes(bin string, probes []usdt.Probe) []ListedUSDT {
	var out []ListedUSDT
	for _, p := range probes {
		if !l.Glob.match(p.String(), p.Name, "") {
			continue
		}
		out = append(out, ListedUSDT{
			Spec:        "usdt:" + bin + ":" + p.Provider + ":" + p.Name,
			Probe:       p,
			TooManyArgs: p.Err == nil && len(p.Args) > probespec.MaxFields,
		})
	}
	return out
}

// mapped lists the USDT probes of every ELF file process pid maps.
func (l *Listing) mapped(pid int) error {
	files, err := elfsym.MappedFiles(pid)
	if err != nil {
		return fmt.Errorf("process %d: %w", pid, err)
	}
	for _, p := range files {
		if !isELFFile(p) {
			continue
		}
		probes, err := usdt.Read(p)
		if err != nil || len(probes) == 0 {
			continue // a file without notes, or with notes usdt cannot read: nothing to attach to
		}
		l.Binaries = append(l.Binaries, ListedBinary{Path: p, USDT: l.usdtProbes(p, probes)})
	}
	return nil
}

// tracepoints lists the kernel tracepoints that match the glob, with
// their fields if asked.
func (l *Listing) tracepoints(fields bool) error {
	dir, err := tracefs.Dir()
	if err != nil {
		return err
	}
	names, err := tracefs.List(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		cat, ev, _ := strings.Cut(n, ":")
		if !l.Glob.match(n, ev, cat) {
			continue
		}
		tp := ListedTracepoint{Spec: "tracepoint:" + n, Name: n}
		if fields {
			f, err := tracefs.ReadFormat(dir, cat, ev)
			if err != nil {
				tp.FormatErr = err
			} else {
				tp.Fields = f.Fields
			}
		}
		l.Tracepoints = append(l.Tracepoints, tp)
	}
	return nil
}

// isCategory reports whether name is a tracepoint category.
func isCategory(name string) bool {
	dir, err := tracefs.Dir()
	if err != nil {
		return false
	}
	st, err := os.Stat(filepath.Join(dir, "events", name))
	return err == nil && st.IsDir()
}

// isELFFile reports whether path is a readable ELF file.
func isELFFile(path string) bool {
	f, err := elfsym.Open(path)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// kernelTarget parses a list Target of the kernel function kinds: k:PATTERN,
// kretprobe:PATTERN, f:PATTERN, fexit:PATTERN... (a bare k: lists them all).
func kernelTarget(target string) (probespec.Kind, string, bool) {
	prefix, pattern, ok := strings.Cut(target, ":")
	if !ok || strings.Contains(pattern, ":") {
		return 0, "", false
	}
	kinds := map[string]probespec.Kind{
		"k": probespec.Kprobe, "kprobe": probespec.Kprobe, "kr": probespec.Kretprobe, "kretprobe": probespec.Kretprobe,
		"f": probespec.Fentry, "fentry": probespec.Fentry, "fr": probespec.Fexit, "fexit": probespec.Fexit,
	}
	kind, ok := kinds[prefix]
	if pattern == "" {
		pattern = "*"
	}
	return kind, pattern, ok
}

// kernelKindUnavailable says why this kernel cannot record probes of kind
// on the functions pattern matches, in the words record and doctor use, or
// returns nil when it can: a kernel without kprobes, or one that does not
// load the BPF tracing programs of fentry and fexit (asked of doctor's
// function, as the pattern may match none).
func kernelKindUnavailable(kind probespec.Kind, pattern string) error {
	s := &probespec.Spec{Kind: kind, Symbol: pattern}
	switch kind {
	case probespec.Kprobe, probespec.Kretprobe:
		if !host.KprobesPresent(tracefs.Dir) {
			return host.KprobeUnavailable(s, tracefs.Dir)
		}
	case probespec.Fentry, probespec.Fexit:
		// Without the privileges to load a program, or the memory to
		// (RLIMIT_MEMLOCK before 5.11), the answer would be about this
		// process, not the kernel.
		if host.CheckPrivileges() != nil || host.RaiseMemlock() != nil {
			return nil
		}
		if err := host.TracingUnavailable(&probespec.Spec{Kind: kind, Symbol: host.DoctorFunc}); err != nil {
			return fmt.Errorf("%w; %s", err, host.FuncAlternative(s, tracefs.Dir))
		}
	}
	return nil
}

// kernelFuncs lists the traceable kernel functions that match pattern
// (available_filter_functions, as a wildcard probe expands), with their
// BTF declarations; fentry and fexit list only functions with BTF.
func (l *Listing) kernelFuncs(kind probespec.Kind, pattern string) error {
	dir, err := tracefs.Dir()
	if err != nil {
		return err
	}
	fns, err := tracefs.Functions(dir)
	if err != nil {
		return err
	}
	short := map[probespec.Kind]string{probespec.Kprobe: "k", probespec.Kretprobe: "kr", probespec.Fentry: "f", probespec.Fexit: "fr"}[kind]
	tracing := kind == probespec.Fentry || kind == probespec.Fexit
	for _, fn := range fns {
		if fn.Dups > 0 || !probespec.MatchFunc(pattern, fn.Name) {
			continue
		}
		kf, _ := LookupKernelFunc(fn.Name)
		if tracing && kf == nil {
			continue
		}
		spec := short + ":" + fn.Name
		if tracing {
			var fields []string
			for _, p := range kf.Params {
				if p.Value.Size != 0 {
					fields = append(fields, p.Name)
				}
			}
			if kind == probespec.Fexit && kf.Ret.Size != 0 {
				fields = append(fields, "retval")
			}
			if len(fields) > 0 && len(fields) <= probespec.MaxFields {
				spec += "(" + strings.Join(fields, ",") + ")"
			}
		}
		l.KernelFuncs = append(l.KernelFuncs, ListedKernelFunc{Spec: spec, Name: fn.Name, Module: fn.Module, Func: kf})
	}
	return nil
}
