package elfsym

import (
	"bufio"
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"
)

const targetSrc = `
#include <stdio.h>
__attribute__((noinline)) int tape_target(int x) { return x * 3 + 1; }
__attribute__((noinline)) static int tape_static(int x) { return x - 7; }
int main(int argc, char **argv) {
	(void)argv;
	printf("%d\n", tape_target(argc) + tape_static(argc));
	return 0;
}
`

// buildTarget compiles targetSrc with gcc and extra flags into t.TempDir().
func buildTarget(t *testing.T, name string, flags ...string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "target.c")
	if err := os.WriteFile(src, []byte(targetSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	args := append([]string{"-O1", "-g", "-o", out, src}, flags...)
	if b, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, b)
	}
	return out
}

func libcPath(t *testing.T) string {
	t.Helper()
	p, err := ResolveBinary("libc", 0)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	readelfSym  = regexp.MustCompile(`^\s*\d+:\s+([0-9a-f]+)\s+\d+\s+(FUNC|IFUNC)\s+\S+\s+\S+\s+\d+\s+(\S+)`)
	readelfLoad = regexp.MustCompile(`^\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+([RWE ]+?)\s+0x`)
)

// readelfOffset computes sym's file offset the textbook way, from readelf -s
// (the value) and readelf -l (the executable LOAD segment holding it). sym
// may name a version; without one, readelf's "name@@V" or plain "name"
// entries count, not the older "name@V".
func readelfOffset(t *testing.T, path, sym string) uint64 {
	t.Helper()
	if _, err := exec.LookPath("readelf"); err != nil {
		t.Skip("no readelf")
	}
	out, err := exec.Command("readelf", "-sW", path).Output()
	if err != nil {
		t.Fatalf("readelf -s: %v", err)
	}
	var value uint64
	found := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := readelfSym.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if n, _, hidden := splitVersion(m[3]); m[3] != sym && (strings.Contains(sym, "@") || n != sym || hidden) {
			continue
		}
		v, _ := strconv.ParseUint(m[1], 16, 64)
		if v == 0 {
			continue
		}
		value, found = v, true
		break
	}
	if !found {
		t.Fatalf("readelf -s %s: no %s", path, sym)
	}
	out, err = exec.Command("readelf", "-lW", path).Output()
	if err != nil {
		t.Fatalf("readelf -l: %v", err)
	}
	sc = bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := readelfLoad.FindStringSubmatch(sc.Text())
		if m == nil || !strings.Contains(m[5], "E") {
			continue
		}
		off, _ := strconv.ParseUint(m[1], 16, 64)
		vaddr, _ := strconv.ParseUint(m[2], 16, 64)
		filesz, _ := strconv.ParseUint(m[3], 16, 64)
		if vaddr <= value && value < vaddr+filesz {
			return value - vaddr + off
		}
	}
	t.Fatalf("readelf -l %s: no executable LOAD holds %#x", path, value)
	return 0
}

