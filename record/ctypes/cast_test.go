package ctypes

import (
	"errors"
	"testing"
)

// TestParseTypeNoDebugInfo checks the names a cast takes without debug
// info: probespec's integer names and C's keywords, bool and void.
func TestParseTypeNoDebugInfo(t *testing.T) {
	for _, c := range []struct {
		text, name string
		kind       Kind
		size       int64
		signed     bool
	}{
		{"s8", "s8", Int, 1, true}, {"u8", "u8", Int, 1, false},
		{"s16", "s16", Int, 2, true}, {"u16", "u16", Int, 2, false},
		{"s32", "s32", Int, 4, true}, {"u32", "u32", Int, 4, false},
		{"s64", "s64", Int, 8, true}, {"u64", "u64", Int, 8, false},
		{"int8_t", "int8_t", Int, 1, true}, {"uint8_t", "uint8_t", Int, 1, false},
		{"int16_t", "int16_t", Int, 2, true}, {"uint16_t", "uint16_t", Int, 2, false},
		{"int32_t", "int32_t", Int, 4, true}, {"uint32_t", "uint32_t", Int, 4, false},
		{"int64_t", "int64_t", Int, 8, true}, {"uint64_t", "uint64_t", Int, 8, false},
		{"size_t", "size_t", Int, 8, false}, {"ssize_t", "ssize_t", Int, 8, true},
		{"uintptr_t", "uintptr_t", Int, 8, false}, {"intptr_t", "intptr_t", Int, 8, true},
		{"off_t", "off_t", Int, 8, true},
		{"char", "char", Int, 1, true}, {"unsigned char", "unsigned char", Int, 1, false},
		{"short", "short", Int, 2, true}, {"unsigned", "unsigned", Int, 4, false},
		{"long  long", "long long", Int, 8, true}, {"const unsigned long", "const unsigned long", Int, 8, false},
		{"bool", "bool", Bool, 1, false}, {"_Bool", "_Bool", Bool, 1, false},
		{"void", "void", Void, 0, false},
		{"u32 *", "u32 *", Pointer, 8, false},
	} {
		got, err := ParseType(c.text, nil)
		if err != nil {
			t.Errorf("%q: %v", c.text, err)
			continue
		}
		if got.String() != c.name || got.Kind != c.kind || got.Size != c.size || got.Signed != c.signed {
			t.Errorf("%q: %s %v size %d signed %v", c.text, got, got.Kind, got.Size, got.Signed)
		}
	}
	for _, text := range []string{"s08", "S8", "i32", "int128_t", "short long", "char char", "unsigned u32", "foo_t"} {
		if got, err := ParseType(text, nil); err == nil {
			t.Errorf("%q: %s, want an error", text, got)
		} else if !errors.Is(err, ErrBadType) {
			t.Errorf("%q: %v, want ErrBadType", text, err)
		}
	}
}
