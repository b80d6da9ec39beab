package zstdframe

import (
	"testing"

	"github.com/klauspost/compress/zstd"
)

// readerDecoder is klauspost's decoder as the capture reader sets it: one
// goroutine, the output bounded by the frame's declared size.
func readerDecoder(tb testing.TB) *zstd.Decoder {
	tb.Helper()
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecodeAllCapLimit(true))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(d.Close)
	return d
}

// writerEncoder is klauspost's encoder at the capture writer's level for
// the columns without an encoder of their own.
func writerEncoder(tb testing.TB) *zstd.Encoder {
	tb.Helper()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	if err != nil {
		tb.Fatal(err)
	}
	return enc
}
