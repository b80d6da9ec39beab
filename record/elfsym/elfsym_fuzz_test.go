package elfsym

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// go generate rewrites the seeds testdata/fuzz/FuzzELF/seed-tiny*: a small
// static binary, stripped, and its debug file, built with gcc and objcopy.
//go:generate go run ./internal/genseeds

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
		// A FUNC symbol may be nameless ("" or "@@V"): Functions skips it,
		// since `bpftape list` prints pasteable specs.
		if fns, _, err := Functions(path, dirs); err == nil {
			for _, fn := range fns {
				if fn.Name == "" {
					t.Fatalf("nameless function listed: %+v", fn)
				}
			}
		}
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
