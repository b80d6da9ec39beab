package probespec

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bpftape/bpftape/format"
)

// The names of integer types: one vocabulary, parsed here only.
//
//   - A field's TYPE (arg0:u32) and the analysis verbs' --cast take
//     bpftrace's names, s8 ... u64: ParseType.
//   - A cast in an expression ((u32 *)arg0, (unsigned long)arg1) also takes
//     the fixed-size typedefs of C (uint32_t, size_t...): LookupIntName, and
//     C's integer keywords (unsigned long, signed char...): ParseCInteger.
//     record/ctypes, which resolves a cast's type, asks these two.

// fieldTypes are the names of a field's TYPE, in the order messages list
// them.
var fieldTypes = []struct {
	name string
	t    format.Type
}{
	{"s8", format.Int8}, {"u8", format.Uint8},
	{"s16", format.Int16}, {"u16", format.Uint16},
	{"s32", format.Int32}, {"u32", format.Uint32},
	{"s64", format.Int64}, {"u64", format.Uint64},
}

// cIntTypedefs are the integer typedefs a cast may name without debug
// info besides fieldTypes' names: stdint's and a few of libc's, with
// x86-64's sizes.
var cIntTypedefs = map[string]format.Type{
	"int8_t": format.Int8, "int16_t": format.Int16, "int32_t": format.Int32, "int64_t": format.Int64,
	"uint8_t": format.Uint8, "uint16_t": format.Uint16, "uint32_t": format.Uint32, "uint64_t": format.Uint64,
	"size_t": format.Uint64, "ssize_t": format.Int64,
	"uintptr_t": format.Uint64, "intptr_t": format.Int64,
	"off_t": format.Int64,
}

// cIntKeywords are the words ParseCInteger combines.
var cIntKeywords = []string{"signed", "__signed__", "unsigned", "char", "short", "int", "long"}

// FieldTypeNames lists the names ParseType takes, for messages:
// "s8, u8, s16, u16, s32, u32, s64 or u64".
var FieldTypeNames = func() string {
	names := make([]string, len(fieldTypes))
	for i, ft := range fieldTypes {
		names[i] = ft.name
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}()

// ParseType parses s8, u8, s16, u16, s32, u32, s64 or u64: the TYPE of a
// field (arg0:u32) and the --cast of the analysis verbs.
func ParseType(s string) (format.Type, error) {
	for _, ft := range fieldTypes {
		if ft.name == s {
			return ft.t, nil
		}
	}
	return format.TypeInvalid, fmt.Errorf("unknown type %q: use %s", s, FieldTypeNames)
}

// TypeName returns the name ParseType parses into t (s8 ... u64), "string"
// for format.String, and "" for any other type.
func TypeName(t format.Type) string {
	switch {
	case t == format.String:
		return "string"
	case t.IsInt():
		sign := "u"
		if t.Signed() {
			sign = "s"
		}
		return sign + strconv.Itoa(8*t.Size())
	}
	return ""
}

// LookupIntName returns the integer type a one-word name denotes in a
// cast without debug info: s8 ... u64 as ParseType parses them, stdint's
// int8_t ... uint64_t, size_t, ssize_t, uintptr_t, intptr_t and off_t
// (x86-64's sizes). Debug info may define these names itself, and then
// its definition is the one to use: see record/ctypes.
func LookupIntName(name string) (format.Type, bool) {
	if t, err := ParseType(name); err == nil {
		return t, true
	}
	t, ok := cIntTypedefs[name]
	return t, ok
}

// ParseCInteger parses C's integer type names from their keywords:
// "unsigned", "long long int", "signed char", "short". Sizes are x86-64's
// (long is 8 bytes); ok is false if words are not such a name.
func ParseCInteger(words []string) (t format.Type, ok bool) {
	var signed, unsigned, char, short, int_, longs int
	for _, w := range words {
		switch w {
		case "signed", "__signed__":
			signed++
		case "unsigned":
			unsigned++
		case "char":
			char++
		case "short":
			short++
		case "int":
			int_++
		case "long":
			longs++
		default:
			return format.TypeInvalid, false
		}
	}
	if len(words) == 0 || signed+unsigned > 1 || char > 1 || short > 1 || int_ > 1 || longs > 2 ||
		char > 0 && short+longs+int_ > 0 || short > 0 && longs > 0 {
		return format.TypeInvalid, false
	}
	size := 4
	switch {
	case char > 0:
		size = 1
	case short > 0:
		size = 2
	case longs > 0:
		size = 8
	}
	t, err := format.IntType(size, unsigned == 0)
	return t, err == nil
}
