package elfsym

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// stripped is a stripped copy of a test binary and its separate debug file.
type stripped struct {
	orig, bin, debug, buildID string
}

// stripBinary makes, in a new directory, a copy of bin without symbols
// (strip --strip-all), its debug file (objcopy --only-keep-debug, named
// NAME.debug) and a .gnu_debuglink from the copy to it; the debug file is
// then moved to dir(bin)/NAME.debug only if keepNext.
func stripBinary(t *testing.T, bin string) *stripped {
	t.Helper()
	for _, tool := range []string{"objcopy", "strip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	dir := t.TempDir()
	s := &stripped{orig: bin, bin: filepath.Join(dir, filepath.Base(bin)), debug: filepath.Join(dir, filepath.Base(bin)+".debug")}
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run("objcopy", "--only-keep-debug", bin, s.debug)
	run("strip", "--strip-all", "-o", s.bin, bin)
	run("objcopy", "--add-gnu-debuglink="+s.debug, s.bin)
	id, err := BuildID(s.bin)
	if err != nil || id == "" {
		t.Fatalf("build id of %s: %q, %v", s.bin, id, err)
	}
	s.buildID = id
	return s
}

// moveTo moves the debug file to path (directories created).
func (s *stripped) moveTo(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(s.debug, path); err != nil {
		t.Fatal(err)
	}
	s.debug = path
}

func (s *stripped) buildIDPath(dir string) string {
	return filepath.Join(dir, ".build-id", s.buildID[:2], s.buildID[2:]+".debug")
}

func TestFindDebugFile(t *testing.T) {
	bin := buildTarget(t, "target", "-no-pie")
	other := buildTarget(t, "target", "-no-pie", "-O2") // same source, another build id
	want, err := SymbolOffset(bin, "tape_static")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("build-id", func(t *testing.T) {
		s := stripBinary(t, bin)
		tree := t.TempDir()
		s.moveTo(t, s.buildIDPath(tree))
		// Without the directory: not found, and the error says where it looked.
		_, err := Locate(s.bin, "tape_static", DebugDirs(nil))
		if err == nil || !strings.Contains(err.Error(), "stripped") || !strings.Contains(err.Error(), "no debug file") ||
			!strings.Contains(err.Error(), "--debug-dir") {
			t.Errorf("without the debug dir: %v", err)
		}
		loc, err := Locate(s.bin, "tape_static", DebugDirs([]string{tree}))
		if err != nil {
			t.Fatal(err)
		}
		if loc.Offset != want || loc.DebugFile != s.debug || !loc.Entry() {
			t.Errorf("Locate = %+v, want offset %#x from %s", loc, want, s.debug)
		}
		// The same through $BPFTAPE_DEBUG_DIRS.
		t.Setenv(DebugDirsEnv, "/nonexistent:"+tree)
		if loc, err := Locate(s.bin, "tape_static", DebugDirs(nil)); err != nil || loc.DebugFile != s.debug {
			t.Errorf("via $%s: %+v, %v", DebugDirsEnv, loc, err)
		}
	})
	t.Run("debuglink", func(t *testing.T) {
		for _, where := range []string{"next", ".debug", "global"} {
			s := stripBinary(t, bin)
			var dirs []string
			switch where {
			case ".debug":
				s.moveTo(t, filepath.Join(filepath.Dir(s.bin), ".debug", filepath.Base(s.debug)))
			case "global":
				g := t.TempDir()
				s.moveTo(t, filepath.Join(g, filepath.Dir(s.bin), filepath.Base(s.debug)))
				dirs = []string{g}
			}
			got, err := FindDebugFile(s.bin, dirs)
			if err != nil || got != s.debug {
				t.Errorf("%s: FindDebugFile = %q, %v; want %s", where, got, err, s.debug)
			}
			if off, err := SymbolOffset(s.bin, "tape_static"); where != "global" && (err != nil || off != want) {
				t.Errorf("%s: SymbolOffset = %#x, %v", where, off, err)
			}
		}
	})
	t.Run("build-id mismatch", func(t *testing.T) {
		s := stripBinary(t, bin)
		o := stripBinary(t, other)
		if o.buildID == s.buildID {
			t.Fatal("the two builds have the same build id")
		}
		tree := t.TempDir()
		// Another build's debug file where this build's belongs.
		o.moveTo(t, s.buildIDPath(tree))
		os.Remove(s.debug)
		_, err := Locate(s.bin, "tape_static", []string{tree})
		for _, w := range []string{`no function "tape_static"`, "stripped", "from a different build", "has build id " + o.buildID, s.buildID} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("error %v does not say %q", err, w)
			}
		}
		_, ferr := FindDebugFile(s.bin, []string{tree})
		var derr *DebugFileError
		if !errors.As(ferr, &derr) || !derr.Mismatch() {
			t.Errorf("FindDebugFile: %v, want a mismatch", ferr)
		}
	})
	t.Run("debuglink CRC mismatch", func(t *testing.T) {
		s := stripBinary(t, bin)
		// Same build id, other contents: only the CRC tells.
		f, err := os.OpenFile(s.debug, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte{0})
		f.Close()
		_, err = Locate(s.bin, "tape_static", nil)
		if err == nil || !strings.Contains(err.Error(), "CRC32") || !strings.Contains(err.Error(), "from a different build") {
			t.Errorf("CRC mismatch: %v", err)
		}
	})
	t.Run("dynsym without debug file", func(t *testing.T) {
		// A stripped PIE keeps .dynsym: main is not there, but with
		// -rdynamic tape_target is, and needs no debug file.
		dyn := buildTarget(t, "target", "-rdynamic")
		s := stripBinary(t, dyn)
		os.Remove(s.debug)
		loc, err := Locate(s.bin, "tape_target", nil)
		if err != nil || loc.DebugFile != "" {
			t.Errorf("Locate(tape_target) = %+v, %v", loc, err)
		}
		_, err = Locate(s.bin, "tape_targte", nil)
		if err == nil || !strings.Contains(err.Error(), `did you mean "tape_target"`) {
			t.Errorf("typo: %v", err)
		}
	})
}

