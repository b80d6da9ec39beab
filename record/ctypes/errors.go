package ctypes

import (
	"errors"
	"fmt"
)

// Sentinel errors, wrapped (%w) by errors that say which type, member or
// parameter they are about.
var (
	// ErrNoDWARF: the binary has no DWARF, and no separate debug file
	// with DWARF was found.
	ErrNoDWARF = errors.New("no DWARF debug info")
	// ErrNoFunc: no function of that name in the debug info.
	ErrNoFunc = errors.New("no such function")
	// ErrNoType: no type of that name in the debug info.
	ErrNoType = errors.New("no such type")
	// ErrNoParam: the function has no parameter of that name.
	ErrNoParam = errors.New("no such parameter")
	// ErrNoMember: the struct or union has no member of that name.
	ErrNoMember = errors.New("no such member")
	// ErrNotPointer: -> or * on a value that is not a pointer.
	ErrNotPointer = errors.New("not a pointer")
	// ErrPointer: . on a pointer.
	ErrPointer = errors.New("a pointer")
	// ErrNotStruct: . or -> to a member of something that is not a struct
	// or union.
	ErrNotStruct = errors.New("not a struct or union")
	// ErrNotArray: [n] on something that is neither an array nor a
	// pointer.
	ErrNotArray = errors.New("not an array or pointer")
	// ErrIndex: an index past an array's end.
	ErrIndex = errors.New("index out of range")
	// ErrVoidPointer: -> , * or [n] through a void *, whose target has
	// no type.
	ErrVoidPointer = errors.New("a void pointer")
	// ErrIncomplete: a struct or union declared but not defined.
	ErrIncomplete = errors.New("an incomplete type")
	// ErrTooDeep: the path loads more than MaxReads pointers.
	ErrTooDeep = errors.New("too many pointer loads")
	// ErrBitfield: the path ends at a bitfield.
	ErrBitfield = errors.New("a bitfield; not supported")
	// ErrAggregate: the path ends at a struct or union, which is not one
	// value.
	ErrAggregate = errors.New("a struct or union")
	// ErrNotValue: the path ends at something that is not an integer,
	// pointer or array (a float, a function, void).
	ErrNotValue = errors.New("not an integer, pointer or array")
	// ErrSSEParam: the parameter (or return value) is a float, double or
	// a struct holding them, passed in a floating-point register (an xmm
	// register on x86-64, a v register on arm64), which uprobes and
	// kprobes cannot read.
	ErrSSEParam = errors.New("passed in a floating-point register (xmm, v)")
	// ErrRegStruct: a struct passed by value in registers, whose member
	// is not a whole register.
	ErrRegStruct = errors.New("a struct passed in registers")
	// ErrNoLocation: the parameter has no location at entry (an empty
	// struct), or the ABI puts it where this package does not follow it
	// (arm64's struct returned in memory through x8, code of an
	// architecture whose calling convention this package does not know).
	ErrNoLocation = errors.New("no location at entry")
	// ErrBadType: a cast's type name that is not a C type this package
	// knows.
	ErrBadType = errors.New("not a known C type")
	// ErrBadDWARF: debug info this package could not read.
	ErrBadDWARF = errors.New("malformed debug info")
)

// wrapped is an error whose message says it all, and which wraps a
// sentinel for errors.Is without repeating the sentinel's words.
type wrapped struct {
	msg string
	err error
}

func (e *wrapped) Error() string { return e.msg }
func (e *wrapped) Unwrap() error { return e.err }

// errorf formats a message wrapping sentinel (and any %w in format).
func errorf(sentinel error, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &wrapped{msg: err.Error(), err: joinIf(sentinel, errors.Unwrap(err))}
}

func joinIf(a, b error) error {
	if b == nil {
		return a
	}
	return errors.Join(a, b)
}
