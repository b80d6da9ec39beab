package ctypes

import (
	"fmt"
	"strings"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/probespec"
)

// Source looks types up by their C name ("struct foo", "size_t"): a
// *Binary (DWARF) or a *BTF.
type Source interface {
	LookupType(name string) (*Type, error)
}

var (
	_ Source = (*Binary)(nil)
	_ Source = (*BTF)(nil)
)

// fixed are the non-integer type names a cast may use without debug info;
// the integer ones (u8..s64, stdint's, C's keywords) are probespec's.
var fixed = map[string]*Type{
	"bool":  {Kind: Bool, Size: 1, name: "bool"},
	"_Bool": {Kind: Bool, Size: 1, name: "_Bool"},
	"void":  voidType,
}

// ParseType returns the type a cast names: "u32 *", "unsigned long",
// "const char *", "struct foo *", "size_t". Integer types of C and
// bpftrace's u8..u64 and s8..s64 need no debug info; struct, union and
// enum types and other typedefs are looked up in src (which may be nil
// when there is none). Sizes are those of 64-bit Linux, x86-64's and
// arm64's alike (LP64: long is 8 bytes).
func ParseType(text string, src Source) (*Type, error) {
	s := strings.TrimSpace(text)
	stars := 0
	for {
		s = strings.TrimSpace(s)
		if !strings.HasSuffix(s, "*") {
			break
		}
		stars++
		s = s[:len(s)-1]
	}
	var words []string
	var quals []string
	for _, w := range strings.Fields(s) {
		switch w {
		case "const", "volatile":
			quals = append(quals, w)
		case "restrict", "__restrict":
		default:
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		return nil, errorf(ErrBadType, "%q names no type", text)
	}
	t, err := baseType(words, src)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", text, err)
	}
	if len(quals) > 0 {
		t = withName(t, strings.Join(quals, " ")+" "+t.String())
	}
	for range stars {
		t = PointerTo(t)
	}
	return t, nil
}

// baseType is the type named by words, without qualifiers or pointers.
func baseType(words []string, src Source) (*Type, error) {
	switch words[0] {
	case "struct", "union", "enum":
		if len(words) != 2 {
			return nil, errorf(ErrBadType, "%s needs one name", words[0])
		}
		if src == nil {
			return nil, errorf(ErrNoType, "%s %s: no debug info to look it up in", words[0], words[1])
		}
		return src.LookupType(words[0] + " " + words[1])
	}
	if len(words) == 1 && words[0] == "char" {
		return plainChar(src), nil
	}
	if t, ok := probespec.ParseCInteger(words); ok {
		return intType(t, strings.Join(words, " ")), nil
	}
	if len(words) == 1 {
		if src != nil {
			if t, err := src.LookupType(words[0]); err == nil {
				return t, nil
			}
		}
		if t, ok := fixed[words[0]]; ok {
			return t, nil
		}
		if t, ok := probespec.LookupIntName(words[0]); ok {
			return intType(t, words[0]), nil
		}
		if src == nil {
			return nil, errorf(ErrBadType, "unknown type %s (no debug info to look it up in)", words[0])
		}
		return src.LookupType(words[0])
	}
	return nil, errorf(ErrBadType, "unknown type %s", strings.Join(words, " "))
}

// plainChar is the type a cast to plain char names: signed on x86-64 and
// unsigned on arm64, as the debug info of src says (DWARF's char is
// DW_ATE_signed_char or DW_ATE_unsigned_char), or else as the host's ABI
// does.
func plainChar(src Source) *Type {
	if src != nil {
		if t, err := src.LookupType("char"); err == nil && t.Kind == Int && t.Size == 1 {
			return t
		}
	}
	if bpf.HostArch() == bpf.ARM64 {
		return intType(format.Uint8, "char")
	}
	return intType(format.Int8, "char")
}

// intType is the integer type t spelt name.
func intType(t format.Type, name string) *Type {
	return &Type{Kind: Int, Size: int64(t.Size()), Signed: t.Signed(), name: name}
}
