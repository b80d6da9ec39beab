package resolve

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/record/host"
	"github.com/bpftape/bpftape/record/tracefs"
)

// MaxWildcardMatches is how many functions one pattern (k:vfs_*) may
// attach to. Each match is a kprobe or a tracing program of its own, and
// every function call then costs an event: a pattern that matches more is
// almost always a mistake.
const MaxWildcardMatches = 512

// ExpandWildcards replaces each kernel probe whose function is a pattern
// (k:vfs_*, f:tcp_send*) with one probe per traceable function it matches
// (available_filter_functions, whose functions kprobes and BPF trampolines
// can attach to), named after the function: funccount's question is then
// the count of events per probe. fentry and fexit patterns keep only the
// functions with BTF. Names that several functions share are skipped: a
// probe by name reaches only one of them.
func ExpandWildcards(specs []*probespec.Spec, tracefsDir func() (string, error)) ([]*probespec.Spec, error) {
	var out []*probespec.Spec
	var fns []tracefs.Func
	var funcBTF func(fn tracefs.Func) bool
	for _, s := range specs {
		if !s.Wildcard() {
			out = append(out, s)
			continue
		}
		if s.Name != "" {
			return nil, usage.Errorf("probe %s: a pattern's probes are named after the functions it matches: leave out %s=", s.Text, s.Name)
		}
		if fns == nil {
			if (s.Kind == probespec.Kprobe || s.Kind == probespec.Kretprobe) && !host.KprobesPresent(tracefsDir) {
				return nil, fmt.Errorf("probe %s: %w", s.Text, host.KprobeUnavailable(s, tracefsDir))
			}
			dir, err := tracefsDir()
			if err != nil {
				return nil, fmt.Errorf("probe %s: a pattern needs the traceable functions in tracefs: %w", s.Text, err)
			}
			if fns, err = tracefs.Functions(dir); err != nil {
				if s.Kind == probespec.Fentry || s.Kind == probespec.Fexit {
					// As list says it: the kernel's reason, not tracefs's EPERM.
					if kerr := kernelKindUnavailable(s.Kind, s.Symbol); kerr != nil {
						return nil, fmt.Errorf("probe %s: %w", s.Text, kerr)
					}
				}
				return nil, fmt.Errorf("probe %s: %w", s.Text, err)
			}
		}
		if funcBTF == nil {
			funcBTF = hasFuncBTF()
		}
		tracing := s.Kind == probespec.Fentry || s.Kind == probespec.Fexit
		var matched []*probespec.Spec
		var names []string
		for _, fn := range fns {
			if fn.Dups > 0 || !probespec.MatchFunc(s.Symbol, fn.Name) {
				continue
			}
			if tracing && !funcBTF(fn) {
				continue
			}
			matched = append(matched, s.Expand(fn.Name))
			names = append(names, fn.Name)
		}
		switch {
		case len(matched) == 0:
			return nil, fmt.Errorf("probe %s: %s matches no traceable kernel function (available_filter_functions%s)",
				s.Text, s.Symbol, map[bool]string{true: " with BTF", false: ""}[tracing])
		case len(matched) > MaxWildcardMatches:
			return nil, usage.Errorf("probe %s: %s matches %d traceable kernel functions, and a pattern attaches to at most %d: narrow it (it matches %s, ...)",
				s.Text, s.Symbol, len(matched), MaxWildcardMatches, strings.Join(names[:5], ", "))
		}
		out = append(out, matched...)
	}
	return out, nil
}

// hasFuncBTF returns whether a traceable function has BTF, which fentry
// and fexit need: vmlinux's, or its module's. Without BTF nothing has.
func hasFuncBTF() func(fn tracefs.Func) bool {
	kernel, err := kernelTypes.Kernel()
	if err != nil {
		return func(tracefs.Func) bool { return false }
	}
	mods := map[string]*btf.Spec{}
	return func(fn tracefs.Func) bool {
		spec := kernel
		if fn.Module != "" {
			var ok bool
			if spec, ok = mods[fn.Module]; !ok {
				spec, _ = kernelTypes.Module(fn.Module)
				mods[fn.Module] = spec
			}
			if spec == nil {
				return false
			}
		}
		var f *btf.Func
		return spec.TypeByName(fn.Name, &f) == nil
	}
}
