package probespec

import (
	"strings"
	"testing"

	"github.com/bpftape/bpftape/format"
)

// TestTypeNames is the table of every integer type name: what ParseType,
// LookupIntName and ParseCInteger each make of it.
func TestTypeNames(t *testing.T) {
	const (
		field   = 1 << iota // ParseType: a field's TYPE and --cast
		lookup              // LookupIntName: a one-word name in a cast
		keyword             // ParseCInteger: C's keywords
	)
	for _, tc := range []struct {
		name  string
		want  format.Type
		takes int
	}{
		{"s8", format.Int8, field | lookup},
		{"u8", format.Uint8, field | lookup},
		{"s16", format.Int16, field | lookup},
		{"u16", format.Uint16, field | lookup},
		{"s32", format.Int32, field | lookup},
		{"u32", format.Uint32, field | lookup},
		{"s64", format.Int64, field | lookup},
		{"u64", format.Uint64, field | lookup},

		{"int8_t", format.Int8, lookup},
		{"uint8_t", format.Uint8, lookup},
		{"int16_t", format.Int16, lookup},
		{"uint16_t", format.Uint16, lookup},
		{"int32_t", format.Int32, lookup},
		{"uint32_t", format.Uint32, lookup},
		{"int64_t", format.Int64, lookup},
		{"uint64_t", format.Uint64, lookup},
		{"size_t", format.Uint64, lookup},
		{"ssize_t", format.Int64, lookup},
		{"uintptr_t", format.Uint64, lookup},
		{"intptr_t", format.Int64, lookup},
		{"off_t", format.Int64, lookup},

		{"char", format.Int8, keyword},
		{"signed char", format.Int8, keyword},
		{"unsigned char", format.Uint8, keyword},
		{"short", format.Int16, keyword},
		{"short int", format.Int16, keyword},
		{"unsigned short", format.Uint16, keyword},
		{"int", format.Int32, keyword},
		{"signed", format.Int32, keyword},
		{"__signed__ int", format.Int32, keyword},
		{"unsigned", format.Uint32, keyword},
		{"unsigned int", format.Uint32, keyword},
		{"long", format.Int64, keyword},
		{"long int", format.Int64, keyword},
		{"unsigned long", format.Uint64, keyword},
		{"long long", format.Int64, keyword},
		{"long long int", format.Int64, keyword},
		{"unsigned long long", format.Uint64, keyword},
		{"long unsigned int", format.Uint64, keyword},

		// Names none of them takes.
		{"", 0, 0},
		{"S8", 0, 0},
		{"s08", 0, 0},
		{"u8x", 0, 0},
		{"s+8", 0, 0},
		{"u 8", 0, 0},
		{" u8", 0, 0},
		{"s128", 0, 0},
		{"u", 0, 0},
		{"i32", 0, 0},
		{"int128_t", 0, 0},
		{"bool", 0, 0},
		{"void", 0, 0},
		{"string", 0, 0},
		{"char char", 0, 0},
		{"short long", 0, 0},
		{"long long long", 0, 0},
		{"signed unsigned", 0, 0},
		{"unsigned float", 0, 0},
		{"short char", 0, 0},
		{"unsigned u32", 0, 0},
	} {
		got, err := ParseType(tc.name)
		if tc.takes&field != 0 {
			if err != nil || got != tc.want {
				t.Errorf("ParseType(%q) = %v, %v; want %v", tc.name, got, err, tc.want)
			}
			if back := TypeName(got); back != tc.name {
				t.Errorf("TypeName(ParseType(%q)) = %q", tc.name, back)
			}
		} else if want := `unknown type "` + tc.name + `": use s8, u8, s16, u16, s32, u32, s64 or u64`; err == nil || err.Error() != want {
			t.Errorf("ParseType(%q) = %v, %v; want the error %s", tc.name, got, err, want)
		}

		got, ok := LookupIntName(tc.name)
		if wantOK := tc.takes&lookup != 0; ok != wantOK || ok && got != tc.want {
			t.Errorf("LookupIntName(%q) = %v, %v; want %v, %v", tc.name, got, ok, tc.want, wantOK)
		}

		got, ok = ParseCInteger(strings.Fields(tc.name))
		if wantOK := tc.takes&keyword != 0; ok != wantOK || ok && got != tc.want {
			t.Errorf("ParseCInteger(%q) = %v, %v; want %v, %v", tc.name, got, ok, tc.want, wantOK)
		}

		// Every word of a name a cast takes starts a cast in an expression.
		if tc.takes != 0 && !cTypeWords[strings.Fields(tc.name)[0]] {
			t.Errorf("%q does not start a cast", tc.name)
		}
	}
	if FieldTypeNames != "s8, u8, s16, u16, s32, u32, s64 or u64" {
		t.Errorf("FieldTypeNames = %q", FieldTypeNames)
	}
}

// TestCastNames checks that a field expression casts to every integer
// name a cast takes: the expression parser and the type parser share one
// vocabulary.
func TestCastNames(t *testing.T) {
	var names []string
	for _, ft := range fieldTypes {
		names = append(names, ft.name)
	}
	for name := range cIntTypedefs {
		names = append(names, name)
	}
	names = append(names, "unsigned long", "signed char", "__signed__ int", "long long int")
	for _, name := range names {
		for _, c := range []struct{ expr, cast string }{
			{"(" + name + ")arg0", name},
			{"*(" + name + " *)arg0", name + " *"},
		} {
			in := "k:vfs_read(" + c.expr + ")"
			s, err := Parse(in)
			if err != nil {
				t.Errorf("Parse(%q): %v", in, err)
				continue
			}
			if st := s.Fields[0].Steps; len(st) == 0 || st[0].Op != StepCast || st[0].Name != c.cast {
				t.Errorf("Parse(%q): steps %+v, want a cast to %s first", in, st, c.cast)
			}
		}
	}
}
