package resolve

import (
	"strings"
	"testing"

	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/record/elfsym"
)

// TestResolveIFunc: a uprobe on an indirect function (glibc's strlen)
// resolves, with a warning that it traces the resolver and naming the
// implementations to probe instead; a uretprobe on it too, and on its
// resolver under a name of its own; a probe on an implementation has no
// warning.
func TestResolveIFunc(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"u:libc:strlen", "strlen is an indirect function (IFUNC)"},
		{"ur:libc:strlen", "this probe sees the resolver, not the calls: probe the implementation it picks ("},
		{"u:libc:strchr", "strchr is an indirect function (IFUNC)"},
		{"u:libc:malloc", ""},
		// glibc's resolver under a name of its own (its debug file's).
		{"u:libc:strlen_ifunc", "strlen_ifunc is the resolver of the indirect function (IFUNC) strlen, which the dynamic linker calls once a process"},
	} {
		s, err := probespec.Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		var warnings []string
		r := &Resolver{Warn: func(m string) { warnings = append(warnings, m) }, DebugDirs: elfsym.DefaultDebugDirs}
		if _, err := r.Resolve(s, "p"); err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		got := strings.Join(warnings, "\n")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) || !strings.HasPrefix(got, tc.spec+": ") && got != "" {
			t.Errorf("%s: warnings %q, want one with %q", tc.spec, got, tc.want)
		}
	}
}
