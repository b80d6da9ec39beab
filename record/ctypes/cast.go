package ctypes

import (
	"fmt"
	"strings"
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

// fixed are the integer type names a cast may use without debug info:
// bpftrace's u8..s64 and stdint's.
var fixed = map[string]*Type{}

func init() {
	for _, size := range []int64{1, 2, 4, 8} {
		bits := size * 8
		fixed[fmt.Sprintf("u%d", bits)] = &Type{Kind: Int, Size: size, name: fmt.Sprintf("u%d", bits)}
		fixed[fmt.Sprintf("s%d", bits)] = &Type{Kind: Int, Size: size, Signed: true, name: fmt.Sprintf("s%d", bits)}
		fixed[fmt.Sprintf("uint%d_t", bits)] = &Type{Kind: Int, Size: size, name: fmt.Sprintf("uint%d_t", bits)}
		fixed[fmt.Sprintf("int%d_t", bits)] = &Type{Kind: Int, Size: size, Signed: true, name: fmt.Sprintf("int%d_t", bits)}
	}
	for name, signed := range map[string]bool{"size_t": false, "ssize_t": true, "uintptr_t": false, "intptr_t": true, "off_t": true} {
		fixed[name] = &Type{Kind: Int, Size: 8, Signed: signed, name: name}
	}
	fixed["bool"] = &Type{Kind: Bool, Size: 1, name: "bool"}
	fixed["_Bool"] = &Type{Kind: Bool, Size: 1, name: "_Bool"}
	fixed["void"] = voidType
}

// ParseType returns the type a cast names: "u32 *", "unsigned long",
// "const char *", "struct foo *", "size_t". Integer types of C and
// bpftrace's u8..u64 and s8..s64 need no debug info; struct, union and
// enum types and other typedefs are looked up in src (which may be nil
// when there is none). Sizes are x86-64's (long is 8 bytes).
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
	if t, ok := cInteger(words); ok {
		return t, nil
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
		if src == nil {
			return nil, errorf(ErrBadType, "unknown type %s (no debug info to look it up in)", words[0])
		}
		return src.LookupType(words[0])
	}
	return nil, errorf(ErrBadType, "unknown type %s", strings.Join(words, " "))
}

// cInteger parses C's integer type names from their keywords: "unsigned",
// "long long int", "signed char", "short".
func cInteger(words []string) (*Type, bool) {
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
			return nil, false
		}
	}
	if signed+unsigned > 1 || char > 1 || short > 1 || int_ > 1 || longs > 2 ||
		char > 0 && short+longs+int_ > 0 || short > 0 && longs > 0 {
		return nil, false
	}
	size := int64(4)
	switch {
	case char > 0:
		size = 1
	case short > 0:
		size = 2
	case longs > 0:
		size = 8
	}
	return &Type{Kind: Int, Size: size, Signed: unsigned == 0, name: strings.Join(words, " ")}, true
}
