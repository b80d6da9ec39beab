package arrowipc

import (
	"errors"
	"fmt"
)

// What a file may declare. Reading trusts no length in a file: every
// message is checked against these limits (and against the file's size)
// before anything is allocated from it. Reading one batch therefore holds
// at most MaxMessageMeta of metadata, MaxBatchBytes of decompressed
// buffers (and as much of compressed input) and one zstd window of
// MaxZstdWindow, whatever the file claims; bpftape's writer stays far
// below (16 MiB batches).
const (
	// MaxMessageMeta bounds the flatbuffer metadata of one message (the
	// schema message carries the JSON Meta).
	MaxMessageMeta = 16 << 20
	// MaxBatchBytes bounds a batch's body as stored and the sum of its
	// buffers' uncompressed lengths.
	MaxBatchBytes = 256 << 20
	// MaxZstdWindow bounds the window of a zstd frame, as libzstd's default
	// decoder does (windowLog 27).
	MaxZstdWindow = 128 << 20
	// MaxFooterBytes bounds the footer (its block list grows 24 bytes a
	// batch); a larger one is ignored and the file read as a stream.
	MaxFooterBytes = 256 << 20

	maxColumns     = 1 << 16 // schema fields
	maxBuffers     = 1 << 20 // buffers of one batch
	maxKeyValues   = 1 << 10 // custom metadata entries
	maxMetaObjects = 1 << 20 // JSON objects in one metadata value
)

// ErrLimit is wrapped by the errors of files that declare more than a
// reader limit allows.
var ErrLimit = errors.New("capture exceeds a reader limit")

// ErrCorrupt is wrapped by the errors of a file whose bytes do not say
// what they should: a malformed message, a zstd frame whose checksum fails.
var ErrCorrupt = errors.New("corrupt capture")

var errFlatbuf = fmt.Errorf("%w: malformed flatbuffer", ErrCorrupt)

func limitErr[N int64 | uint64](what string, n N, limit int64) error {
	return fmt.Errorf("%w: %s declares %s, the limit is %s", ErrLimit, what, SizeString(uint64(n)), SizeString(uint64(limit)))
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// SizeString formats a byte count for an error message: "1.5 MiB".
func SizeString(n uint64) string {
	switch {
	case n >= 1<<40:
		return fmt.Sprintf("%d bytes", n)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
