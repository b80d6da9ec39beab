// Package zstdtime writes the zstd frames of a capture's time column: a
// column of 64-bit little-endian boot-clock times in time order, where a
// time shares its high bytes with the one before. Any zstd decoder reads
// them; that is the point: the capture stays a standard Arrow IPC file
// with zstd body compression, and polars and DuckDB decode this column as
// they decode the others.
//
// Why not klauspost's encoder, which writes the other columns: on the
// time column it searches for matches that the layout already gives. A
// time differs from the previous one in its low k bytes (k is 2 or 3 at
// 0.3-7 µs between events), so each value is k literals and a match of
// 8-k bytes at offset 8. Encode writes exactly that: the first sequence
// takes offset 8 as repeat offset 3 (initially 8), every later one repeat
// offset 1; equal times lengthen the previous match; a value that differs
// in 6 or more bytes is all literals. Literals go through klauspost's huff0
// (random low bytes: usually stored raw, as klauspost's encoder stores
// them), and the literal length, match length and offset codes of each
// block through FSE tables normalized from that block's counts (a single
// code: RLE mode). The frame carries its content size and checksum
// (XXH64, as the writer's other frames).
//
// Measured on the 2-CPU VM this was written on:
//   - BenchmarkEncode, 32Ki times, 300 ns / 2 µs / 7 µs apart: 37 / 37 / 35
//     ns a value against klauspost's fastest level's 62 / 62 / 61 (the
//     machine busy with another benchmark, both alike), and 1.896 / 2.078 /
//     2.219 bytes a value against 1.901 / 2.082 / 2.223. On a later host,
//     after the sequence loop moved to locals (Encoder.encodeStates), two
//     runs each: 12.7 / 12.5-12.6 / 12.7-12.8 against 26.9-27.1 / 26.4-27.1
//     / 26.5-27.2, the same sizes. TestRoundTrip
//     logs the sizes of other shapes: never larger than the fastest level
//     by more than 2% at 1,000 values or more, and much smaller when times
//     are far apart (1 ms: 3.1 against 5.6 bytes a value).
//   - format/arrowipc's BenchmarkWrite on the realistic batches (every
//     column, compression and writing), the time column by klauspost's
//     fastest level against this encoder, two runs each alternating:
//     90.0-109.0 against 75.0-87.6 cpu-ns an event, 3.887 against 3.879
//     bytes an event.
//
// Every frame is checked by decoding: TestRoundTrip and FuzzRoundTrip with
// klauspost's decoder, and cmd/bpftape's TestPolarsReadsCapture with
// nodejs-polars, whose sum of a capture's times must equal bpftape's.
package zstdtime
