//go:build !windows

package main

import "os"

// terminalEscapes reports whether terminal f takes the VT escape
// sequences the progress line redraws itself with: all do but a dumb
// one (TERM=dumb, as Emacs's shell buffers are) or one of no known type.
func terminalEscapes(*os.File) bool {
	t := os.Getenv("TERM")
	return t != "" && t != "dumb"
}
