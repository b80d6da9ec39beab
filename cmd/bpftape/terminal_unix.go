//go:build !windows

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// terminalEscapes reports whether terminal f takes the VT escape
// sequences the progress line redraws itself with: all do but a dumb
// one (TERM=dumb, as Emacs's shell buffers are) or one of no known type.
// A terminal's mode is left as it is: restore is nil.
func terminalEscapes(*os.File) (ok bool, restore func()) {
	t := os.Getenv("TERM")
	return t != "" && t != "dumb", nil
}

// foreground reports whether the process is in the foreground job of
// terminal f, as pv asks before it draws: a job sent to the background
// (with & or Ctrl-Z and bg) would draw over the shell's prompt and what
// the user types. A terminal that is not the process's own (which the
// kernel does not tell of) counts as foreground.
func foreground(f *os.File) bool {
	pgrp, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err != nil || pgrp == unix.Getpgrp()
}
