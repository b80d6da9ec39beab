package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/fleetsql"
)

func init() {
	register("sql", "print the SQL that answers hist, count, latency or requests over partitioned Parquet exports, for DuckDB, Spark SQL or Trino", runSQL)
}

// errSQLVerb is a bpftape sql VERB that has no query.
var errSQLVerb = errors.New("unknown verb: want hist, count, latency or requests")

const sqlHelp = `
Prints the SQL query that answers VERB over the hive-partitioned Parquet
that 'bpftape export --partition' writes (DIR/host=H/probe=P/part-N.parquet):
DuckDB on one machine, or Spark SQL or Trino on a cluster, answers it across
every host's export at once, bucket for bucket as bpftape answers it on the
merged capture. It reads no event: run the query where the exports are.

  hist CAP PROBE FIELD [--cast T]        log2 histogram, as bpftape hist prints
                                         it: rows slot, low, high, count
  count CAP [PROBE-PATTERN...] [--by comm|pid|tid]
                                         events per probe: probe, [key,] count
  latency CAP ENTRY [RETURN] [-u|-m] [--key F,...]
                                         durations of the calls paired on each
                                         thread (or by key): calls,
                                         unmatched_returns, unmatched_entries,
                                         overflows, restarted, total_ns, then
                                         slot, low, high, count in the unit
  requests CAP ITEM_PROBE ITEM_FIELD END_PROBE END_FIELD [--end-cast T]
           [--global] [--key F,...]      per-request totals: requests,
                                         ends_without_items, incomplete,
                                         incomplete_items, then hist ('end' or
                                         'total'), slot, low, high, count

CAP is a capture, one host's or the merged one (bpftape merge): its probes
and fields are checked, and the fields' types choose how values are
bucketed (slot 1 holds 0 and 1, slot k 2^(k-1) to 2^k-1; a negative value
of a signed field and a uint64 of 2^63 or more are in slot 64, as bpftape
puts them). The rules are bpftape's own: a return pairs with the latest
unreturned entry of its thread (host and tid), a --key end with the latest
start of equal key values; loss records are left out (lost IS NULL). What
the SQL cannot do as bpftape does: it orders events by time where bpftape
reads them in file order (the same for a recording, but for events written
a few milliseconds late); past 4096 open calls on one thread it counts the
deeper entries as overflows but still pairs them; requests --global keeps
one sum per host.

The query reads read_parquet('DIR/*/*/*.parquet', hive_partitioning=true,
union_by_name=true), DuckDB's way to read the folder (--path DIR, default
fleet; s3:// works with DuckDB's httpfs); --table NAME reads a table or view
instead, as Spark and Trino read a folder. --pid, --tid, --comm, --from and
--to keep the events bpftape's own flags keep; --from and --to count from
the start of CAP (its boot clock, written in the query): right for CAP's own
export and for the export of a merged capture, whose hosts share one clock,
not for hosts exported one by one, whose clocks differ. A probe's part
files have only its own field columns (union_by_name, and Spark's
mergeSchema, read the others as NULL); a field of a probe that recorded no
event on any host has no column at all, and the engine says so ("Referenced
column ... not found"). The other columns the queries name are in every
part file (time, pid, tid, lost, and comm but with --redact) or come from
its folders (host, probe).

The SQL is the subset DuckDB, Spark SQL and Trino share (WITH, CASE, CAST
to DECIMAL, %, window functions with ROWS frames, (VALUES ...) AS t(a, b)),
and DuckDB's where they differ:
  - identifiers are "double-quoted" (columns such as "rx.arg2" have a dot):
    Spark 3.4 and later reads them so with spark.sql.ansi.enabled=true and
    spark.sql.ansi.doubleQuotedIdentifiers=true (else use backticks);
  - read_parquet is DuckDB's: Spark and Trino use --table;
  - a probe, command or path with a quote or backslash is refused, as
    Spark reads those in a string literal as DuckDB and Trino do not;
  - uint64 columns are UBIGINT in DuckDB, DECIMAL(20,0) in Spark; a Trino
    table may declare them bigint: the queries bucket, sum and compare them
    as bpftape does in all three (no constant past 2^63 but as a DECIMAL).
Spark and Trino are not run by bpftape's tests; DuckDB is.

Examples (DuckDB CLI):
  bpftape export host-a.arrow --partition -o fleet/
  bpftape export host-b.arrow --partition -o fleet/
  duckdb -c "$(bpftape sql hist host-a.arrow rx arg2)"
  duckdb -c "$(bpftape sql latency host-a.arrow rx rx_ret -u)"
  duckdb -c "$(bpftape sql count host-a.arrow --by comm --from 10s --to 20s)"
  duckdb -c "$(bpftape sql requests host-a.arrow tx_len arg0 tx_ret retval --end-cast s32)"
  bpftape merge host-a.arrow host-b.arrow -o fleet.arrow     # one clock for --from/--to
  bpftape export fleet.arrow --partition -o fleet2/
  duckdb -c "$(bpftape sql hist fleet.arrow rx arg2 --path fleet2 --from 5s)"
Spark SQL (3.4 or later), the folder in object storage as a view:
  bpftape sql latency host-a.arrow rx rx_ret -u --table fleet > rx.sql
  spark.conf.set("spark.sql.ansi.enabled", "true")
  spark.conf.set("spark.sql.ansi.doubleQuotedIdentifiers", "true")
  spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
  spark.read.option("mergeSchema", "true").parquet("s3a://bucket/fleet/").createOrReplaceTempView("fleet")
  spark.sql(open("rx.sql").read()).show(100)
Trino, the folder as a Hive connector table (partition columns last; uint64
columns as bigint; a column a probe's files lack reads as NULL):
  CREATE TABLE hive.bpf.fleet ("time" bigint, cpu integer, pid bigint,
      tid bigint, comm varchar, lost bigint, "rx.arg2" bigint, "rx_ret.retval" bigint,
      host varchar, probe varchar)
    WITH (external_location = 's3://bucket/fleet', format = 'PARQUET',
      partitioned_by = ARRAY['host', 'probe'])
  CALL hive.system.sync_partition_metadata('bpf', 'fleet', 'ADD')
  trino --execute "$(bpftape sql hist host-a.arrow rx arg2 --table hive.bpf.fleet)"`

