package main

import (
	"bufio"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/record/elfsym"
	"github.com/bpftape/bpftape/record/tracefs"
	"github.com/bpftape/bpftape/record/usdt"
)

func init() {
	register("list", "list the USDT probes and functions of a binary, or kernel tracepoints, as probe specs", runList)
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
  u:BINARY:ADDRESS takes as they are printed.
  No TARGET, or TARGET 'tracepoint' (or 't'): kernel tracepoints (-v: their
  fields and recorded types).
  No TARGET with -p PID: the USDT probes of every file PID has mapped.

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

Exit status: 0 when something is listed, 1 when nothing matches or on a
failure, 2 on a usage error.
`

// listOpts are list's flags.
type listOpts struct {
	verbose     bool
	pid         int
	debugDirs   []string
	usdt, funcs bool // list USDT probes, functions (both when neither is asked for)
	stdout      *bufio.Writer
	listed      int
	pending     []listEntry // entries of the current group, printed aligned by flush
	filter      string
	globWhole   bool // the glob has ':': match the whole name
	glob        string
}

func runList(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("list", "[-v] [-p PID] [--usdt | --funcs] [--debug-dir DIR] [TARGET] [FILTER]", listHelp, stdout)
	o := &listOpts{}
	fs.BoolVar(&o.verbose, "v", false, "verbose: argument operands and recorded types of USDT sites, tracepoint fields")
	fs.IntVar(&o.pid, "p", 0, "resolve TARGET among the files process `PID` has mapped; without TARGET list their USDT probes")
	fs.BoolVar(&o.usdt, "usdt", false, "list only USDT probes")
	fs.BoolVar(&o.funcs, "funcs", false, "list only functions")
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
	if o.pid < 0 {
		return fail(stderr, "list", usage.Errorf("-p %d", o.pid))
	}
	if !o.usdt && !o.funcs {
		o.usdt, o.funcs = true, true
	}
	o.debugDirs = elfsym.DebugDirs(debugDirs)
	o.stdout = bufio.NewWriter(stdout)
	defer o.stdout.Flush()

	var target string
	switch len(pos) {
	case 2:
		target = pos[0]
		o.setFilter(pos[1])
	case 1:
		target = pos[0]
	}
	switch {
	case target == "tracepoint" || target == "t":
		err = o.tracepoints()
	case target == "" && o.pid != 0:
		err = o.mapped()
	case target == "":
		err = o.tracepoints()
	default:
		bin, rerr := elfsym.ResolveBinary(target, o.pid)
		switch {
		case rerr == nil && isELFFile(bin):
			if len(pos) == 1 && !strings.Contains(target, "/") && isCategory(target) {
				fmt.Fprintf(stderr, "bpftape list: %q is the program %s and a tracepoint category: listing the program; 'bpftape list tracepoint %s' lists the tracepoints\n",
					target, bin, target)
			}
			err = o.binary(bin)
		case len(pos) == 1 && !strings.Contains(target, "/") && o.pid == 0:
			// Not a binary: a tracepoint filter.
			o.setFilter(target)
			err = o.tracepoints()
			if err == nil && o.listed == 0 && rerr != nil {
				err = fmt.Errorf("no tracepoint matches %q, and it names no binary: %v", target, rerr)
			}
		case rerr != nil:
			err = rerr
		default:
			err = fmt.Errorf("%s is not an ELF file", bin)
		}
	}
	if err == nil && o.listed == 0 {
		what := "nothing to list"
		if o.filter != "" {
			what = fmt.Sprintf("nothing matches %q", o.filter)
		}
		fmt.Fprintf(stderr, "bpftape list: %s\n", what)
		return exitFailure
	}
	if err != nil {
		o.stdout.Flush()
		return fail(stderr, "list", err)
	}
	return exitOK
}

func (o *listOpts) setFilter(f string) {
	o.filter = f
	if strings.ContainsAny(f, "*?[") {
		o.glob, o.globWhole = f, strings.Contains(f, ":")
	}
}

// match reports whether a name passes the filter; whole is the full name
// ("provider:probe"), short its last part ("probe").
func (o *listOpts) match(whole, short string) bool {
	switch {
	case o.filter == "":
		return true
	case o.glob != "" && o.globWhole:
		ok, _ := path.Match(o.glob, whole)
		return ok
	case o.glob != "":
		ok, _ := path.Match(o.glob, short)
		return ok
	}
	return whole == o.filter || short == o.filter // exact, as bpftrace -l
}

// listEntry is one listed probe: its spec, a comment, and detail lines.
type listEntry struct {
	spec, comment string
	details       []string
}

// add queues an entry; flush prints the queued ones with their comments
// aligned.
func (o *listOpts) add(spec, comment string, details ...string) {
	o.listed++
	o.pending = append(o.pending, listEntry{spec, comment, details})
}

func (o *listOpts) flush() {
	w := 0
	for _, e := range o.pending {
		w = max(w, len(e.spec))
	}
	for _, e := range o.pending {
		if e.comment == "" {
			o.printf("%s\n", e.spec)
		} else {
			o.printf("%-*s  # %s\n", w, e.spec, e.comment)
		}
		for _, d := range e.details {
			o.printf("#   %s\n", d)
		}
	}
	o.pending = o.pending[:0]
}

// printf writes to stdout after the queued entries.
func (o *listOpts) printf(format string, args ...any) { fmt.Fprintf(o.stdout, format, args...) }

// binary lists a binary's USDT probes and functions.
func (o *listOpts) binary(bin string) error {
	if o.filter != "" && o.glob != "" {
		if _, err := path.Match(o.glob, ""); err != nil {
			return usage.Errorf("bad filter %q: %w", o.filter, err)
		}
	}
	header := "# " + bin
	if id, err := elfsym.BuildID(bin); err == nil && id != "" {
		header += " (build id " + id + ")"
	}
	o.printf("%s\n", header)
	if o.usdt {
		probes, err := usdt.Read(bin)
		if err != nil {
			return err
		}
		o.usdtProbes(bin, probes)
	}
	if o.funcs {
		fns, debug, err := elfsym.Functions(bin, o.debugDirs)
		if err != nil {
			return err
		}
		if debug != "" {
			o.printf("# functions from its debug file %s\n", debug)
		}
		for _, f := range fns {
			if !o.match(f.Name, f.Name) {
				continue
			}
			size := ""
			if f.Size > 0 {
				size = fmt.Sprintf(", %d bytes", f.Size)
			}
			o.add(fmt.Sprintf("uprobe:%s:%s", bin, f.Name), fmt.Sprintf("%#x%s", f.Addr, size))
		}
		o.flush()
	}
	return nil
}

// usdtProbes lists the probes of one file.
func (o *listOpts) usdtProbes(bin string, probes []usdt.Probe) {
	for i := range probes {
		p := &probes[i]
		if !o.match(p.String(), p.Name) {
			continue
		}
		var addrs []string
		for _, s := range p.Sites {
			addrs = append(addrs, fmt.Sprintf("%#x", s.Addr))
		}
		sites := "1 site"
		if len(p.Sites) != 1 {
			sites = fmt.Sprintf("%d sites", len(p.Sites))
		}
		args := fmt.Sprintf("%d args", len(p.Args))
		switch {
		case p.Err != nil:
			args = "arguments unreadable"
		case len(p.Args) == 1:
			args = "1 arg"
		case len(p.Args) > maxProbeArgs:
			args += fmt.Sprintf(" (a probe records at most %d: name them)", maxProbeArgs)
		}
		sema := ""
		if p.Semaphore != 0 {
			sema = fmt.Sprintf("; semaphore %#x", p.SemaphoreAddr)
		}
		var details []string
		if o.verbose {
			for _, s := range p.Sites {
				if s.Err != nil {
					details = append(details, fmt.Sprintf("at %#x: %s: %v", s.Addr, s.ArgsText, s.Err))
					continue
				}
				var parts []string
				for k, a := range s.Args {
					parts = append(parts, fmt.Sprintf("arg%d:%s=%s", k, intTypeName(a.Size, a.Signed), a.Text))
				}
				if len(parts) == 0 {
					parts = []string{"no arguments"}
				}
				details = append(details, fmt.Sprintf("at %#x: %s", s.Addr, strings.Join(parts, " ")))
			}
		}
		o.add(fmt.Sprintf("usdt:%s:%s:%s", bin, p.Provider, p.Name),
			fmt.Sprintf("%s: %s; %s%s", sites, strings.Join(addrs, ", "), args, sema), details...)
	}
	o.flush()
}

// maxProbeArgs is how many fields a recorded probe holds (bpf.MaxArgs).
const maxProbeArgs = 12

// intTypeName is record's name of an integer type: s32, u8...
func intTypeName(size int, signed bool) string {
	if signed {
		return "s" + strconv.Itoa(8*size)
	}
	return "u" + strconv.Itoa(8*size)
}

// mapped lists the USDT probes of every ELF file process pid has mapped.
func (o *listOpts) mapped() error {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", o.pid))
	if err != nil {
		return fmt.Errorf("-p %d: %w", o.pid, err)
	}
	defer f.Close()
	var files []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || !strings.HasPrefix(fields[5], "/") {
			continue
		}
		p := strings.Join(fields[5:], " ")
		if seen[p] || strings.HasSuffix(p, " (deleted)") {
			continue
		}
		seen[p] = true
		files = append(files, p)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("-p %d: %w", o.pid, err)
	}
	for _, p := range files {
		if _, err := os.Stat(p); err != nil {
			p = fmt.Sprintf("/proc/%d/root%s", o.pid, p)
		}
		if !isELFFile(p) {
			continue
		}
		probes, err := usdt.Read(p)
		if err != nil || len(probes) == 0 {
			continue
		}
		o.printf("# %s\n", p)
		o.usdtProbes(p, probes)
	}
	return nil
}

// tracepoints lists kernel tracepoints, with their fields if verbose.
func (o *listOpts) tracepoints() error {
	dir, err := tracefs.Dir()
	if err != nil {
		return err
	}
	filter := o.filter
	names, err := tracefs.List(dir, filter)
	if err != nil {
		if strings.Contains(err.Error(), "bad filter") {
			return usage.Wrap(err)
		}
		return err
	}
	for _, n := range names {
		var details []string
		if o.verbose {
			cat, ev, _ := strings.Cut(n, ":")
			f, err := tracefs.ReadFormat(dir, cat, ev)
			if err != nil {
				details = append(details, fmt.Sprintf("(format unreadable: %v)", err))
			} else {
				for _, fl := range f.Fields {
					details = append(details, fmt.Sprintf("%s: %s (%s)", fl.Name, recordedAs(&fl), fl.CType))
				}
			}
		}
		o.add("tracepoint:"+n, "", details...)
	}
	o.flush()
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

// recordedAs says how record records a tracepoint field by default.
func recordedAs(f *tracefs.Field) string {
	switch f.Kind {
	case tracefs.Int:
		switch f.Size {
		case 1, 2, 4, 8:
			return intTypeName(f.Size, f.Signed)
		}
	case tracefs.CharArray, tracefs.DataLoc:
		return "string"
	}
	return "not recorded"
}

// isELFFile reports whether path is a readable ELF file.
func isELFFile(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	f.Close()
	return true
}