func TestSymbolOffset(t *testing.T) {
	pie := buildTarget(t, "pie", "-pie", "-fPIE")
	nopie := buildTarget(t, "nopie", "-no-pie", "-fno-PIE")
	libc := libcPath(t)
	tests := []struct {
		name, path, sym string
		wantType        elf.Type
	}{
		{"pie", pie, "tape_target", elf.ET_DYN},
		{"pie static func", pie, "tape_static", elf.ET_DYN},
		{"pie main", pie, "main", elf.ET_DYN},
		{"nopie", nopie, "tape_target", elf.ET_EXEC},
		{"nopie static func", nopie, "tape_static", elf.ET_EXEC},
		{"libc getpid", libc, "getpid", elf.ET_DYN},
		{"libc malloc", libc, "malloc", elf.ET_DYN},
		{"libc versioned name", libc, "malloc@@GLIBC_2.2.5", elf.ET_DYN},
		{"libc ifunc", libc, "memcpy", elf.ET_DYN},
		{"libc old version", libc, "memcpy@GLIBC_2.2.5", elf.ET_DYN},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := elf.Open(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			typ := f.Type
			f.Close()
			if typ != tt.wantType {
				t.Fatalf("%s is %v, want %v", tt.path, typ, tt.wantType)
			}
			off, err := SymbolOffset(tt.path, tt.sym)
			if err != nil {
				t.Fatal(err)
			}
			if want := readelfOffset(t, tt.path, tt.sym); off != want {
				t.Errorf("SymbolOffset = %#x, readelf arithmetic says %#x", off, want)
			}
			// cilium/ebpf must map the offset back to a symbol at offset 0
			// (maybe an alias) whose own offset is ours.
			ex, err := link.OpenExecutable(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			so, err := ex.Symbol(off)
			if tt.name == "libc ifunc" || tt.name == "libc old version" {
				// cilium/ebpf only knows STT_FUNC symbols, by unversioned name.
				return
			}
			if err != nil {
				t.Fatalf("cilium Symbol(%#x): %v", off, err)
			}
			if so.Offset != 0 {
				t.Errorf("cilium says %#x is %s+%#x", off, so.Symbol, so.Offset)
			}
			if alias, err := SymbolOffset(tt.path, so.Symbol); err != nil || alias != off {
				t.Errorf("alias %s: offset %#x, %v; want %#x", so.Symbol, alias, err, off)
			}
		})
	}
}

func TestSymbolOffsetMissing(t *testing.T) {
	pie := buildTarget(t, "pie")
	_, err := SymbolOffset(pie, "tape_targte")
	if err == nil || !strings.Contains(err.Error(), `"tape_target"`) {
		t.Errorf("error %v does not suggest tape_target", err)
	}
	_, err = SymbolOffset(libcPath(t), "mallok")
	if err == nil || !strings.Contains(err.Error(), `did you mean "malloc"`) {
		t.Errorf("error %v does not suggest malloc", err)
	}
	// printf is only imported by the binary: not a function of it.
	if _, err := SymbolOffset(pie, "printf"); err == nil {
		t.Error("undefined printf resolved")
	}
	if _, err := SymbolOffset(filepath.Join(t.TempDir(), "nope"), "main"); err == nil {
		t.Error("missing file resolved")
	}
}

func TestFuncSymbols(t *testing.T) {
	pie := buildTarget(t, "pie")
	names, err := FuncSymbols(pie)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"main", "tape_target", "tape_static"} {
		if !slices.Contains(names, want) {
			t.Errorf("FuncSymbols(pie) lacks %s: %v", want, names)
		}
	}
	if slices.Contains(names, "printf") {
		t.Error("FuncSymbols lists the undefined printf")
	}
	libcNames, err := FuncSymbols(libcPath(t))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(libcNames) || slices.Compact(slices.Clone(libcNames)) == nil || len(slices.Compact(slices.Clone(libcNames))) != len(libcNames) {
		t.Error("libc names unsorted or duplicated")
	}
	for _, want := range []string{"malloc", "getpid", "memcpy"} {
		if !slices.Contains(libcNames, want) {
			t.Errorf("libc lacks %s", want)
		}
	}
	for _, n := range libcNames {
		if strings.Contains(n, "@") {
			t.Errorf("versioned name %s", n)
		}
	}
}

func TestBuildID(t *testing.T) {
	withID := buildTarget(t, "withid", "-Wl,--build-id=sha1")
	id, err := BuildID(withID)
	if err != nil {
		t.Fatal(err)
	}
	if len(id) != 40 {
		t.Errorf("build id %q is not 20 bytes of hex", id)
	}
	if out, err := exec.Command("readelf", "-n", withID).Output(); err == nil && !strings.Contains(string(out), id) {
		t.Errorf("readelf -n does not show build id %s:\n%s", id, out)
	}
	noID := buildTarget(t, "noid", "-Wl,--build-id=none")
	id, err = BuildID(noID)
	if err != nil || id != "" {
		t.Errorf("BuildID(no id) = %q, %v", id, err)
	}
	if _, err := BuildID(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Error("BuildID of a missing file succeeded")
	}
}

