// Package usage marks the errors that are the caller's: a bad flag or
// argument, a probe or field the capture lacks, an output the rules refuse.
// Every package below cmd/bpftape returns them the same way, and bpftape
// exits with status 2 on them instead of 1.
//
// An error is a usage error when errors.Is(err, ErrUsage) holds. Errorf and
// Wrap make one; a type can also report itself as one with an
// Is(target error) bool method that matches ErrUsage (outfile.Error does).
// Wrapping a usage error with fmt.Errorf and %w keeps it one.
package usage

import (
	"errors"
	"fmt"
)

// ErrUsage is the sentinel every usage error matches with errors.Is. Its
// text never shows: the errors that match it print their own message only.
var ErrUsage = errors.New("usage error")

// Error is a usage error. Its message is Err's, unchanged.
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns Err, so that errors.Is and errors.As also see what it wraps.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is ErrUsage.
func (e *Error) Is(target error) bool { return target == ErrUsage }

// Errorf formats a usage error as fmt.Errorf does (%w wraps).
func Errorf(format string, args ...any) error {
	return &Error{Err: fmt.Errorf(format, args...)}
}

// Wrap marks err as a usage error, keeping its message; Wrap(nil) is nil.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Err: err}
}

// Is reports whether err is a usage error.
func Is(err error) bool { return errors.Is(err, ErrUsage) }
