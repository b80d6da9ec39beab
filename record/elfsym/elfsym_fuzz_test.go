package elfsym

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tinyELF is a static program without libc with a few functions, built
// with a build id: a small seed for FuzzELF.
const tinyELF = `long counter;
__attribute__((noipa)) long add(long a, long b) { return a + b + counter; }
__attribute__((noipa)) long twice(long a) { return add(a, a); }
void _start(void) { for (;;) counter = twice(counter); }
`

// buildTinyELF builds tinyELF into dir and splits it as Debian's dbgsym
// packages do: a stripped binary with a .gnu_debuglink, and its debug file.
func buildTinyELF(tb testing.TB, dir string) (stripped, debug []byte) {
	tb.Helper()
	for _, tool := range []string{"gcc", "objcopy"} {
		if _, err := exec.LookPath(tool); err != nil {
			tb.Skipf("no %s", tool)
		}
	}
	src, exe, dbg := filepath.Join(dir, "tiny.c"), filepath.Join(dir, "tiny"), filepath.Join(dir, "tiny.debug")
	if err := os.WriteFile(src, []byte(tinyELF), 0o644); err != nil {
		tb.Fatal(err)
	}
	for _, args := range [][]string{
		{"gcc", "-O2", "-static", "-nostdlib", "-fno-asynchronous-unwind-tables", "-Wl,--build-id=sha1",
			"-Wl,-z,norelro", "-Wl,-N", "-Wl,--no-warn-rwx-segments", "-o", exe, src},
		{"objcopy", "--only-keep-debug", exe, dbg},
		{"objcopy", "--strip-all", "--add-gnu-debuglink=" + dbg, exe},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			tb.Skipf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	var err error
	if stripped, err = os.ReadFile(exe); err != nil {
		tb.Fatal(err)
	}
	if debug, err = os.ReadFile(dbg); err != nil {
		tb.Fatal(err)
	}
	return stripped, debug
}

// FuzzELF runs the ELF entry points on an arbitrary binary and an arbitrary
// separate debug file placed where FindDebugFile looks (by build id and by
// .gnu_debuglink): no panic, and consistent answers.
func FuzzELF(f *testing.F) {
	f.Add([]byte("\x7fELF\x02\x01\x01"), []byte{}, "add")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, bin, debug []byte, target string) {
		os.RemoveAll(filepath.Join(dir, "d"))
		d := filepath.Join(dir, "d")
		path := filepath.Join(d, "bin")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		// The debug file, by build id and by debuglink name.
		if id, err := BuildID(path); err == nil && len(id) > 2 && !strings.ContainsAny(id, "/.") {
			p := filepath.Join(d, ".build-id", id[:2], id[2:]+".debug")
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, debug, 0o644)
		}
		if link := debugLinkName(path); link != "" {
			os.WriteFile(filepath.Join(d, link), debug, 0o644)
		}
		dirs := []string{d}
		if dbg, err := FindDebugFile(path, dirs); err == nil && !strings.HasPrefix(dbg, d) {
			t.Fatalf("debug file %s outside %s", dbg, d)
		}
		// A FUNC symbol may be nameless ("" or "@@V"): Functions lists it as is.
		Functions(path, dirs)
		if len(target) > 0 && len(target) < 256 {
			if loc, err := Locate(path, target, dirs); err == nil && loc.Func != "" && loc.FuncOff == 0 && !loc.Entry() {
				t.Fatalf("location %+v", loc)
			}
		}
		FuncSymbols(path)
		SymbolOffset(path, target)
	})
}

// debugLinkName returns the .gnu_debuglink name of the ELF file at path,
// if it has a valid one.
func debugLinkName(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	l, ok, err := readDebugLink(f)
	if err != nil || !ok || l.Name == "." || l.Name == ".." {
		return ""
	}
	return l.Name
}

// TestWriteELFFuzzSeeds rewrites testdata/fuzz/FuzzELF/seed-tiny (a
// stripped static binary and its debug file) when BPFTAPE_WRITE_FUZZ_SEEDS=1.
func TestWriteELFFuzzSeeds(t *testing.T) {
	if os.Getenv("BPFTAPE_WRITE_FUZZ_SEEDS") != "1" {
		t.Skip("set BPFTAPE_WRITE_FUZZ_SEEDS=1 to rewrite testdata/fuzz/FuzzELF/seed-tiny")
	}
	stripped, debug := buildTinyELF(t, t.TempDir())
	dir := filepath.Join("testdata", "fuzz", "FuzzELF")
	os.MkdirAll(dir, 0o755)
	for name, target := range map[string]string{"seed-tiny": "twice", "seed-tiny-offset": "add+1", "seed-tiny-addr": "0x4000b0"} {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n[]byte(%q)\nstring(%q)\n", stripped, debug, target)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed: binary %d bytes, debug file %d bytes", len(stripped), len(debug))
}
