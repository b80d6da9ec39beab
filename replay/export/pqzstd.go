package export

import (
	"sync"
	_ "unsafe" // go:linkname

	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// pqCodecs is parquet/compress's table of codecs, which its page writers
// look the file's codec up in (compress.GetCodec), and which it offers no
// way to add to.
//
//go:linkname pqCodecs github.com/apache/arrow/go/v15/parquet/compress.codecs
var pqCodecs map[compress.Compression]compress.Codec

// zstdCodec is Arrow Go v15's zstd codec with one encoder per level, made
// once. Its own EncodeLevel, which every page writer calls, makes a new
// zstd encoder for every page (zstd.NewWriter: megabytes of tables and
// history cleared, then collected), which took 40% of the CPU time of a
// Parquet export. The bytes it writes are the same: EncodeAll starts
// every page afresh.
type zstdCodec struct {
	compress.Codec // the codec it replaces, for the rest
}

var (
	zstdMu       sync.Mutex
	zstdEncoders = map[zstd.EncoderLevel]*zstd.Encoder{}
)

func (z zstdCodec) EncodeLevel(dst, src []byte, level int) []byte {
	l := zstd.SpeedDefault
	if level != compress.DefaultCompressionLevel {
		l = zstd.EncoderLevelFromZstd(level)
	}
	zstdMu.Lock()
	enc := zstdEncoders[l]
	if enc == nil {
		var err error
		// As the codec's encoders are, and as many as the pages that
		// can be compressed at once (EncodeAll is safe for concurrent
		// use).
		if enc, err = zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(l)); err != nil {
			zstdMu.Unlock()
			return z.Codec.EncodeLevel(dst, src, level)
		}
		zstdEncoders[l] = enc
	}
	zstdMu.Unlock()
	return enc.EncodeAll(src, dst[:0])
}

// init puts zstdCodec in place of Arrow's zstd codec, before any Parquet
// writer or reader can look it up: a map write, the encoders are made
// when first used.
func init() {
	if c, ok := pqCodecs[compress.Codecs.Zstd]; ok {
		pqCodecs[compress.Codecs.Zstd] = zstdCodec{c}
	}
}
