// Command genseeds rewrites the committed seed of usdt's FuzzRead,
// testdata/fuzz/FuzzRead/seed-tiny: a static ELF file with two USDT probes.
// It needs gcc and sys/sdt.h, and is run by `go generate ./record/usdt/`,
// in usdt's directory.
package main

import (
	"debug/elf"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/bpftape/bpftape/record/usdt"
)

// tinySDT is a static program without libc whose only content is two
// USDT probes (one with a semaphore), the smallest ELF file with a
// .note.stapsdt that gcc makes: a seed for FuzzRead.
const tinySDT = `#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
unsigned short p_plain_semaphore __attribute__((section(".probes"), used));
unsigned short p_guarded_semaphore __attribute__((section(".probes"), used));
long counter;
void _start(void)
{
	long x = counter;
	DTRACE_PROBE2(p, plain, x, counter);
	if (p_guarded_semaphore)
		DTRACE_PROBE1(p, guarded, x + 1);
	for (;;)
		;
}
`

// buildTinySDT builds tinySDT with gcc into dir and returns the path of
// the executable.
func buildTinySDT(dir string) (string, error) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", fmt.Errorf("no gcc")
	}
	src, exe := filepath.Join(dir, "tiny.c"), filepath.Join(dir, "tiny")
	if err := os.WriteFile(src, []byte(tinySDT), 0o644); err != nil {
		return "", err
	}
	out, err := exec.Command(gcc, "-O2", "-static", "-nostdlib", "-fno-asynchronous-unwind-tables", "-s",
		"-Wl,--build-id=none", "-Wl,-z,norelro", "-Wl,-N", "-Wl,--no-warn-rwx-segments", "-o", exe, src).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("gcc: %v\n%s", err, out)
	}
	return exe, nil
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("genseeds: ")
	scratch, err := os.MkdirTemp("", "bpftape-usdt-seeds-")
	if err != nil {
		log.Fatal(err)
	}
	err = run(scratch)
	os.RemoveAll(scratch)
	if err != nil {
		log.Fatal(err)
	}
}

func run(scratch string) error {
	path, err := buildTinySDT(scratch)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	probes, err := usdt.Read(path)
	if err != nil || len(probes) != 2 || probes[1].Semaphore == 0 {
		return fmt.Errorf("tiny ELF of %d bytes: probes %+v, %v", len(data), probes, err)
	}
	// The note section is usdt's noteSection.
	if f, err := elf.Open(path); err != nil || f.Section(".note.stapsdt") == nil {
		return fmt.Errorf("tiny ELF: no .note.stapsdt (%v)", err)
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzRead")
	os.MkdirAll(dir, 0o755)
	body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
	if err := os.WriteFile(filepath.Join(dir, "seed-tiny"), []byte(body), 0o644); err != nil {
		return err
	}
	log.Printf("FuzzRead seed-tiny: %d bytes, probes %v and %v", len(data), probes[0].String(), probes[1].String())
	return nil
}
