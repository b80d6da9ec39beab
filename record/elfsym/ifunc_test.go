package elfsym

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

const ifuncSrc = `
#include <stddef.h>
__attribute__((noinline)) size_t __tape_len_fast(const char *s) { size_t n = 0; while (s[n]) n++; return n; }
__attribute__((noinline)) size_t __tape_len_slow(const char *s) { size_t n = 0; while (*s++) n++; return n; }
__attribute__((noinline)) size_t __tape_len_l_fast(const char *s) { return __tape_len_fast(s) + 1; }
__attribute__((noinline)) void *__tape_len_ifunc(void) { return __tape_len_fast; }
__attribute__((noinline)) size_t __tape_len_chk_fast(const char *s) { return __tape_len_fast(s) + 2; }
static size_t (*tape_len_resolver(void))(const char *) { return __tape_len_ifunc(); }
static size_t (*tape_len_l_resolver(void))(const char *) { return __tape_len_l_fast; }
static size_t (*tape_len_chk_resolver(void))(const char *) { return __tape_len_chk_fast; }
size_t tape_len(const char *s) __attribute__((ifunc("tape_len_resolver")));
size_t tape_len_l(const char *s) __attribute__((ifunc("tape_len_l_resolver")));
size_t __tape_len_chk(const char *s) __attribute__((ifunc("tape_len_chk_resolver")));
int main(int argc, char **argv) { return (int)tape_len(argv[0]) + (int)tape_len_l(argv[0]) + (int)__tape_len_chk(argv[0]) + argc + (int)__tape_len_slow("x"); }
`

// TestLocateIFunc: an indirect function's symbol is its resolver; Locate
// and Functions say so and list the implementations named after it (not
// those of another indirect function whose name extends it, tape_len_l
// and __tape_len_chk, nor the resolver's helper __tape_len_ifunc), and an implementation is
// an ordinary function. glibc's strlen is one too.
func TestLocateIFunc(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "ifunc.c"), filepath.Join(dir, "ifunc")
	if err := os.WriteFile(src, []byte(ifuncSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(gcc, "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	loc, err := Locate(bin, "tape_len", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !loc.IFunc || !slices.Equal(loc.Impls, []string{"__tape_len_fast", "__tape_len_slow"}) {
		t.Errorf("tape_len: IFunc %v, implementations %q", loc.IFunc, loc.Impls)
	}
	// By its address too.
	if byAddr, err := Locate(bin, fmt.Sprintf("%#x", loc.Addr), nil); err != nil || !byAddr.IFunc || !slices.Equal(byAddr.Impls, loc.Impls) {
		t.Errorf("tape_len at %#x: %+v, %v", loc.Addr, byAddr, err)
	}
	if loc, err := Locate(bin, "__tape_len_fast", nil); err != nil || loc.IFunc {
		t.Errorf("__tape_len_fast: %+v, %v", loc, err)
	}
	if loc, err := Locate(libcPath(t), "strlen", nil); err != nil || !loc.IFunc {
		t.Errorf("libc's strlen: %+v, %v", loc, err)
	}
	fns, _, err := Functions(bin, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"tape_len": loc.Impls, "tape_len_l": {"__tape_len_l_fast"}, "__tape_len_chk": {"__tape_len_chk_fast"}}
	// The resolvers, ordinary functions at the indirect functions'
	// addresses, name them and their implementations.
	resolvers := map[string]string{"tape_len_resolver": "tape_len", "tape_len_l_resolver": "tape_len_l", "tape_len_chk_resolver": "__tape_len_chk"}
	for _, f := range fns {
		if impls, ok := want[f.Name]; f.IFunc != ok || !slices.Equal(f.Impls, impls) && ok {
			t.Errorf("Functions: %s: IFunc %v, implementations %q", f.Name, f.IFunc, f.Impls)
		}
		delete(want, f.Name)
		ifn, ok := resolvers[f.Name]
		if f.Resolves != ifn {
			t.Errorf("Functions: %s: resolves %q, want %q", f.Name, f.Resolves, ifn)
		}
		if !ok && !f.IFunc && len(f.Impls) > 0 {
			t.Errorf("Functions: %s, an ordinary function, has implementations %q", f.Name, f.Impls)
		}
		delete(resolvers, f.Name)
	}
	if len(want) > 0 || len(resolvers) > 0 {
		t.Errorf("Functions did not list %v %v", want, resolvers)
	}
	for _, f := range fns {
		if f.Name == "tape_len_resolver" && !slices.Equal(f.Impls, loc.Impls) {
			t.Errorf("Functions: tape_len_resolver: implementations %q, want tape_len's %q", f.Impls, loc.Impls)
		}
	}
	// Locate says so too; the resolver's own helper is no resolver.
	if r, err := Locate(bin, "tape_len_resolver", nil); err != nil || r.IFunc || r.Resolves != "tape_len" || !slices.Equal(r.Impls, loc.Impls) {
		t.Errorf("tape_len_resolver: %+v, %v", r, err)
	}
	if r, err := Locate(bin, "__tape_len_ifunc", nil); err != nil || r.Resolves != "" || len(r.Impls) > 0 {
		t.Errorf("__tape_len_ifunc: %+v, %v", r, err)
	}
}

func TestPublicName(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"memchr", "__memchr", true},
		{"__memchr", "__GI_memchr", true},
		{"__GI_memchr", "memchr", false},
		{"strcasecmp", "strcasecmp_l", true},
		{"a", "b", true},
	} {
		if got := publicName(c.a, c.b); got != c.want {
			t.Errorf("publicName(%q, %q) = %v", c.a, c.b, got)
		}
	}
}
