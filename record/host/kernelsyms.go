package host

import (
	"strings"

	"github.com/bpftape/bpftape/record/kallsyms"
	"github.com/bpftape/bpftape/record/tracefs"
)

// KernelTextSymbols returns the function names of kallsyms (text symbols,
// t or T), or nil if it cannot be read. Addresses are not needed: the names
// are there for a reader without privileges too.
func KernelTextSymbols() map[string]bool {
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

// RelatedTracepointsOf names tracepoints with names close to kernel
// function fn, "" if there are none.
func RelatedTracepointsOf(fn string, tracefsDir func() (string, error)) string {
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
