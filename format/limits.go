package format

import (
	"fmt"

	"github.com/bpftape/bpftape/format/arrowipc"
)

// What a capture may declare: reading trusts no length in a file (package
// arrowipc checks every message against these limits and the file's size
// before allocating from it), and a capture that declares more fails with
// ErrLimit. A capture's stack table has limits of its own, beside
// MaxStacks, which hold over all its parts.
const (
	// MaxMessageMeta bounds the flatbuffer metadata of one message (the
	// schema message carries the JSON Meta).
	MaxMessageMeta = arrowipc.MaxMessageMeta
	// MaxBatchBytes bounds a batch's body as stored and the sum of its
	// buffers' uncompressed lengths.
	MaxBatchBytes = arrowipc.MaxBatchBytes
	// MaxZstdWindow bounds the window of a zstd frame.
	MaxZstdWindow = arrowipc.MaxZstdWindow
	// MaxFooterBytes bounds the footer; a larger one is ignored and the
	// file read as a stream.
	MaxFooterBytes = arrowipc.MaxFooterBytes
)

// ErrLimit is wrapped by the errors of captures that declare more than a
// reader limit allows.
var ErrLimit = arrowipc.ErrLimit

// ErrCorrupt is wrapped by the errors of a capture whose bytes do not say
// what they should: a malformed message, a zstd frame whose checksum fails.
var ErrCorrupt = arrowipc.ErrCorrupt

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

func sizeStr(n uint64) string { return arrowipc.SizeString(n) }
