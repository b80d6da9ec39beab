//go:build linux && (amd64 || arm64)

package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/record/ctypes"
	"github.com/bpftape/bpftape/record/elfsym"
	"github.com/bpftape/bpftape/record/resolve"
	"github.com/bpftape/bpftape/record/usdt"
)

func init() {
	register("list", listSummary, runList)
}

const listHelp = `
Lists what 'bpftape record' can attach to, one probe spec per line in
record's syntax, with details after a '#' (a shell comment: a line pastes
into a command line as it is):

  TARGET, a binary or library (a path, a program on PATH, or a library name
  such as libc, resolved like record's BINARY): its USDT probes with their
  call sites and semaphore (-v: each site's argument operands and the type
  each is recorded as), then its functions (from .symtab and .dynsym, or
  the debug file of a stripped binary) with their addresses, which
  u:BINARY:ADDRESS takes as they are printed (-v: each function's
  prototype from DWARF, as the spec with the parameters a uprobe records
  by default, and where each parameter is: its argN).
  No TARGET, or TARGET 'tracepoint' (or 't'): kernel tracepoints (-v: their
  fields and recorded types).
  No TARGET with -p PID: the USDT probes of every file PID has mapped.
  k:PATTERN, kr:, f: or fr: (kprobe:, fentry:...): the traceable kernel
  functions that match PATTERN (available_filter_functions, as record
  expands a pattern) with their BTF declarations; as f: and fr: specs
  with the parameters fentry and fexit record by default (-v: each
  parameter's argN and type).

FILTER keeps names matching it, as bpftrace -l does: a glob (*, ?, [...])
matched against the whole name (PROVIDER:PROBE, FUNCTION, CATEGORY:EVENT; a
glob without ':' against the probe, function or event alone); without a
wildcard, only that exact name (or, for tracepoints, every event of that
category). A single argument that names no binary is a tracepoint FILTER;
one that names both a program on PATH and a tracepoint category lists the
program and says so.

Examples:
  bpftape list ./virtnet                  # USDT probes and functions
  bpftape list -v libc 'memcpy*'          # libc's memcpy variants
  bpftape list -p $(pidof qemu-system-x86_64) --usdt
  bpftape list -v syscalls:sys_exit_write # a tracepoint and its fields
  bpftape list tracepoint 'sched:*'
  bpftape list 'k:vfs_*'                  # kernel functions for kprobes
  bpftape list -v f:vfs_read              # vfs_read's parameters, as fentry records them

Exit status: 0 when something is listed, 1 when nothing matches or on a
failure, 2 on a usage error.
`

func runList(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("list", "[-v] [-p PID] [--usdt | --funcs] [--debug-dir DIR] [TARGET] [FILTER]", listHelp, stdout)
	var q resolve.ListQuery
	verbose := fs.Bool("v", false, "verbose: argument operands and recorded types of USDT sites, function prototypes, tracepoint fields")
	fs.IntVar(&q.PID, "p", 0, "resolve TARGET among the files process `PID` has mapped; without TARGET list their USDT probes")
	fs.BoolVar(&q.USDT, "usdt", false, "list only USDT probes")
	fs.BoolVar(&q.Functions, "funcs", false, "list only functions")
	var debugDirs stringList
	fs.Var(&debugDirs, "debug-dir", "look for separate debug files of stripped binaries in `DIR` (repeatable)")
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return fail(stderr, "list", err)
	}
	if len(pos) > 2 {
		return fail(stderr, "list", usage.Errorf("want [TARGET] [FILTER], got %d arguments", len(pos)))
	}
	if q.PID < 0 {
		return fail(stderr, "list", usage.Errorf("-p %d", q.PID))
	}
	q.DebugDirs = elfsym.DebugDirs(debugDirs)
	q.TracepointFields = *verbose
	q.FunctionTypes = *verbose
	if len(pos) > 0 {
		q.Target = pos[0]
	}
	if len(pos) > 1 {
		q.Glob = pos[1]
	}
	l, err := resolve.List(q)
	if err != nil {
		return fail(stderr, "list", err)
	}
	if l.AlsoCategory {
		fmt.Fprintf(stderr, "bpftape list: %q is the program %s and a tracepoint category: listing the program; 'bpftape list tracepoint %s' lists the tracepoints\n",
			q.Target, l.Binaries[0].Path, q.Target)
	}
	p := &listPrinter{w: bufio.NewWriter(stdout), verbose: *verbose}
	p.listing(l)
	if err := p.w.Flush(); err != nil {
		return fail(stderr, "list", err)
	}
	if l.Len() == 0 {
		what := "nothing to list"
		if f := l.Glob.String(); f != "" {
			what = fmt.Sprintf("nothing matches %q", f)
		}
		fmt.Fprintf(stderr, "bpftape list: %s\n", what)
		return exitFailure
	}
	return exitOK
}

