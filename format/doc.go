// Package format reads and writes bpftape capture files.
//
// A capture is an Apache Arrow IPC file (readable by polars, pyarrow, DuckDB
// and any other Arrow reader) whose record batches hold one row per event:
//
//	time   int64        ns since boot (CLOCK_BOOTTIME), as bpf_ktime_get_boot_ns
//	cpu    uint16       CPU the event fired on
//	pid    uint32       process id (tgid)
//	tid    uint32       thread id
//	comm   string_view  thread command name
//	probe  dictionary<uint16, utf8>  probe name
//	lost   uint64       null for events; for a loss record the number of events lost
//	probe.field  one nullable column per probe field (int8..uint64, string_view)
//
// The schema metadata key "bpftape" holds the Meta as JSON: the probe table
// (name, kind, spec as typed, target binary, build id, fields with types and
// columns), host name, kernel release, tool version, command line, and the
// wall-clock and boot-clock times read together at the start, from which an
// event's wall-clock time follows (Meta.WallTime).
//
// Choices, and why:
//
//   - Every probe field has its own column, named "probe.field" (format
//     version 2, ColumnName), whatever other probes share the capture;
//     nothing is ever renamed. Version 1 shared a column between probes
//     whose fields had the same name and type and renamed the field of a
//     probe whose type clashed ("done.arg0"), so a DuckDB user's SELECT
//     count(arg0) FROM t WHERE probe = 'done' counted 0 and only
//     `info --json` told why. The name is unique by construction: field
//     names hold no dot, so the last dot splits probe from field, and the
//     fixed columns have none. The obvious queries read SELECT "rx.size"
//     FROM 'c.parquet' WHERE probe = 'rx' in DuckDB and
//     df.filter(pl.col("probe") == "rx").select("rx.size") in polars.
//     A struct column per probe (rx: struct<size>) was the other choice:
//     DuckDB would read rx.size unquoted, but polars needs
//     pl.col("rx").struct.field("size"), CSV and every reader without
//     nested types would need it flattened back into these names anyway,
//     a probe named like a fixed column ("time") would clash, and a
//     struct's children carry validity of their own that readers disagree
//     about when the parent is null. Flat columns are one more
//     quoted identifier in SQL, and no reader has to agree on anything.
//     They also compress better: two probes' values no longer interleave
//     in one column (bench/README.md, "Capture format: flat columns").
//     The metadata's format version says which rule made the columns; a
//     reader refuses a newer version (ErrNewerVersion) and reads version
//     1 through the column each field names in the metadata.
//   - The probe column is dictionary-encoded with a dictionary fixed at
//     creation, because every probe is known before the first event and Arrow
//     Go v15's file writer rejects a dictionary that changes between batches.
//     comm is not known in advance, so it is a plain string column, in the
//     string_view layout: a thread's comm repeats, equal values share their
//     bytes, and the rows compress to almost nothing, where the offsets of a
//     plain string column differ on every row (4 incompressible bytes an event).
//   - Lost events are data. Arrow Go has no per-batch metadata, so losses are
//     rows in the stream, as perf writes PERF_RECORD_LOST into perf.data: a
//     loss record has the probe, the cpu, an approximate time and a non-null
//     lost count, and null fields. Readers of events filter on lost IS NULL.
//   - Crash safety: the footer is written last, so a killed recorder leaves a
//     file without one. The writer writes schema, metadata and dictionary at
//     creation and then complete batches at least once a second (Tick) and at
//     a size bound, each pushed to the kernel before the next begins; Open
//     reads a footerless file as an IPC stream up to its last complete batch
//     and sets Reader.Recovered, and Repair rewrites it as a standard file.
//   - One read path: Reader decodes through package arrowipc, which owns
//     the Arrow IPC format in both directions (its doc gives the measured
//     reasons for not using Arrow Go's reader and writer, which remain
//     only as test oracles). This package keeps what the bytes mean: the
//     schema, Meta, events and loss records, recovery, repair, merge and
//     rotation. An analysis selects the columns it reads (Reader.Select),
//     and only their buffers are read, decompressed and verified: decoding
//     is what reading costs, and a histogram of one field of twelve pays
//     for one. So a damaged buffer fails the passes that read its column,
//     naming batch and column, and no other: what they answer from is
//     intact. Batches may be decoded ahead on other goroutines
//     (Reader.ReadAhead), each into memory of its own, and handed on in
//     file order, so that an analysis that keeps state from batch to batch
//     needs no merging; with Reader.Recycle a batch's integer buffers are
//     reused once the next is asked for, by the goroutine that filled
//     them (another core's memory cost requests a fifth of its CPU). An
//     analysis whose result per batch merges into its whole may run on
//     the goroutine that decoded the batch (Reader.Work) and hand on only
//     its result, not the decoded columns, to another core.
//   - A capture may come from anywhere, so reading trusts no length in it:
//     every message is checked against the file size and fixed limits
//     (arrowipc's, re-exported in limits.go: 16 MiB of metadata, 256 MiB
//     of body and of decompressed buffers per batch, 128 MiB zstd windows)
//     before anything is allocated from it, and a file that declares more
//     fails with ErrLimit.
//   - Compression is per buffer, Arrow's own body compression (zstd by
//     default, lz4 or none), so other readers decompress it themselves. A
//     buffer that compression does not shrink is stored as is (Arrow's
//     uncompressed length -1), such as the validity bitmap of a field two
//     probes share, which is as random as which probe fired. zstd frames
//     carry their content checksum (neither libzstd's nor Arrow C++'s
//     default, but a capture is a file from anywhere, and without it
//     flipped bytes change values silently; it costs the writer a few
//     percent: bench/README.md, "Capture format: zstd checksums"). Every
//     read verifies it as it decodes, once (Arrow Go's reader, on the read
//     path before, stopped at a buffer's declared length before the
//     checksum, so each zstd buffer was decoded twice: once to verify,
//     once by Arrow). A batch that fails is ErrCorrupt, named by batch and
//     buffer; repair leaves it out. And the levels are chosen per column
//     by measurement on the seed-like stream (format/formattest): every
//     column but time gets level 3 (SpeedDefault), which is no slower
//     there and makes them smaller than the fastest level (bench/README.md,
//     "Capture format: zstd levels"). Time, the low bytes of increasing
//     timestamps, is literals at any level; its frames come from an
//     encoder that knows the layout (format/internal/zstdframe: k literals
//     and a match at offset 8 per value). They are ordinary zstd frames:
//     polars reads them. See "The time column's encoder" below. A
//     buffer that repeats every 64 bytes (a constant column: one
//     thread's tid, one process's pid and comm; the probe column of
//     calls and their returns) is 64 bytes of literals and one match at
//     offset 64 (zstdframe.AppendRepeat), which decoders copy in wide
//     strides: klauspost's encoder matches it at the value's width,
//     which its decoder copies a byte at a time (0.4 against 2.5 ns a
//     row of a constant 4-byte column, BenchmarkDecodeRepeat), for
//     about 60 bytes more per buffer. A buffer of values in runs of
//     8 or more on average (a thread's tid, a CPU's number, a field
//     whose null rows repeat the value before) is written by
//     zstdframe.RunEncoder, whose matches past a run's 16th byte are at
//     offset 16, which decoders copy in wide strides: a verb reads
//     such a column in 20-60% less time, for 0.07 bytes an event more
//     on the seed-like stream (3.69 -> 3.76) and about 4% more CPU
//     for the writer (bench/README.md, "Runs written for the
//     decoder").
//   - Null rows of a field column hold the previous row's value, not zero:
//     Arrow leaves a null slot's value undefined and readers skip it, and
//     a repeated value compresses to nothing where zeros between values
//     break every run. Values are never transformed otherwise (no delta or
//     custom encoding): time is the absolute int64, so any Arrow reader
//     gets the file's values as they are.
//   - A batch is at most 32Ki rows (and at most 8 MiB of fixed-width column
//     bytes, for probes with many fields), allocated whole so that Append
//     is stores at fixed offsets; the writer holds three (one filling, two
//     being compressed or waiting). Larger batches compressed hardly
//     better (bench/README.md, "Capture format: batch size").
//   - Times are boot-clock nanoseconds rather than wall-clock timestamps,
//     because that is what the kernel stamps and what latencies subtract.
//   - Stacks (UserStack and KernelStack fields) are a uint64 column of
//     stack ids, and the frames are held once, in the capture's stack
//     table (StackTable): the unique stacks, the mappings of each process
//     a user stack was taken in, the objects mapped (path, build id) and
//     only the symbols that some frame falls in, so that replay
//     symbolizes from the file alone: a few bytes an event where storing
//     each event's frames, as perf.data's callchains do, takes hundreds
//     (bench/README.md, "Capture format: stacks").
//     The id is a 64-bit hash of the frames (StackID), not a counter: it
//     is the same in every capture, so captures merge and compare without
//     renumbering, for about a byte an event more than a counter.
//     A list<uint64> column of the frames was the other choice, readable
//     in DuckDB as is, but Arrow's nested layout would have cost every
//     reader of this package, and symbol names are what a user wants:
//     `bpftape export` writes stack fields as folded frame strings for
//     DuckDB and polars.
//     The table travels in parts: a record batch's message carries, as
//     custom metadata (StackTableKey: JSON, zstd, base64), the entries its
//     rows are the first to need, so a footerless capture still has the
//     table of every batch it kept, and other Arrow readers ignore it. A
//     part is at most 4 MiB of JSON; more goes in several, those before
//     the last in batches of no rows just ahead of the batch, so that every
//     message stays well under MaxMessageMeta (a million stacks in one part
//     made more metadata than a reader would open).
//   - A stack table is read within limits of its own (MaxStacks and the
//     constants beside it), since its JSON grows when decoded (an empty
//     mapping, {}, is 3 bytes of JSON and 56 of memory: a small capture
//     could take gigabytes) and it comes in parts. The limits hold over
//     the whole table, not a part, and are checked as each part is
//     decoded, entry by entry from the decompressing stream, so a table
//     over one fails with ErrLimit, naming it, having allocated at most
//     about twice what the limit admits. A table may take 256 MiB
//     decoded, which a million stacks of a dozen frames and a million
//     symbols fit in; reading one takes up to about twice that at its
//     peak. Decoding as it streams costs a little more CPU than decoding
//     the whole JSON at once, for a third of the allocation
//     (bench/README.md, "Capture format: reading the stack table").
//     The parts are united by Add, which keeps its index of the table
//     between calls: indexing the table anew for each part made the cost
//     grow with parts × table size (same section).
//   - Meta.Window is the interval in which every probe was recording. The
//     schema at the start has a start read before the capture began (the
//     recorder starts it once every probe is attached, and only then opens
//     the window); the recorder reads the exact start as it opens the
//     window, and the end only when the recording stops, so the footer's
//     schema, which Arrow's file readers take the schema from, carries the
//     metadata as it is at Close. The schema at the start keeps the
//     metadata as it was then: a footerless file recovers with the earlier
//     start and without the end.
//     Without the window, links closed one by one let the probes closed
//     last record for longer, and a u:/ur: pair left returns without entry
//     (bench/README.md, "Capture format: the recording window").
//   - The footer's metadata also carries Meta.Counts, the Writer's tally
//     of the file's rows as it wrote them (events and loss counts by probe
//     and CPU, first and last times, batches and their uncompressed
//     bytes), so that `bpftape info` and `bpftape count` answer in
//     constant time instead of reading every batch (0.01 s against
//     1.3-1.6 s and 2.2-2.4 s for a capture of 20M events). The schema at
//     the start has none, so a footerless file is read as before; a key
//     older readers ignore, so no format version changes. The counts are
//     what the writer wrote, not checked against the batches: Reader.Counts
//     refuses counts that do not hold together (sums, first <= last, the
//     probe table's names, the footer's batch count) and readers then read
//     the batches. A Meta read from a file has no counts, so a capture
//     written from another's Meta (export, merge, redact) never carries
//     counts of other rows; Repair writes those of the rows it copied.
//
// The time column's encoder, format/internal/zstdframe's TimeEncoder,
// stays: judged by the recorder's total CPU per event (user+sys of
// bpftape record / events recorded), it saves 22-24% of it against
// klauspost's fastest level (1T: 63.4 against 83.9 ns an event, 2T: 65.2
// against 84.3; medians of 12 alternating rounds, per-round ratios 1.28×
// and 1.29×, none under 1.18×), above the 10% that keeping its ~900
// lines needed, at the same file size. Reproduce, as root: bash
// bench/bench.sh --only reccpu --reccpu-rounds 12 (bench/README.md, "The
// time column's encoder").
//
// Its decoder, zstdframe.TimeDecoder, reads those frames back for every
// reader of a capture (Reader.newDecoder), and klauspost's decoder the
// frames it refuses: the time column is the dearest one to decode (a
// zstd sequence per event), and the verbs that read it took 2-22% less
// CPU with it (medians: latency 19-22%, heatmap 11-17%, report 7%,
// events 2-8%;
// bench/README.md, "Reading the time column"), for about 670 lines and
// 250 of tests.
package format
