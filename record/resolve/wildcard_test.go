package resolve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/bpftape/bpftape/internal/testutil"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/probespec"
)

// fakeTraceable writes an available_filter_functions listing fns.
func fakeTraceable(t *testing.T, fns []string) func() (string, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "available_filter_functions"), []byte(strings.Join(fns, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return func() (string, error) { return dir, nil }
}

func parseAll(t *testing.T, texts ...string) []*probespec.Spec {
	t.Helper()
	var specs []*probespec.Spec
	for _, text := range texts {
		s, err := probespec.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, s)
	}
	return specs
}

// TestExpandWildcards expands fentry patterns against a traceable list:
// only functions with BTF, not the names several functions share, each
// named after its function; too many matches and none are errors.
func TestExpandWildcards(t *testing.T) {
	testutil.RequireBTF(t)
	dir := fakeTraceable(t, []string{"vfs_read", "vfs_readv", "vfs_reax_no_btf", "show_map", "show_map", "vfs_write [mod]"})
	specs, err := ExpandWildcards(parseAll(t, "fr:vfs_rea*(retval)", "u:/bin/true:main", "f:show_ma?"), dir)
	if err == nil || !strings.Contains(err.Error(), "show_ma? matches no traceable kernel function") {
		t.Fatalf("a pattern matching only a shared name: %v", err)
	}
	specs, err = ExpandWildcards(parseAll(t, "fr:vfs_rea*(retval)", "u:/bin/true:main"), dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range specs {
		got = append(got, s.Text+" "+s.Pattern)
	}
	want := []string{"fr:vfs_read(retval) vfs_rea*", "fr:vfs_readv(retval) vfs_rea*", "u:/bin/true:main "}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("expanded to %q, want %q", got, want)
	}
	names, err := probespec.Names(specs)
	if err != nil || names[0] != "vfs_read:return" || names[1] != "vfs_readv:return" {
		t.Errorf("names %v, %v", names, err)
	}

	// More matches than MaxWildcardMatches: a usage error naming the count.
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	var many []string
	for typ, err := range kernel.All() {
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := typ.(*btf.Func); ok && strings.HasPrefix(f.Name, "x") {
			many = append(many, f.Name)
		}
	}
	if len(many) <= MaxWildcardMatches {
		t.Fatalf("only %d BTF functions start with x", len(many))
	}
	_, err = ExpandWildcards(parseAll(t, "f:x*"), fakeTraceable(t, many))
	if err == nil || !usage.Is(err) || !strings.Contains(err.Error(), "at most 512: narrow it") {
		t.Errorf("%d matches: %v", len(many), err)
	}
}