// listPrinter prints a listing: one probe spec per line, details after a
// '#' with the comments of a group aligned.
type listPrinter struct {
	w       *bufio.Writer
	verbose bool
	pending []listLine // lines of the current group, printed aligned by flush
}

// listLine is one listed probe: its spec, a comment, and detail lines.
type listLine struct {
	spec, comment string
	details       []string
}

func (p *listPrinter) listing(l *resolve.Listing) {
	for i := range l.Binaries {
		p.binary(&l.Binaries[i])
	}
	for _, tp := range l.Tracepoints {
		var details []string
		if p.verbose {
			if tp.FormatErr != nil {
				details = append(details, fmt.Sprintf("(format unreadable: %v)", tp.FormatErr))
			}
			for _, f := range tp.Fields {
				as := probespec.TypeName(resolve.TracepointFieldType(&f))
				if as == "" {
					as = "not recorded"
				}
				details = append(details, fmt.Sprintf("%s: %s (%s)", f.Name, as, f.CType))
			}
		}
		p.add(tp.Spec, "", details...)
	}
	p.flush()
	for _, kf := range l.KernelFuncs {
		comment := "no BTF"
		var details []string
		if kf.Func != nil {
			comment = kf.Func.Signature()
			if p.verbose {
				for i, prm := range kf.Func.Params {
					details = append(details, fmt.Sprintf("arg%d: %s (%s)", i, prm.Name, prm.Type))
				}
			}
		}
		if kf.Module != "" {
			comment += " [" + kf.Module + "]"
		}
		p.add(kf.Spec, comment, details...)
	}
	p.flush()
}

// binary prints a binary's header, its USDT probes and its functions.
func (p *listPrinter) binary(b *resolve.ListedBinary) {
	header := "# " + b.Path
	if b.BuildID != "" {
		header += " (build id " + b.BuildID + ")"
	}
	p.printf("%s\n", header)
	for i := range b.USDT {
		p.usdt(&b.USDT[i])
	}
	p.flush()
	if b.DebugFile != "" {
		p.printf("# functions from its debug file %s\n", b.DebugFile)
	}
	if b.TypesErr != nil {
		p.printf("# no parameter types: %s\n", noTypesReason(b.TypesErr))
	}
	for i := range b.Functions {
		p.function(&b.Functions[i])
	}
	p.flush()
}

// function queues a function: its address and size, and its prototype
// when the DWARF gives it, with -v each parameter's argN and type.
func (p *listPrinter) function(f *resolve.ListedFunction) {
	comment := fmt.Sprintf("%#x", f.Addr)
	if f.Size > 0 {
		comment += fmt.Sprintf(", %d bytes", f.Size)
	}
	if f.IFunc {
		// Its address is the resolver's, which runs once as the
		// library loads: say so before a prototype of the function.
		comment += "; IFUNC: the probe traces the resolver"
		if len(f.Impls) > 0 {
			comment += ", probe " + strings.Join(f.Impls, " or ")
		}
	} else if f.Resolves != "" {
		// A resolver under a name of its own (glibc's memchr_ifunc).
		comment += "; the resolver of IFUNC " + f.Resolves + ": runs once a process"
		if len(f.Impls) > 0 {
			comment += ", probe " + strings.Join(f.Impls, " or ")
		}
	}
	if f.Proto == nil {
		p.add(f.Spec, comment)
		return
	}
	comment += "; " + f.Proto.Signature()
	var details []string
	if p.verbose {
		for i := range f.Proto.Params {
			details = append(details, paramDetail(&f.Proto.Params[i]))
		}
	}
	p.add(f.Spec, comment, details...)
}

