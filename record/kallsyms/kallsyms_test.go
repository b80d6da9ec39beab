package kallsyms

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRead reads a kallsyms with a module, a hidden address, a weak
// symbol and lines that are not symbols.
func TestRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kallsyms")
	text := "ffffffff81000000 T _stext\n" +
		"\n" +
		"ffffffff81000100 t core_fn\n" +
		"0000000000000000 W weak_fn\n" +
		"xyz D not_hex\n" +
		"ffffffff81000200 TT two_letters\n" +
		"ffffffffc0001000 t mod_fn\t[mymod]\n" +
		"ffffffffc0002000 T\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	type sym struct {
		addr      uint64
		typ       byte
		name, mod string
		isFunc    bool
	}
	var got []sym
	lines, err := Read(path, func(s *Symbol) {
		got = append(got, sym{s.Addr, s.Type, string(s.Name), string(s.Module), IsFunc(s.Type)})
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []sym{
		{0xffffffff81000000, 'T', "_stext", "", true},
		{0xffffffff81000100, 't', "core_fn", "", true},
		{0, 'W', "weak_fn", "", true},
		{0, 'D', "not_hex", "", false},
		{0xffffffffc0001000, 't', "mod_fn", "[mymod]", true},
	}
	if lines != 8 || !slices.Equal(got, want) {
		t.Errorf("Read: %d lines, %+v; want 8 lines, %+v", lines, got, want)
	}
	if _, err := Read(filepath.Join(t.TempDir(), "none"), func(*Symbol) { t.Error("a symbol of no file") }); !os.IsNotExist(err) {
		t.Errorf("Read of no file: %v", err)
	}
}

// FuzzSplitFields: splitFields finds the fields bytes.Fields finds.
func FuzzSplitFields(f *testing.F) {
	for _, s := range []string{"", " ", "ffffffff816d5b70 T vfs_read", "ffffffffc0a01000 t f\t[ext4]", "a b c d e f",
		"a\u00a0b\u0085c\u2028d e", "\xff \xfe\x80 x", "  lead  trail  "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var fields [4][]byte
		n := splitFields(line, &fields)
		want := bytes.Fields(line)
		if len(want) > len(fields) {
			want = want[:len(fields)]
		}
		if n != len(want) {
			t.Fatalf("splitFields(%q): %d fields, bytes.Fields %d", line, n, len(want))
		}
		for i := range n {
			if !bytes.Equal(fields[i], want[i]) {
				t.Fatalf("splitFields(%q): field %d is %q, bytes.Fields %q", line, i, fields[i], want[i])
			}
		}
	})
}

// BenchmarkRead reads this host's /proc/kallsyms and does nothing with it.
func BenchmarkRead(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read(Path, func(*Symbol) {}); err != nil {
			b.Skip(err)
		}
	}
}
