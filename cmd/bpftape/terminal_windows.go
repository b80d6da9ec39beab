package main

import (
	"os"

	"golang.org/x/sys/windows"
)

// isTerminal reports whether f is a console. A terminal emulator that
// talks through a pipe (mintty, some IDEs) is not one.
func isTerminal(f *os.File) bool {
	var mode uint32
	return windows.GetConsoleMode(windows.Handle(f.Fd()), &mode) == nil
}
