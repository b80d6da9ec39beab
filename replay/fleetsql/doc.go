// Package fleetsql writes the SQL query that answers a bpftape analysis
// (hist, count, latency, requests) over the hive-partitioned Parquet of
// `bpftape export --partition` (DIR/host=H/probe=P/part-N.parquet), so that
// DuckDB on one machine, or Spark SQL or Trino on a cluster, answers it
// across every host's export at once, bucket for bucket as bpftape answers
// it on the merged capture.
//
// It takes the capture (one host's, or the merged one) for the probes'
// names, field columns and types: names are checked before a query is
// written, and the types choose how a value is bucketed and cast. The
// query is the same text for the three engines where they share syntax,
// and DuckDB's where they do not; what differs is listed below.
//
// Exact buckets, no bit functions: the three engines share no bit-length
// or shift function, and log2 in floating point misplaces 2^k-1 for large
// k, so a log2 slot is a CASE ladder of comparisons with powers of two,
// smallest first (most values are small and stop early). It places every
// value as bpftape's hist does (BCC's bpf_log2l of the value taken as u64):
// 0 and 1 in slot 1, 2^(k-1) to 2^k-1 in slot k, and a negative value of a
// signed field, as u64 a number of at least 2^63, in slot 64, as are the
// uint64 values of 2^63 and more. A uint64 column that an engine reads as
// a signed BIGINT (its values of 2^63 and more negative) lands in slot 64
// too, so one ladder serves UBIGINT (DuckDB), DECIMAL(20,0) (Spark) and
// BIGINT. The one constant past BIGINT, 2^63, is CAST('...' AS
// DECIMAL(20,0)), which every engine parses. A latency's slot in usecs or
// msecs compares nanoseconds with unit*2^k, which is floor(ns/unit) < 2^k
// without the integer division the engines spell differently.
//
// Pairs by window functions, not recursion (Spark has no recursive CTE
// before 4.0): a thread's entries and returns in time order are +1 and -1
// steps, and the calls open before an event are the running sum floored at
// zero, that is the sum minus the lowest running sum before it (a return
// with no call open pairs with nothing and leaves zero open). An entry
// opens the level one above, a return closes the level open; within one
// level of one thread the events then alternate entry, return, so that a
// return's entry is the event before it there (LAG). A --key pair is the
// event before an end among the events of its key.
//
// Where the SQL and bpftape may differ:
//   - bpftape reads a capture in file order; the SQL orders each thread's
//     (or key's) events by time, returns and ends before entries and items
//     at the same nanosecond. A recording writes events in time order, but
//     for events the recorder wrote up to a few milliseconds late.
//   - a thread nested deeper than replay.MaxDepth (4096) open calls: bpftape
//     drops the deeper entries (overflows); the SQL counts them as overflows
//     but pairs as if they were kept, so that the durations of that thread
//     differ from bpftape's once one is dropped.
//   - requests --global: one running sum per host, not one across hosts.
//   - --from and --to are offsets from the capture start of the capture
//     given (its start_boot in the metadata): right for that capture's
//     export, and for the export of a merged capture, whose times are on
//     one clock; captures of other hosts exported alone keep their own boot
//     clocks, which no one window fits.
//
// Dialect: the query reads `read_parquet('DIR/*/*/*.parquet',
// hive_partitioning=true, union_by_name=true)`, DuckDB's, or a table or
// view name (Options.Table), as Spark and Trino read a folder. It quotes
// identifiers with double quotes (column names such as "rx.arg2" have a
// dot), as DuckDB and Trino do; Spark SQL quotes with backticks, and reads
// double quotes as identifiers only with spark.sql.ansi.enabled=true and
// spark.sql.ansi.doubleQuotedIdentifiers=true (Spark 3.4 and later). A
// quote inside a string literal, doubled in DuckDB and Trino, is two
// adjacent literals to Spark, and a backslash an escape: a name with a
// quote or a backslash is refused (ErrUnportable). Besides, the query uses
// only what the three share: WITH, CASE, CAST to DECIMAL(20,0) and
// DECIMAL(38,0), %, COALESCE, window functions (SUM, MIN, LAG, LEAD,
// ROW_NUMBER with ROWS frames), LEFT JOIN ... ON TRUE, and an inline
// (VALUES ...) AS t(a, b) table; no trailing semicolon (Trino's client
// API refuses one).
package fleetsql