func TestDebugDirs(t *testing.T) {
	t.Setenv(DebugDirsEnv, "/e1::/e2:/a")
	got := DebugDirs([]string{"/a", "/b:/c/"})
	want := []string{"/a", "/b", "/c", "/e1", "/e2", "/usr/lib/debug"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("DebugDirs = %q, want %q", got, want)
	}
}

// objdumpStarts returns the instruction addresses objdump -d finds in
// function fn of bin.
func objdumpStarts(t *testing.T, bin, fn string) []uint64 {
	t.Helper()
	return objdumpStartsWith(t, "objdump", bin, fn)
}

// objdumpStartsWith is objdumpStarts with the objdump of a target
// ("aarch64-linux-gnu-objdump").
func objdumpStartsWith(t *testing.T, objdump, bin, fn string) []uint64 {
	t.Helper()
	if _, err := exec.LookPath(objdump); err != nil {
		t.Skip("no " + objdump)
	}
	out, err := exec.Command(objdump, "-d", "--no-show-raw-insn", "--disassemble="+fn, bin).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	re := regexp.MustCompile(`^\s+([0-9a-f]+):\s`)
	var starts []uint64
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			v, _ := strconv.ParseUint(m[1], 16, 64)
			starts = append(starts, v)
		}
	}
	return starts
}

