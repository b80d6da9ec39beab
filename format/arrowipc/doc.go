// Package arrowipc reads and writes Apache Arrow IPC files from and to raw
// column buffers: bpftape's one home for the Arrow format, in both
// directions.
//
// It covers what bpftape captures need (integer columns, string and binary
// views, and one dictionary-encoded utf8 column with a fixed dictionary)
// and nothing more. Writer writes a file from a batch's buffers; Open finds
// a file's messages, through its footer or, for a file whose writer died,
// by walking its stream up to the last whole record batch; a Decoder
// decodes a batch column by column. Arrow Go's own reader and writer are
// used only in tests, as oracles that share no code with this package.
//
// # Why not Arrow Go's IPC
//
// Measured, not assumed (the numbers are in bench/README.md, "Capture
// format: arrowipc against Arrow Go's IPC"):
//
//   - Writing: Arrow Go v15 builds a new zstd encoder for every batch
//     (megabytes allocated a batch) and takes neither a level nor a
//     codec option. This writer keeps one encoder per level in use
//     (EncodeAll, concurrency 1) and its scratch buffers: after the first
//     batches, writing a batch allocates nothing but, now and then, a
//     larger list of batch positions for the footer. On the realistic
//     stream (format's BenchmarkWriter) that more than halved the CPU per
//     event with zstd (and cut it by a third with lz4), and per-column
//     levels became possible (format's zstdLevels).
//   - Reading: Arrow Go builds every column of every batch as Arrow arrays.
//     The Decoder reads only the buffers asked for, into memory it may
//     reuse: replaying a histogram of one field took more than ten
//     times less CPU. Arrow Go's reader also stops decoding a zstd
//     frame at the buffer's declared length, before the frame's content
//     checksum, so it needed a second, verifying decode of every zstd
//     buffer; the Decoder verifies as it decodes, once.
//   - Interoperability: Arrow Go's writer stores an empty buffer of a
//     compressed batch with length 0, without the 8-byte length prefix,
//     and polars (polars-arrow) panicked reading such a file (the empty
//     data buffer of a string view column). This writer stores it as the
//     -1 prefix alone.
//   - Untrusted input: Arrow Go's reader allocates metadata, bodies and
//     decompressed buffers from lengths written in the file, through
//     generated flatbuffer code that trusts every offset. Here every
//     offset is bounds-checked (fbread.go) and every length checked against
//     the file and the limits (limits.go) before anything is allocated.
//
// # Files
//
// The file is a standard Arrow IPC file: the magic, the stream (Schema,
// DictionaryBatch, RecordBatch messages, end-of-stream marker), the Footer
// and the trailing magic. Body buffers are compressed one by one (Arrow's
// BodyCompression, method BUFFER): each is prefixed with its uncompressed
// length as an int64, or with -1 when it is stored as is because compression
// did not make it smaller. zstd frames carry their content checksum. Since
// the stream part is complete after every batch, a file whose writer died
// is readable as a stream (from offset 8) up to its last complete batch,
// which is what Open does with a file without a valid footer.
//
// # Limits
//
// Reading one batch holds at most MaxMessageMeta of metadata,
// MaxBatchBytes of decompressed buffers (and its compressed input) and one
// zstd window of MaxZstdWindow, whatever the file declares; a file that
// declares more fails with an error wrapping ErrLimit, one whose bytes do
// not say what they should (a malformed flatbuffer, a buffer outside its
// body, a failed checksum, a string view outside its data) with ErrCorrupt.
package arrowipc
