package elfsym

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// buildA64Target compiles targetSrc for arm64 with aarch64-linux-gnu-gcc.
func buildA64Target(t *testing.T, flags ...string) string {
	t.Helper()
	cc, err := exec.LookPath("aarch64-linux-gnu-gcc")
	if err != nil {
		t.Skip("no aarch64-linux-gnu-gcc (Debian: apt-get install gcc-aarch64-linux-gnu)")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "target.c")
	if err := os.WriteFile(src, []byte(targetSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "target")
	args := append([]string{"-O1", "-g", "-o", out, src}, flags...)
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("aarch64-linux-gnu-gcc %v: %v\n%s", args, err, b)
	}
	return out
}

// TestLocateARM64 checks SYMBOL+OFFSET and ADDRESS in arm64 code against
// aarch64-linux-gnu-objdump: every instruction start it lists is
// accepted and verified, every other offset refused with the two
// boundaries around it; none is left unverified.
func TestLocateARM64(t *testing.T) {
	for _, flags := range [][]string{{"-no-pie"}, {"-pie", "-fPIE", "-mbranch-protection=standard"}} {
		bin := buildA64Target(t, flags...)
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		if f.Machine != elf.EM_AARCH64 {
			t.Fatalf("%s is %v", bin, f.Machine)
		}
		var fn elf.Symbol
		syms, _ := f.Symbols()
		for _, s := range syms {
			if s.Name == "main" {
				fn = s
			}
		}
		f.Close()
		starts := objdumpStartsWith(t, "aarch64-linux-gnu-objdump", bin, "main")
		if len(starts) < 3 {
			t.Fatalf("objdump found %d instructions in main", len(starts))
		}
		entry, err := Locate(bin, "main", nil)
		if err != nil {
			t.Fatal(err)
		}
		if !entry.Entry() || entry.Addr != fn.Value || entry.Unverified != "" {
			t.Errorf("%v: main = %+v", flags, entry)
		}
		for off := uint64(1); off < fn.Size; off++ {
			addr := fn.Value + off
			isStart := slices.Contains(starts, addr)
			for _, target := range []string{fmt.Sprintf("main+%d", off), fmt.Sprintf("%#x", addr)} {
				loc, err := Locate(bin, target, nil)
				switch {
				case isStart && err != nil:
					t.Errorf("%v: %s starts an instruction (objdump) but: %v", flags, target, err)
				case isStart && (loc.Addr != addr || loc.Offset != entry.Offset+off || loc.Func != "main" || loc.FuncOff != off || loc.Unverified != ""):
					t.Errorf("%v: %s = %+v", flags, target, loc)
				case !isStart && err == nil:
					t.Errorf("%v: %s is inside an instruction (objdump) but: %+v", flags, target, loc)
				case !isStart:
					lo := off &^ 3
					want := fmt.Sprintf("use main+%#x or main+%#x", lo, lo+4)
					if lo+4 >= fn.Size {
						want = fmt.Sprintf("use main+%#x", lo)
					}
					if msg := err.Error(); !strings.Contains(msg, "not at an instruction boundary: arm64 instructions are 4 bytes") ||
						!strings.HasSuffix(msg, want) || strings.Contains(msg, "\n") {
						t.Errorf("%v: %s: %v; want the boundaries (%s)", flags, target, err, want)
					}
				}
			}
		}
	}
}

// TestLocateARM64Libc checks every offset of a few functions of arm64's
// libc (the cross toolchain's) against objdump.
func TestLocateARM64Libc(t *testing.T) {
	libc := "/usr/aarch64-linux-gnu/lib/libc.so.6"
	if _, err := os.Stat(libc); err != nil {
		t.Skipf("no arm64 libc: %v", err)
	}
	f, err := elf.Open(libc)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := f.DynamicSymbols()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	size := map[string]uint64{}
	for _, s := range dyn {
		size[s.Name] = s.Size
	}
	for _, fn := range []string{"getenv", "setenv", "qsort_r", "realpath"} {
		loc, err := Locate(libc, fn, nil)
		if err != nil {
			t.Errorf("%s: %v", fn, err)
			continue
		}
		starts := objdumpStartsWith(t, "aarch64-linux-gnu-objdump", libc, fn)
		if len(starts) < 2 {
			t.Logf("objdump does not disassemble %s in %s", fn, libc)
			continue
		}
		checked := 0
		for addr := loc.Addr + 1; addr < loc.Addr+size[fn]; addr++ {
			l, err := Locate(libc, fmt.Sprintf("%#x", addr), nil)
			if isStart := slices.Contains(starts, addr); isStart != (err == nil) || err == nil && l.Unverified != "" {
				t.Errorf("%s at %#x: objdump says start=%v, Locate: %+v, %v", fn, addr, isStart, l, err)
				continue
			}
			checked++
		}
		if checked < 16 {
			t.Errorf("%s: only %d addresses checked", fn, checked)
		}
		t.Logf("%s: %d addresses agree with objdump", fn, checked)
	}
}

// TestLibDirs: the library directories of each architecture start with
// its multiarch ones.
func TestLibDirs(t *testing.T) {
	for goarch, want := range map[string]string{"amd64": "/lib/x86_64-linux-gnu", "arm64": "/lib/aarch64-linux-gnu"} {
		dirs := libDirs(goarch)
		if dirs[0] != want || !slices.Contains(dirs, "/usr/"+strings.TrimPrefix(want, "/")) || !slices.Contains(dirs, "/usr/lib64") {
			t.Errorf("libDirs(%s) = %v, want %s first", goarch, dirs, want)
		}
	}
	if dirs := libDirs("riscv64"); slices.ContainsFunc(dirs, func(d string) bool { return strings.Contains(d, "-linux-gnu") }) {
		t.Errorf("libDirs(riscv64) = %v: another architecture's", dirs)
	}
}
