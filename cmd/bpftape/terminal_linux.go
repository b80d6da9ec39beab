package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether f is a terminal (it has termios).
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// terminalEscapes reports whether terminal f takes the VT escape
// sequences the progress line redraws itself with: all do but a dumb
// one (TERM=dumb, as Emacs's shell buffers are) or one of no known type.
func terminalEscapes(*os.File) bool {
	t := os.Getenv("TERM")
	return t != "" && t != "dumb"
}