// TestLocateForms checks SYMBOL+OFFSET and ADDRESS against objdump: every
// instruction start objdump lists is accepted, every byte inside an
// instruction refused; offsets past the function and bad forms are errors.
func TestLocateForms(t *testing.T) {
	for _, flags := range [][]string{{"-no-pie"}, {"-pie", "-fPIE", "-fcf-protection=full"}} {
		bin := buildTarget(t, "target", flags...)
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		var fn elf.Symbol
		syms, _ := f.Symbols()
		for _, s := range syms {
			if s.Name == "main" {
				fn = s
			}
		}
		f.Close()
		starts := objdumpStarts(t, bin, "main")
		if len(starts) < 2 {
			t.Fatalf("objdump found %d instructions in main", len(starts))
		}
		entry, err := Locate(bin, "main", nil)
		if err != nil {
			t.Fatal(err)
		}
		if !entry.Entry() || entry.Addr != fn.Value {
			t.Errorf("%v: main = %+v", flags, entry)
		}
		isStart := map[uint64]bool{}
		for _, a := range starts {
			isStart[a] = true
		}
		for off := uint64(1); off < fn.Size; off++ {
			addr := fn.Value + off
			for _, target := range []string{fmt.Sprintf("main+%d", off), fmt.Sprintf("%#x", addr)} {
				loc, err := Locate(bin, target, nil)
				switch {
				case isStart[addr] && err != nil:
					t.Errorf("%v: %s starts an instruction (objdump) but: %v", flags, target, err)
				case isStart[addr] && (loc.Addr != addr || loc.Offset != entry.Offset+off || loc.Func != "main" || loc.FuncOff != off || loc.Unverified != ""):
					t.Errorf("%v: %s = %+v", flags, target, loc)
				case !isStart[addr] && (err == nil || !strings.Contains(err.Error(), "not at an instruction boundary")):
					t.Errorf("%v: %s is inside an instruction (objdump) but: %+v, %v", flags, target, loc, err)
				}
			}
		}
		if _, err := Locate(bin, fmt.Sprintf("main+%d", fn.Size), nil); err == nil || !strings.Contains(err.Error(), "past the end of main") {
			t.Errorf("past the end: %v", err)
		}
		if loc, err := Locate(bin, fmt.Sprintf("main+%#x", starts[1]-fn.Value), nil); err != nil || loc.Addr != starts[1] {
			t.Errorf("hex offset: %+v, %v", loc, err)
		}
	}
	bin := buildTarget(t, "target")
	for target, want := range map[string]string{
		"main+1x":    "bad offset",
		"0x":         "neither a symbol nor an address",
		"0x1":        "no executable PT_LOAD segment",
		"nosuchfunc": `no function "nosuchfunc"`,
	} {
		if _, err := Locate(bin, target, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Locate(%q) = %v, want %q", target, err, want)
		}
	}
}

// TestInstLenLibc compares instruction lengths with objdump over a few
// libc functions, including ones using AVX: a boundary is either right or
// reported as unverifiable, never wrong.
func TestInstLenLibc(t *testing.T) {
	libc := libcPath(t)
	for _, fn := range []string{"malloc", "free", "__libc_start_main", "strlen"} {
		var loc *Location
		var err error
		if loc, err = Locate(libc, fn, nil); err != nil {
			continue
		}
		starts := objdumpStarts(t, libc, fn)
		if len(starts) < 2 {
			t.Logf("objdump does not disassemble %s in %s", fn, libc)
			continue
		}
		isStart := map[uint64]bool{}
		for _, a := range starts {
			isStart[a] = true
		}
		last := starts[len(starts)-1]
		checked, unverified := 0, 0
		for addr := loc.Addr + 1; addr <= last && addr < loc.Addr+512; addr++ {
			l, err := Locate(libc, fmt.Sprintf("%#x", addr), nil)
			switch {
			case err == nil && l.Unverified != "":
				unverified++
			case isStart[addr] != (err == nil):
				t.Errorf("%s at %#x: objdump says start=%v, Locate: %v", fn, addr, isStart[addr], err)
			default:
				checked++
			}
		}
		t.Logf("%s: %d addresses agree with objdump, %d unverifiable", fn, checked, unverified)
	}
}
