// Command genseeds rewrites the committed seeds of elfsym's FuzzELF,
// testdata/fuzz/FuzzELF/seed-tiny*: a small static binary, stripped, and
// its separate debug file. It needs gcc and objcopy, and is run by
// `go generate ./record/elfsym/`, in elfsym's directory.
package main

import (
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
func buildTinyELF(dir string) (stripped, debug []byte, err error) {
	for _, tool := range []string{"gcc", "objcopy"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, nil, fmt.Errorf("no %s", tool)
		}
	}
	src, exe, dbg := filepath.Join(dir, "tiny.c"), filepath.Join(dir, "tiny"), filepath.Join(dir, "tiny.debug")
	if err := os.WriteFile(src, []byte(tinyELF), 0o644); err != nil {
		return nil, nil, err
	}
	for _, args := range [][]string{
		{"gcc", "-O2", "-static", "-nostdlib", "-fno-asynchronous-unwind-tables", "-Wl,--build-id=sha1",
			"-Wl,-z,norelro", "-Wl,-N", "-Wl,--no-warn-rwx-segments", "-o", exe, src},
		{"objcopy", "--only-keep-debug", exe, dbg},
		{"objcopy", "--strip-all", "--add-gnu-debuglink=" + dbg, exe},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			return nil, nil, fmt.Errorf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if stripped, err = os.ReadFile(exe); err != nil {
		return nil, nil, err
	}
	if debug, err = os.ReadFile(dbg); err != nil {
		return nil, nil, err
	}
	return stripped, debug, nil
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("genseeds: ")
	scratch, err := os.MkdirTemp("", "bpftape-elf-seeds-")
	if err != nil {
		log.Fatal(err)
	}
	stripped, debug, err := buildTinyELF(scratch)
	os.RemoveAll(scratch)
	if err != nil {
		log.Fatal(err)
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzELF")
	os.MkdirAll(dir, 0o755)
	for name, target := range map[string]string{"seed-tiny": "twice", "seed-tiny-offset": "add+1", "seed-tiny-addr": "0x4000b0"} {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n[]byte(%q)\nstring(%q)\n", stripped, debug, target)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	log.Printf("FuzzELF seed: binary %d bytes, debug file %d bytes", len(stripped), len(debug))
}
