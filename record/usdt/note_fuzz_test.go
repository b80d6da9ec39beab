package usdt

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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

// buildTinySDT builds tinySDT with gcc into dir, or skips.
func buildTinySDT(tb testing.TB, dir string) []byte {
	tb.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		tb.Skip("no gcc")
	}
	src, exe := filepath.Join(dir, "tiny.c"), filepath.Join(dir, "tiny")
	if err := os.WriteFile(src, []byte(tinySDT), 0o644); err != nil {
		tb.Fatal(err)
	}
	out, err := exec.Command(gcc, "-O2", "-static", "-nostdlib", "-fno-asynchronous-unwind-tables", "-s",
		"-Wl,--build-id=none", "-Wl,-z,norelro", "-Wl,-N", "-Wl,--no-warn-rwx-segments", "-o", exe, src).CombinedOutput()
	if err != nil {
		tb.Skipf("gcc: %v\n%s", err, out)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// FuzzRead reads arbitrary bytes as an ELF file with USDT notes: no panic,
// and what Read accepts is consistent (named probes with sites).
func FuzzRead(f *testing.F) {
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	path := filepath.Join(f.TempDir(), "in.elf")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		probes, err := Read(path)
		if err != nil {
			return
		}
		for _, p := range probes {
			if p.Provider == "" || p.Name == "" || len(p.Sites) == 0 || len(p.Sites) != len(p.Locations) {
				t.Fatalf("probe %+v", p)
			}
			for _, s := range p.Sites {
				if s.Err == nil && len(s.Args) > 0 {
					s.BPFArgs() // must not panic; symbolic arguments may still fail
				}
			}
		}
	})
}

// FuzzParseNote parses arbitrary stapsdt descriptors of 32- and 64-bit,
// little- and big-endian files: no panic, and an accepted note has a
// provider and a name without NUL bytes.
func FuzzParseNote(f *testing.F) {
	desc := make([]byte, 24)
	binary.LittleEndian.PutUint64(desc, 0x1139)
	binary.LittleEndian.PutUint64(desc[8:], 0x2004)
	f.Add(append(desc, "p\x00plain\x00-8@%rax 8@counter(%rip)\x00"...), false, false)
	f.Add(append(desc[:12:12], "libc\x00setjmp\x008@%rdi -4@%esi 8@%rax\x00"...), true, false)
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), false, true)
	f.Fuzz(func(t *testing.T, desc []byte, addr32, big bool) {
		var bo binary.ByteOrder = binary.LittleEndian
		if big {
			bo = binary.BigEndian
		}
		size := 8
		if addr32 {
			size = 4
		}
		n, err := parseNote(desc, bo, size)
		if err != nil {
			return
		}
		if n.provider == "" || n.name == "" || strings.ContainsRune(n.provider+n.name, 0) {
			t.Fatalf("parseNote accepted provider %q name %q", n.provider, n.name)
		}
	})
}

// TestWriteUSDTFuzzSeeds rewrites testdata/fuzz/FuzzRead/seed-tiny (a
// static two-probe ELF file) when BPFTAPE_WRITE_FUZZ_SEEDS=1.
func TestWriteUSDTFuzzSeeds(t *testing.T) {
	if os.Getenv("BPFTAPE_WRITE_FUZZ_SEEDS") != "1" {
		t.Skip("set BPFTAPE_WRITE_FUZZ_SEEDS=1 to rewrite testdata/fuzz/FuzzRead/seed-tiny")
	}
	data := buildTinySDT(t, t.TempDir())
	path := filepath.Join(t.TempDir(), "tiny")
	os.WriteFile(path, data, 0o755)
	probes, err := Read(path)
	if err != nil || len(probes) != 2 || probes[1].Semaphore == 0 {
		t.Fatalf("tiny ELF of %d bytes: probes %+v, %v", len(data), probes, err)
	}
	if f, err := elf.Open(path); err != nil || f.Section(noteSection) == nil {
		t.Fatalf("tiny ELF: %v", err)
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzRead")
	os.MkdirAll(dir, 0o755)
	body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
	if err := os.WriteFile(filepath.Join(dir, "seed-tiny"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("seed-tiny: %d bytes, probes %v and %v", len(data), probes[0].String(), probes[1].String())
}
