package ctypes

import (
	"debug/elf"
	"os"
	"path/filepath"
	"testing"
)

// exercise runs every entry point of a Binary on a (possibly corrupt)
// file: no panic may escape.
func exercise(path string) {
	b, err := OpenBinary(path, []string{filepath.Dir(path)})
	if err != nil {
		return
	}
	for _, name := range []string{"rx", "by_value", "ret_big", "pass_pair", "main", "opaque_user"} {
		fn, err := b.Func(name)
		if err != nil {
			continue
		}
		for _, p := range fn.Params {
			fn.ParamAccess(p.ArgName(), []Step{Arrow("hdr"), Dot("id")})
			fn.ParamAccess(p.ArgName(), []Step{Arrow("buf"), Arrow("data"), Index(2)})
			fn.ParamAccess(p.ArgName(), []Step{Dot("p")})
			fn.ParamAccess(p.ArgName(), nil)
			_ = p.Type.String()
			p.Type.Align()
			p.Type.MemberNames()
		}
		fn.RetAccess(nil)
		_ = fn.Signature()
	}
	for _, name := range []string{"struct req", "union nosuch", "size_t"} {
		if t, err := b.LookupType(name); err == nil {
			Resolve(PointerTo(t), []Step{Arrow("next"), Arrow("u"), Dot("l")})
		}
	}
}

// debugInfo returns the file offset and size of bin's .debug_info.
func debugInfo(t testing.TB, bin string) (off, size int64) {
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := f.Section(".debug_info")
	if s == nil || s.Flags&elf.SHF_COMPRESSED != 0 {
		t.Skip("no uncompressed .debug_info")
	}
	return int64(s.Offset), int64(s.Size)
}

// TestCorruptDWARF overwrites bytes of the workload's .debug_info (every
// 97th, in 64 copies) and reads the result: errors, never a panic (the
// package recovers debug/dwarf's panics and returns ErrBadDWARF).
func TestCorruptDWARF(t *testing.T) {
	bin := build(t, "-O0")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	off, size := debugInfo(t, bin)
	dir := t.TempDir()
	for i := int64(0); i < 64; i++ {
		c := append([]byte(nil), data...)
		for p := off + i*size/64; p < off+size; p += 97 {
			c[p] ^= byte(0x55 + i)
		}
		path := filepath.Join(dir, "corrupt")
		if err := os.WriteFile(path, c, 0o755); err != nil {
			t.Fatal(err)
		}
		exercise(path)
	}
}

// FuzzBinary reads an arbitrary file as a binary with DWARF: no panic.
// The seed is the -O0 workload, built by cc when the fuzzer starts.
func FuzzBinary(f *testing.F) {
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	if bin := build(f, "-O0"); bin != "" {
		if data, err := os.ReadFile(bin); err == nil {
			f.Add(data)
		}
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "bin")
		if err := os.WriteFile(path, data, 0o755); err != nil {
			t.Fatal(err)
		}
		exercise(path)
	})
}