// paramDetail says where a uprobe finds a parameter at the function's
// entry: "arg0: req (struct request *)" for one an argN reads whole, else
// where it is and why the spec leaves it out.
func paramDetail(prm *ctypes.Param) string {
	name := fmt.Sprintf("%s (%s)", prm.ArgName(), prm.Type)
	switch n := resolve.ParamRegister(prm); {
	case prm.Err != nil:
		return fmt.Sprintf("%s: not recorded: %v", name, prm.Err)
	case !prm.Type.IsInteger() && (prm.Type.Kind == ctypes.Struct || prm.Type.Kind == ctypes.Union):
		return fmt.Sprintf("%s at %s: not recorded by default: name its members", name, prm.Loc)
	case !prm.Type.IsInteger():
		return fmt.Sprintf("%s at %s: not recorded by default", name, prm.Loc)
	case n < 0:
		return fmt.Sprintf("%s at %s", name, prm.Loc)
	default:
		return fmt.Sprintf("arg%d: %s", n, name)
	}
}

// noTypesReason is why a binary's functions have no prototypes, without
// the package prefixes of its error.
func noTypesReason(err error) string {
	return strings.NewReplacer("ctypes: ", "", "elfsym: ", "").Replace(err.Error())
}

// usdt queues a USDT probe: its sites, arguments and semaphore, and with
// -v each site's operands and the type each is recorded as.
func (p *listPrinter) usdt(u *resolve.ListedUSDT) {
	var addrs []string
	for _, s := range u.Sites {
		addrs = append(addrs, fmt.Sprintf("%#x", s.Addr))
	}
	sites := "1 site"
	if len(u.Sites) != 1 {
		sites = fmt.Sprintf("%d sites", len(u.Sites))
	}
	args := fmt.Sprintf("%d args", len(u.Args))
	switch {
	case u.Err != nil:
		args = "arguments unreadable"
	case len(u.Args) == 1:
		args = "1 arg"
	case u.TooManyArgs:
		args += fmt.Sprintf(" (a probe records at most %d: name them)", probespec.MaxFields)
	}
	sema := ""
	if u.Semaphore != 0 {
		sema = fmt.Sprintf("; semaphore %#x", u.SemaphoreAddr)
	}
	var details []string
	if p.verbose {
		for _, s := range u.Sites {
			if s.Err != nil {
				details = append(details, fmt.Sprintf("at %#x: %s: %v", s.Addr, s.ArgsText, s.Err))
				continue
			}
			var parts []string
			for k, a := range s.Args {
				parts = append(parts, fmt.Sprintf("arg%d:%s=%s", k, usdtArgTypeName(a), a.Text))
			}
			if len(parts) == 0 {
				parts = []string{"no arguments"}
			}
			details = append(details, fmt.Sprintf("at %#x: %s", s.Addr, strings.Join(parts, " ")))
		}
	}
	p.add(u.Spec, fmt.Sprintf("%s: %s; %s%s", sites, strings.Join(addrs, ", "), args, sema), details...)
}

// usdtArgTypeName names the type record gives a USDT argument.
func usdtArgTypeName(a usdt.Arg) string {
	t, err := resolve.USDTArgType(a)
	if err != nil {
		return fmt.Sprintf("%d-byte", a.Size)
	}
	return probespec.TypeName(t)
}

// add queues a line; flush prints the queued ones with their comments
// aligned.
func (p *listPrinter) add(spec, comment string, details ...string) {
	p.pending = append(p.pending, listLine{spec, comment, details})
}

func (p *listPrinter) flush() {
	w := 0
	for _, e := range p.pending {
		w = max(w, len(e.spec))
	}
	for _, e := range p.pending {
		if e.comment == "" {
			p.printf("%s\n", e.spec)
		} else {
			p.printf("%-*s  # %s\n", w, e.spec, e.comment)
		}
		for _, d := range e.details {
			p.printf("#   %s\n", d)
		}
	}
	p.pending = p.pending[:0]
}

func (p *listPrinter) printf(format string, args ...any) { fmt.Fprintf(p.w, format, args...) }
