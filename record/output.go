package record

import (
	"github.com/bpftape/bpftape/internal/outfile"
)

// outputOptions are the rules the capture file is opened by (package
// outfile): a new capture is created at its final name, exclusively, so
// that a recorder killed at any moment leaves a capture readers recover
// there and a setup failure removes only the file it created; --force over
// an existing capture writes a temporary file beside it, renamed over it
// when the recording ends (the old capture stays whole until then). A
// device or FIFO is written in place; a symbolic link is refused.
func outputOptions(o *Options) outfile.Options {
	return outfile.Options{Force: o.Force, Progressive: true}
}

// createOutput opens the capture file (or a rotated part) by those rules.
func createOutput(path string, o *Options) (*outfile.File, error) {
	return outfile.Create(path, outputOptions(o))
}

// keepOnClose puts a capture file in place when the format.Writer closes
// it, after an error too: its complete batches are the recording.
type keepOnClose struct{ *outfile.File }

func (k keepOnClose) Close() error { return k.Commit() }
