// Package fleetsql writes the SQL query that answers a bpftape analysis
// (hist, count, latency, requests) over the hive-partitioned Parquet of
// `bpftape export --partition`, so that DuckDB, Spark SQL or Trino answers
// it across every host's export at once, bucket for bucket as bpftape
// answers it on the merged capture. It reads a capture's metadata only,
// for names and types; docs/fleets.md and `bpftape sql --help` list where
// the engines and bpftape differ.
//
// One text for three engines: the query uses only what they share (WITH,
// CASE, CAST to DECIMAL, window functions with ROWS frames, an inline
// VALUES table) and DuckDB's syntax where they differ, and refuses names
// that the engines would read differently (ErrUnportable).
//
// Exact buckets without bit functions, which the engines do not share: a
// log2 slot is a CASE ladder of comparisons with powers of two (a
// floating-point log2 misplaces 2^k-1 for large k), which puts negative
// and 2^63-or-more values in slot 64 whether a uint64 column reads as
// unsigned, DECIMAL or signed.
//
// Pairs by window functions, not recursion (Spark has no recursive CTE
// before 4.0): the calls open before an event of a thread are the running
// sum of +1 entries and -1 returns less its lowest value before it, and
// within one nesting level a return's entry is the event before it (LAG).
package fleetsql
