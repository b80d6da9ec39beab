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
// console would print them.
func terminalEscapes(f *os.File) bool {
	h := windows.Handle(f.Fd())
	var mode uint32
	if windows.GetConsoleMode(h, &mode) != nil {
		return false
	}
	return mode&windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING != 0 ||
		windows.SetConsoleMode(h, mode|windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING) == nil
}

// foreground reports true: a console has no background jobs to draw
// over.
func foreground(*os.File) bool { return true }
