package usdt

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// go generate rewrites the seed testdata/fuzz/FuzzRead/seed-tiny: a static
// ELF file with two USDT probes, built with gcc.
//go:generate go run ./internal/genseeds

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