// sqlVerbs are the verbs bpftape sql writes a query for, with their
// synopses.
var sqlVerbs = map[string]string{
	"hist":     "CAP PROBE FIELD",
	"count":    "CAP [PROBE-PATTERN...]",
	"latency":  "CAP ENTRY_PROBE [RETURN_PROBE]",
	"requests": "CAP ITEM_PROBE ITEM_FIELD END_PROBE END_FIELD",
}

func runSQL(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fs := newFlags("sql", "VERB [flags] CAP ARGS...", sqlHelp, stdout)
		_, err := parseArgs(fs, args)
		if err != nil {
			return helpOr(stderr, "sql", err)
		}
		return fail(stderr, "sql", usage.Errorf("want VERB CAP ARGS...: VERB is hist, count, latency or requests (see 'bpftape sql --help')"))
	}
	verb := args[0]
	synopsis, ok := sqlVerbs[verb]
	if !ok {
		return fail(stderr, "sql", usage.Errorf("%q: %w (see 'bpftape sql --help')", verb, errSQLVerb))
	}
	fs := newFlags("sql "+verb, "[flags] "+synopsis, sqlHelp, stdout)
	rowFilter := rowFlags(fs)
	table := fs.String("table", "", "read this table or view (Spark, Trino) instead of the Parquet files under --path")
	dir := fs.String("path", fleetsql.DefaultPath, "the folder export --partition wrote, read with DuckDB's read_parquet")
	var cast, by, key *string
	var us, ms, global *bool
	switch verb {
	case "hist":
		cast = fs.String("cast", "", "reinterpret values as s8|u8|s16|u16|s32|u32|s64|u64 first, like a C cast")
	case "count":
		by = fs.String("by", "", "also split the counts by `KEY`: comm, pid or tid")
	case "latency":
		us = fs.Bool("u", false, "microsecond histogram")
		ms = fs.Bool("m", false, "millisecond histogram")
		key = fs.String("key", "", "pair starts and ends by the values of these `FIELD[,FIELD...]` of both probes, not by thread")
	case "requests":
		cast = fs.String("end-cast", "", "reinterpret end values as s8|u8|s16|u16|s32|u32|s64|u64")
		global = fs.Bool("global", false, "one running sum for all threads of a host")
		key = fs.String("key", "", "pair items and ends by the values of these `FIELD[,FIELD...]` of both probes, not by thread")
	}
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return helpOr(stderr, "sql", err)
	}
	want := map[string][2]int{"hist": {3, 3}, "count": {1, -1}, "latency": {2, 3}, "requests": {5, 5}}[verb]
	if len(pos) < want[0] || want[1] >= 0 && len(pos) > want[1] {
		return fail(stderr, "sql", usage.Errorf("%s: want %s, got %d arguments", verb, synopsis, len(pos)))
	}
	o := fleetsql.Options{Table: *table, Path: *dir}
	if flagSet(fs, "table") && flagSet(fs, "path") {
		return fail(stderr, "sql", usage.Errorf("--table and --path exclude each other: a query reads one"))
	}
	if o.Rows, err = rowFilter(); err != nil {
		return fail(stderr, "sql", err)
	}
	var keys []string
	if key != nil && flagSet(fs, "key") {
		if keys, err = replay.ParseKeyFields(*key); err != nil {
			return fail(stderr, "sql", err)
		}
	}
	c, err := replay.Open(pos[0])
	if err != nil {
		return fail(stderr, "sql", err)
	}
	defer c.Close()
	var q string
	switch verb {
	case "hist":
		q, err = fleetsql.Hist(c, o, fleetsql.HistOptions{Probe: pos[1], Field: pos[2], Cast: *cast})
	case "count":
		q, err = fleetsql.Count(c, o, fleetsql.CountOptions{Probes: pos[1:], By: *by})
	case "latency":
		l := fleetsql.LatencyOptions{Entry: pos[1], Key: keys}
		switch {
		case *us && *ms:
			err = usage.Errorf("-u and -m exclude each other")
		case *us:
			l.Unit = "us"
		case *ms:
			l.Unit = "ms"
		}
		if err == nil && len(pos) == 3 {
			l.Return = pos[2]
		} else if err == nil {
			l.Entry, l.Return, err = returnPair(c.Meta().Probes, l.Entry)
		}
		if err == nil {
			q, err = fleetsql.Latency(c, o, l)
		}
	case "requests":
		q, err = fleetsql.Requests(c, o, fleetsql.RequestsOptions{ItemProbe: pos[1], ItemField: pos[2],
			EndProbe: pos[3], EndField: pos[4], EndCast: *cast, Global: *global, Key: keys})
	}
	if err != nil {
		return fail(stderr, "sql", err)
	}
	fmt.Fprint(stdout, q)
	return exitOK
}
