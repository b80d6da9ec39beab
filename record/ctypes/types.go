package ctypes

import (
	"fmt"
	"strings"
	"sync"
)

// Kind is the kind of a Type once typedefs and qualifiers are seen through.
type Kind uint8

// Kinds of Type.
const (
	Unknown Kind = iota // a type the model does not describe (a C++ reference, a DWARF tag it does not know)
	Void
	Int      // Size bytes, Signed or not; char is an Int of size 1
	Bool     // _Bool
	Enum     // Size bytes, Signed or not
	Float    // float, double, long double and the complex types
	Pointer  // Elem
	Struct   // Members
	Union    // Members, all at offset 0
	Array    // Len elements of Elem
	Function // a function (what a function pointer points to)
)

var kindNames = [...]string{"unknown", "void", "int", "bool", "enum", "float", "pointer", "struct", "union", "array", "function"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Type is a C type: a small model of what DWARF and BTF describe, with
// typedefs and qualifiers resolved away (Kind, Size and the rest are the
// underlying type's) but the spelling kept for messages (String).
//
// A Type is not modified once returned, and may be shared by several
// goroutines. A pointer's target is converted from its source on the first
// call of Elem: kernel types reach most of the kernel's types through
// pointers, and a probe's path visits a few of them.
type Type struct {
	Kind   Kind
	Size   int64 // bytes; 0 for void, functions and incomplete types
	Signed bool  // Int, Enum

	// Len is an Array's element count; -1 for a flexible or unknown length
	// (char data[]).
	Len int64
	// Members of a Struct or Union, in declaration order; an anonymous
	// struct or union member has Name "".
	Members []Member
	// Incomplete: a struct or union declared but not defined where it was
	// found (struct foo; only).
	Incomplete bool

	// name is the C spelling: "size_t", "struct file", "char *",
	// "unsigned int", "const char *".
	name string
	// tag is the struct, union or enum tag ("file" of struct file), "" if
	// anonymous.
	tag     string
	elem    *lazyType // Pointer, Array
	complex bool      // a Float that is _Complex
}

// Member is one member of a struct or union.
type Member struct {
	Name   string // "" for an anonymous struct or union member
	Offset int64  // bytes from the start of the enclosing struct
	// BitOffset and BitSize place a bitfield: BitSize bits starting
	// BitOffset bits (counted from the least significant bit, as on
	// little-endian x86-64 and arm64) after Offset. BitSize is 0 for
	// other members.
	BitOffset, BitSize int64
	Type               *Type
	// Align is the alignment an attribute gave the member (DWARF's
	// DW_AT_alignment: long a __attribute__((aligned(16)))), 0 when it
	// has its type's.
	Align int64
}

// lazyType is a Type converted on first use (a pointer's target).
type lazyType struct {
	once sync.Once
	load func() *Type
	t    *Type
}

func (l *lazyType) get() *Type {
	l.once.Do(func() {
		if l.load != nil {
			l.t = l.load()
			l.load = nil
		}
		if l.t == nil {
			l.t = unknownType
		}
	})
	return l.t
}

func ready(t *Type) *lazyType {
	l := &lazyType{t: t}
	l.once.Do(func() {})
	return l
}

var (
	unknownType = &Type{Kind: Unknown, name: "?"}
	voidType    = &Type{Kind: Void, name: "void"}
)

// Elem is what a Pointer points to or an Array holds; nil for other kinds.
// A pointer to an unknown type points to a Type of Kind Unknown.
func (t *Type) Elem() *Type {
	if t == nil || t.elem == nil {
		return nil
	}
	return t.elem.get()
}

// String is the type as C spells it: "struct hrtimer_sleeper *", "size_t",
// "char[16]".
func (t *Type) String() string {
	if t == nil {
		return "void"
	}
	return t.name
}

// Tag is the tag of a struct, union or enum ("file" of struct file), ""
// for anonymous ones and other kinds.
func (t *Type) Tag() string { return t.tag }

// PointerTo returns a pointer to t.
func PointerTo(t *Type) *Type {
	return &Type{Kind: Pointer, Size: 8, name: pointerName(t.String()), elem: ready(t)}
}

// pointerName spells a pointer to a type spelled s.
func pointerName(s string) string {
	if strings.HasSuffix(s, "*") {
		return s + "*"
	}
	return s + " *"
}

// withName returns a copy of t spelled name (a typedef of t, or t
// qualified).
func withName(t *Type, name string) *Type {
	c := *t
	c.name = name
	return &c
}

// IsInteger reports whether a value of t is an integer the BPF side reads
// as is: an integer, bool, enum or pointer of 1, 2, 4 or 8 bytes.
func (t *Type) IsInteger() bool {
	switch t.Kind {
	case Int, Bool, Enum, Pointer:
		return t.Size == 1 || t.Size == 2 || t.Size == 4 || t.Size == 8
	}
	return false
}

// IsCharPointer reports whether t points to 1-byte integers: a C string
// that str() may read.
func (t *Type) IsCharPointer() bool {
	if t.Kind != Pointer {
		return false
	}
	e := t.Elem()
	return e.Kind == Int && e.Size == 1
}

// IsCharArray reports whether t is an array of 1-byte integers (char
// comm[16]), which str() may read.
func (t *Type) IsCharArray() bool {
	if t.Kind != Array {
		return false
	}
	e := t.Elem()
	return e.Kind == Int && e.Size == 1
}

// Align is t's natural alignment in bytes, as both ABIs define it: a
// scalar's size (16 for long double and __int128), the largest of a
// struct's members' (an aligned attribute on a member counts, one on the
// struct type itself does not). A packed struct's members may sit at
// offsets their alignment does not divide (see the x86-64 ABI's
// classification); a struct whose members or size show it packed has
// alignment 1, or its members' aligned attributes'.
func (t *Type) Align() int64 {
	budget := walkBudget
	return t.align(0, &budget)
}

func (t *Type) align(depth int, budget *int) int64 {
	if *budget--; depth > maxNesting || *budget < 0 {
		return 1
	}
	switch t.Kind {
	case Int, Bool, Enum, Float, Pointer:
		size := t.Size
		if t.complex {
			size /= 2 // a complex type aligns as its parts
		}
		switch {
		case size >= 16:
			return 16
		case size > 0:
			a := int64(1)
			for a < size && a < 8 {
				a *= 2
			}
			return a
		}
	case Array:
		return t.Elem().align(depth+1, budget)
	case Struct, Union:
		natural, explicit, packed := int64(1), int64(1), false
		for _, m := range t.Members {
			a := m.Type.align(depth+1, budget)
			if m.BitSize == 0 && m.Type.Size > 0 && m.Offset%a != 0 {
				packed = true
			}
			natural = max(natural, a)
			explicit = max(explicit, m.Align)
		}
		if packed || t.Size%natural != 0 {
			return explicit
		}
		return max(natural, explicit)
	}
	return 1
}

// maxNesting bounds recursion through structs and arrays held by value,
// which well-formed types cannot make cyclic but hostile debug info can;
// walkBudget bounds the types one walk visits, which hostile debug info
// could make exponential by sharing (a struct of two copies of a struct
// of two copies of ...).
const (
	maxNesting = 64
	walkBudget = 1 << 16
)

// memberPath is a member found by name, possibly inside anonymous struct
// or union members: its offset from the start of the outer struct.
type memberPath struct {
	m       Member // Offset is from the outer struct
	through int    // anonymous members passed through
}

// findMember looks name up in a struct or union, seeing through anonymous
// struct and union members as C does.
func (t *Type) findMember(name string) (memberPath, bool) {
	budget := walkBudget
	return t.findMemberDepth(name, 0, &budget)
}

func (t *Type) findMemberDepth(name string, depth int, budget *int) (memberPath, bool) {
	if *budget--; depth > maxNesting || *budget < 0 || (t.Kind != Struct && t.Kind != Union) {
		return memberPath{}, false
	}
	for _, m := range t.Members {
		if m.Name == name {
			return memberPath{m: m}, true
		}
	}
	for _, m := range t.Members {
		if m.Name != "" {
			continue
		}
		if p, ok := m.Type.findMemberDepth(name, depth+1, budget); ok {
			p.m.Offset += m.Offset
			p.through++
			return p, true
		}
	}
	return memberPath{}, false
}

// MemberNames lists the names a path may use on a struct or union: its
// members' names and, in place of an anonymous member, that member's.
func (t *Type) MemberNames() []string {
	var names []string
	budget := walkBudget
	t.memberNames(&names, 0, &budget)
	return names
}

func (t *Type) memberNames(names *[]string, depth int, budget *int) {
	if *budget--; depth > maxNesting || *budget < 0 {
		return
	}
	for _, m := range t.Members {
		if m.Name == "" {
			m.Type.memberNames(names, depth+1, budget)
			continue
		}
		*names = append(*names, m.Name)
	}
}
