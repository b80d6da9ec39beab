// Package zstdframe writes the zstd frames that the capture writer makes
// itself rather than with klauspost's encoder, where knowing the data's
// shape makes them cheaper to write or to read. Any zstd decoder reads
// them; that is the point: the capture stays a standard Arrow IPC file
// with zstd body compression, and polars and DuckDB decode these buffers
// as they decode the others.
//
// TimeEncoder writes the frames of a capture's time column: a
// column of 64-bit little-endian boot-clock times in time order, where a
// time shares its high bytes with the one before.
//
// AppendRepeat writes the frame of a buffer that repeats itself every
// RepeatPeriod (64) bytes: a constant column (one thread's tid, one
// process's pid and command name, a validity bitmap) or one that
// alternates (the probe column of a call and its return), which
// klauspost's encoder matches at the value's own width and its decoder
// then copies a byte at a time: about six times slower to read.
//
// RunEncoder writes the frames of a column of values that come in runs
// of one value (a thread's tid, a CPU's number, a field whose null rows
// hold the value before): a run's first value as literals or as a match
// of the last run of that value, a match at the value's width up to the
// run's 16th byte, and one at offset 16 for the rest, which klauspost's
// decoder copies 16 bytes at a time where it copies a match at an offset
// under 16 a byte at a time. It takes a buffer whose runs are 8 values
// long or longer on average, and leaves the others to klauspost's
// encoder.
//
// Why not klauspost's encoder, which writes the other columns, for the
// times: it searches for matches that the layout already gives. A
// time differs from the previous one in its low k bytes (k is 2 or 3 at
// 0.3-7 µs between events), so each value is k literals and a match of
// 8-k bytes at offset 8. TimeEncoder.Encode writes exactly that: the
// first sequence takes offset 8 as repeat offset 3 (initially 8), every
// later one repeat offset 1; equal times lengthen the previous match; a value that differs
// in 6 or more bytes is all literals. Literals go through klauspost's huff0
// (random low bytes: usually stored raw, as klauspost's encoder stores
// them), and the literal length, match length and offset codes of each
// block through FSE tables normalized from that block's counts (a single
// code: RLE mode). The frame carries its content size and checksum
// (XXH64, as the writer's other frames).
//
// It encodes a time in about half the CPU of klauspost's fastest level, at
// the same size, which makes the recorder's total CPU per event about a
// fifth lower: format/doc.go has the decision, bench/README.md ("The time
// column's encoder") the measurements.
//
// TimeDecoder reads TimeEncoder's frames back, faster than klauspost's
// decoder (which the capture reader uses for every other column): a
// sequence loop that knows each sequence is one time writes it as one
// 8-byte store, the time before kept in a register. It takes only frames
// of the shape TimeEncoder writes (and those of klauspost's encoder that
// happen to have it); for any other, or a corrupt one, it says no, and
// the reader decodes the frame with klauspost's decoder, which reports
// what is wrong. It never answers with anything but a frame's exact
// content, its checksum verified: TestTimeDecodeCorrupt and
// FuzzTimeDecode hold whatever it takes to what klauspost's decoder makes
// of it.
//
// Every frame is checked by decoding: TestRoundTrip, FuzzRoundTrip,
// TestRepeat, FuzzRepeat, TestRuns and FuzzRuns with klauspost's decoder,
// and cmd/bpftape's TestPolarsReadsCapture and TestPolarsReadsRuns with
// nodejs-polars, whose sums of a capture's times and of its columns in
// runs must equal bpftape's.
package zstdframe