func TestResolveBinary(t *testing.T) {
	libc := libcPath(t)
	if filepath.Base(libc) != "libc.so.6" && !strings.HasPrefix(filepath.Base(libc), "libc-") {
		t.Errorf("libc resolved to %s", libc)
	}
	for _, name := range []string{"libc.so.6", "c"} {
		if p, err := ResolveBinary(name, 0); err != nil || p != libc {
			t.Errorf("ResolveBinary(%q) = %q, %v; want %s", name, p, err, libc)
		}
	}
	if p, err := ResolveBinary("libpthread", 0); err != nil || !strings.HasPrefix(filepath.Base(p), "libpthread") {
		t.Errorf("ResolveBinary(libpthread) = %q, %v", p, err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	if p, err := ResolveBinary("sh", 0); err != nil || p != sh {
		t.Errorf("ResolveBinary(sh) = %q, %v; want %s", p, err, sh)
	}

	bin := buildTarget(t, "prog")
	t.Chdir(filepath.Dir(bin))
	if p, err := ResolveBinary("./prog", 0); err != nil || p != bin {
		t.Errorf("ResolveBinary(./prog) = %q, %v; want %s", p, err, bin)
	}
	if p, err := ResolveBinary("prog", 0); err != nil || p != bin {
		t.Errorf("ResolveBinary(prog) = %q, %v; want %s (from the working directory)", p, err, bin)
	}
	if _, err := ResolveBinary("./nope", 0); err == nil {
		t.Error("ResolveBinary(./nope) succeeded")
	}
	_, err = ResolveBinary("libnosuchlib_xyz", 0)
	if err == nil || !strings.Contains(err.Error(), "ldconfig") || !strings.Contains(err.Error(), "/usr/lib64") || !strings.Contains(err.Error(), "$PATH") {
		t.Errorf("ResolveBinary(libnosuchlib_xyz) error %v does not say what it searched", err)
	}

	// With a pid, the process's own mappings win.
	cmd := exec.Command(sh, "-c", "read x")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	pid := cmd.Process.Pid
	// Wait for the dynamic loader to map libc.
	var p string
	for range 200 {
		if p, err = ResolveBinary("libc", pid); err == nil && p == libc {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil || p != libc {
		t.Errorf("ResolveBinary(libc, %d) = %q, %v; want %s", pid, p, err, libc)
	}
	exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if p, err := ResolveBinary(filepath.Base(exe), pid); err != nil || p != exe {
		t.Errorf("ResolveBinary(%s, %d) = %q, %v; want %s", filepath.Base(exe), pid, p, err, exe)
	}
	_, err = ResolveBinary("libnosuchlib_xyz", pid)
	if err == nil || !strings.Contains(err.Error(), "/maps") {
		t.Errorf("error %v does not name the maps file", err)
	}
}

func TestLdconfigParse(t *testing.T) {
	out := []byte(`552 libs found in cache ` + "`/etc/ld.so.cache'" + `
	libpthread.so.0 (libc6) => /lib32/libpthread.so.0
	libpthread.so.0 (libc6,x86-64) => /lib/x86_64-linux-gnu/libpthread.so.0
	libcrypt.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcrypt.so.1
	libc.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libc.so.6
	libc.so.6 (libc6) => /lib32/libc.so.6
`)
	// An arm64 host with armhf libraries too.
	arm := []byte(`420 libs found in cache ` + "`/etc/ld.so.cache'" + `
	libc.so.6 (libc6,hard-float) => /lib/arm-linux-gnueabihf/libc.so.6
	libc.so.6 (libc6,AArch64, OS ABI: Linux 3.7.0) => /lib/aarch64-linux-gnu/libc.so.6
	libcrypt.so.1 (libc6,hard-float) => /lib/arm-linux-gnueabihf/libcrypt.so.1
`)
	if got := fromLdconfig(arm, "libc", "arm64"); got != "/lib/aarch64-linux-gnu/libc.so.6" {
		t.Errorf("arm64: fromLdconfig(libc) = %q", got)
	}
	if got := fromLdconfig(arm, "libcrypt", "arm64"); got != "" {
		t.Errorf("arm64: fromLdconfig(libcrypt) = %q, an armhf library", got)
	}
	if got := fromLdconfig(out, "libc", "arm64"); got != "" {
		t.Errorf("arm64: fromLdconfig(libc) of an x86-64 cache = %q", got)
	}
	tests := []struct{ name, goarch, want string }{
		{"libc", "amd64", "/lib/x86_64-linux-gnu/libc.so.6"},
		{"libc.so.6", "amd64", "/lib/x86_64-linux-gnu/libc.so.6"},
		{"libc.so", "amd64", "/lib/x86_64-linux-gnu/libc.so.6"},
		{"libpthread", "amd64", "/lib/x86_64-linux-gnu/libpthread.so.0"},
		{"libpthread", "386", "/lib32/libpthread.so.0"},
		{"libcr", "amd64", ""},
		{"libcrypt", "amd64", "/lib/x86_64-linux-gnu/libcrypt.so.1"},
	}
	for _, tt := range tests {
		if got := fromLdconfig(out, tt.name, tt.goarch); got != tt.want {
			t.Errorf("fromLdconfig(%q, %s) = %q, want %q", tt.name, tt.goarch, got, tt.want)
		}
	}
}

func TestMapsPath(t *testing.T) {
	tests := []struct{ line, want string }{
		{"7f1c2a000000-7f1c2a028000 r--p 00000000 08:01 1234   /usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		{"7f1c2a000000-7f1c2a028000 r--p 00000000 08:01 1234   /tmp/my prog (deleted)", "/tmp/my prog"},
		{"7ffd1a000000-7ffd1a021000 rw-p 00000000 00:00 0                          [stack]", "[stack]"},
		{"7f1c2a000000-7f1c2a028000 rw-p 00000000 00:00 0 ", ""},
		{"garbage", ""},
	}
	for _, tt := range tests {
		if got := mapsPath(tt.line); got != tt.want {
			t.Errorf("mapsPath(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

// TestMappedFiles lists the files a running copy of sleep maps: its own
// binary once, however many mappings it has, and no longer once deleted.
func TestMappedFiles(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("skipping: no sleep")
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "mapped sleep") // a space, as maps lines can have
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	var files []string
	for deadline := time.Now().Add(10 * time.Second); ; {
		if files, err = MappedFiles(pid); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(files, bin) && len(files) > 1 {
			break // the binary and the dynamic loader, at least
		}
		if time.Now().After(deadline) {
			t.Fatalf("MappedFiles(%d) = %q, without %s", pid, files, bin)
		}
		time.Sleep(10 * time.Millisecond)
	}
	maps, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(maps, []byte(bin+"\n")); n < 2 {
		t.Fatalf("%s is mapped %d times: the test wants several mappings of one file", bin, n)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f] || !filepath.IsAbs(f) {
			t.Errorf("MappedFiles: %q listed twice or not absolute", f)
		}
		seen[f] = true
		if _, err := os.Stat(f); err != nil {
			t.Errorf("MappedFiles: %v", err)
		}
	}
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	if files, err = MappedFiles(pid); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(files, bin) || len(files) == 0 {
		t.Errorf("after deleting %s, MappedFiles = %q", bin, files)
	}
	if _, err := MappedFiles(-1); err == nil {
		t.Error("MappedFiles(-1) succeeded")
	}
}
