package replay

import "testing"

// TestParseCast checks --cast's names, which are probespec.ParseType's,
// and what each cast makes of -1 and of 0x80 (the top bit of a byte).
func TestParseCast(t *testing.T) {
	for _, tc := range []struct {
		name        string
		minus1, x80 int64
	}{
		{"", -1, 0x80},
		{"s8", -1, -0x80},
		{"u8", 0xff, 0x80},
		{"s16", -1, 0x80},
		{"u16", 0xffff, 0x80},
		{"s32", -1, 0x80},
		{"u32", 0xffffffff, 0x80},
		{"s64", -1, 0x80},
		{"u64", -1, 0x80},
	} {
		c, err := ParseCast(tc.name)
		if err != nil {
			t.Errorf("ParseCast(%q): %v", tc.name, err)
			continue
		}
		if got := c.Apply(-1); got != tc.minus1 {
			t.Errorf("%q: -1 casts to %d, want %d", tc.name, got, tc.minus1)
		}
		if got := c.Apply(0x80); got != tc.x80 {
			t.Errorf("%q: 0x80 casts to %d, want %d", tc.name, got, tc.x80)
		}
	}
	for _, bad := range []string{"s", "u", "x8", "S8", "s7", "u128", "s08", "u8x", "s+8", "u 8", "s8 ", "int", "uint32_t"} {
		want := `cast "` + bad + `": want s8, u8, s16, u16, s32, u32, s64 or u64`
		if _, err := ParseCast(bad); err == nil || err.Error() != want {
			t.Errorf("ParseCast(%q): %v, want the error %s", bad, err, want)
		}
	}
}
