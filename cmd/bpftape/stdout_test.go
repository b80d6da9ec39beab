package main

import (
	"bufio"
	"os"
	"testing"
)

// TestBufferStdout: the analysis verbs print through a buffer, and record,
// which prints as events come, to the file itself.
func TestBufferStdout(t *testing.T) {
	for _, args := range [][]string{{"events", "x.arrow"}, {"hist", "x.arrow", "p", "arg0"}, {"info", "x.arrow"}} {
		w, flush := bufferStdout(args, os.Stdout)
		b, ok := w.(*bufio.Writer)
		if !ok || b.Size() != stdoutBuffer {
			t.Errorf("%s: stdout is a %T, want a %d-byte *bufio.Writer", args[0], w, stdoutBuffer)
		}
		if err := flush(); err != nil {
			t.Errorf("%s: flush of nothing: %v", args[0], err)
		}
	}
	for _, args := range [][]string{{"record", "-o", "x.arrow", "u:/bin/true:main"}, nil} {
		if w, _ := bufferStdout(args, os.Stdout); w != os.Stdout {
			t.Errorf("%v: stdout is a %T, want os.Stdout", args, w)
		}
	}
}
