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

// terminalEscapes reports whether console f takes the VT escape sequences
// the progress line redraws itself with, turning them on if it can
// (ENABLE_VIRTUAL_TERMINAL_PROCESSING, Windows 10 and later): an older
// console would print them. restore, if not nil, gives the console back
// the mode it had: the console is the shell's too, and outlives the verb.
func terminalEscapes(f *os.File) (ok bool, restore func()) {
	h := windows.Handle(f.Fd())
	var mode uint32
	if windows.GetConsoleMode(h, &mode) != nil {
		return false, nil
	}
	if mode&windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING != 0 {
		return true, nil
	}
	if windows.SetConsoleMode(h, mode|windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING) != nil {
		return false, nil
	}
	return true, func() { windows.SetConsoleMode(h, mode) }
}

// foreground reports true: a console has no background jobs to draw
// over.
func foreground(*os.File) bool { return true }
