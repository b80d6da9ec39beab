package record

import (
	"fmt"
	"strings"

	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/record/kallsyms"
	"github.com/bpftape/bpftape/record/tracefs"
)

// kernelTextSymbols returns the function names of kallsyms (text symbols,
// t or T), or nil if it cannot be read. Addresses are not needed: the names
// are there for a reader without privileges too.
func kernelTextSymbols() map[string]bool {
	syms := map[string]bool{}
	// An error leaves the names read before it, as many as there are.
	kallsyms.Read(kallsyms.Path, func(s *kallsyms.Symbol) {
		if s.Type == 't' || s.Type == 'T' {
			syms[string(s.Name)] = true
		}
	})
	if len(syms) == 0 {
		return nil
	}
	return syms
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
func (r *resolver) checkKernelFunc(s *probespec.Spec) error {
	if s.Pattern != "" {
		return nil
	}
	if r.ksyms == nil {
		r.ksyms = kernelTextSymbols()
	}
	if r.ksyms != nil && !r.ksyms[s.Symbol] {
		names := make([]string, 0, len(r.ksyms))
		for n := range r.ksyms {
			names = append(names, n)
		}
		msg := fmt.Sprintf("the kernel has no function %s (not in %s: mistyped, or inlined into its callers, which leaves no function to probe)%s",
			s.Symbol, kallsyms.Path, hintFor(s.Symbol, names))
		if alt := relatedTracepointsOf(s.Symbol, r.tracefsDir); alt != "" {
			msg += "; " + alt
		}
		return fmt.Errorf("%s", msg)
	}
	if s.Kind != probespec.Fentry && s.Kind != probespec.Fexit {
		return nil
	}
	dir, err := r.tracefsDir()
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

// relatedTracepointsOf names tracepoints with names close to kernel
// function fn, "" if there are none.
func relatedTracepointsOf(fn string, tracefsDir func() (string, error)) string {
	dir, err := tracefsDir()
	if err != nil {
		return ""
	}
	names, err := tracefs.List(dir)
	if err != nil {
		return ""
	}
	var events []string
	for _, n := range names {
		_, ev, _ := strings.Cut(n, ":")
		events = append(events, ev)
	}
	if close := relatedTracepoints(fn, names, events); len(close) > 0 {
		return "tracepoints with close names: " + strings.Join(close, ", ")
	}
	return ""
}
