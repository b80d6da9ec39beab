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
//	...    one nullable column per recorded field (int8..uint64, string_view)
//
// The schema metadata key "bpftape" holds the Meta as JSON: the probe table
// (name, kind, spec as typed, target binary, build id, fields with types and
// columns), host name, kernel release, tool version, command line, and the
// wall-clock and boot-clock times read together at the start, from which an
// event's wall-clock time follows (Meta.WallTime).
//
// Choices, and why:
//
//   - Fields get columns by name, not by probe: probes with a field of the
//     same name and type share its column ("retval"), so that a query reads
//     naturally; a clash of types gets "probe.field". Meta says which column
//     holds each probe field.
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
//   - A capture may come from anywhere, so reading trusts no length in it:
//     every message is checked against the file size and fixed limits
//     (limits.go: 16 MiB of metadata, 256 MiB of body and of decompressed
//     buffers per batch, 128 MiB zstd windows) before Arrow allocates from
//     it, and a file that declares more fails with ErrLimit.
//   - Compression is per buffer, Arrow's own body compression (zstd by
//     default, lz4 or none), so other readers decompress it themselves.
//   - Times are boot-clock nanoseconds rather than wall-clock timestamps,
//     because that is what the kernel stamps and what latencies subtract.
package format
