package usage

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

// refused is a type that reports itself as a usage error, as outfile.Error
// does.
type refused struct{}

func (refused) Error() string        { return "refused" }
func (refused) Is(target error) bool { return target == ErrUsage }

func TestIs(t *testing.T) {
	base := fmt.Errorf("open x: %w", fs.ErrNotExist)
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", errors.New("disk full"), false},
		{"wrapped plain", base, false},
		{"Errorf", Errorf("-d %q: want a duration", "x"), true},
		{"Wrap", Wrap(base), true},
		{"wrapped twice", fmt.Errorf("list: %w", fmt.Errorf("filter: %w", Wrap(base))), true},
		{"joined", errors.Join(errors.New("a"), Errorf("b")), true},
		{"own type", fmt.Errorf("output: %w", refused{}), true},
	} {
		if got := Is(c.err); got != c.want {
			t.Errorf("%s: Is(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// TestMessage checks that marking an error changes neither its message nor
// what it wraps.
func TestMessage(t *testing.T) {
	base := fmt.Errorf("open x: %w", fs.ErrNotExist)
	err := Wrap(base)
	if err.Error() != base.Error() {
		t.Errorf("Wrap changed the message: %q, want %q", err, base)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("Wrap hides the wrapped error from errors.Is")
	}
	err = Errorf("-p %d: %w", -1, base)
	if want := "-p -1: open x: file does not exist"; err.Error() != want {
		t.Errorf("Errorf: %q, want %q", err, want)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("Errorf's %w does not wrap")
	}
	var ue *Error
	if !errors.As(fmt.Errorf("x: %w", err), &ue) || ue.Err.Error() != err.Error() {
		t.Error("errors.As does not find the *Error")
	}
	if Wrap(nil) != nil {
		t.Error("Wrap(nil) is not nil")
	}
}
