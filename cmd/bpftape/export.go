package main

import (
	"fmt"
	"io"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/export"
)

func init() {
	register("export", "write a capture's events as CSV, JSON lines, Parquet (optionally hive-partitioned) or a new capture, optionally redacted for sharing", runExport)
}

func runExport(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("export", "[flags] FILE --to csv|jsonl|parquet|arrow [-o OUT]", `
Writes the rows of a capture for tools that do not read Arrow IPC, streaming
batch by batch (memory does not grow with the capture):
  csv      a header, then one line per event: time (boot-clock ns), cpu, pid,
           tid, comm, probe, then every field column, empty where the
           event's probe has no such field
  jsonl    one JSON object per event with the same names, only its probe's
           fields; 64-bit integers are written in full
  parquet  zstd-compressed, columns typed as in the capture (comm and string
           fields, string_view in the capture, become utf8: Arrow Go's
           Parquet writer has no string_view), the capture's metadata kept
           under the key "bpftape"
  arrow    a new capture in bpftape's own format (Arrow IPC), which bpftape,
           polars, pyarrow and DuckDB open as they open a recording: the
           rows selected, loss records kept (--lost keep is the default
           here), metadata kept or, with --redact, redacted
--to takes the format; given a duration, as in the other verbs, it is the
end of the time window (--to parquet --to 5s).
Loss records (rows that count lost events) are dropped by default, with a
warning on stderr, so that one row is one event; --lost keep adds them and
a lost column (empty/null on events), --lost only writes just them.
--partition (Parquet) writes OUT/host=HOST/probe=PROBE/part-N.parquet, the
hive layout DuckDB and Spark read as one table with host and probe columns;
exporting more captures (other hosts) into the same OUT adds part files.
--compress (arrow, parquet) is zstd (default), lz4 (arrow only) or none.

--redact makes a file fit to attach to a bug report. It keeps what the
analyses need: times, CPUs, pids and tids, probe names and kinds, integer
arguments and return values, loss records, the kernel release, the bpftape
version, the start time, build ids and the base names of the probed
binaries. It removes every string the traced processes or the host gave
the capture:
  - comm, the command names: left out of CSV, JSON lines and Parquet;
    emptied in an arrow capture, whose schema has the column
  - every string field (str(argN), string tracepoint fields such as
    filenames, a merged capture's host field): column and field dropped
  - from the metadata (and every merged input's): the host name, the
    recorder's command line, the traced command and process name, debug
    file paths, merged input file names and any other free-form fact but
    pid, ring_size, wakeup_bytes, merged and merge.time_shift_ns; probed
    binaries keep their base name only (target and spec as typed)
The metadata of an arrow or Parquet export then says so: extra "redacted"
lists what was removed and "redacted.string_fields" the string fields
dropped (PROBE.FIELD, or none); bpftape info prints both. CSV and JSON
lines carry no metadata; a partitioned export puts every row under
host=__HIVE_DEFAULT_PARTITION__ (NULL). Probe and field names, which you
chose when recording, are kept: name probes with care.

Examples:
  bpftape export cap.arrow --to csv -o cap.csv
  bpftape export cap.arrow --to jsonl --lost keep --from 2s --to 3s | jq .
  bpftape export cap.arrow --to parquet -o cap.parquet
  bpftape export cap.arrow --to arrow --redact -o shareable.arrow
  bpftape export cap.arrow --to csv --redact --from 2s --to 3s -o window.csv
  bpftape export host-a.arrow --to parquet --partition -o fleet/
  bpftape export host-b.arrow --to parquet --partition -o fleet/
  duckdb -c "SELECT host, probe, count(*) FROM read_parquet('fleet/*/*/*.parquet', hive_partitioning=true, union_by_name=true) GROUP BY ALL"`, stdout)
	to := &formatOrEnd{}
	fs.Var(to, "to", "output format: csv, jsonl, parquet or arrow (required); as in the other verbs, a duration is the end of the time window")
	// --to is shared with the output format (formatOrEnd).
	filter := idFilterFlags(fs, "rows", func() time.Duration { return to.end })
	out := fs.String("o", "", "output file (default: standard output); the folder with --partition")
	lost := fs.String("lost", "", "loss records: drop (events only), keep (add them and a lost column) or only (default drop; keep for arrow)")
	partition := fs.Bool("partition", false, "Parquet only: hive-style folders host=HOST/probe=PROBE under -o")
	redact := fs.Bool("redact", false, "leave out comm, string fields and what identifies the host or a command (see above)")
	compress := fs.String("compress", "zstd", "arrow and parquet: zstd, lz4 (arrow only) or none")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpOr(stderr, "export", err)
	}
	if len(pos) != 1 {
		return fail(stderr, "export", fmt.Errorf("want FILE, got %d arguments: %w", len(pos), errUsage))
	}
	var o export.Options
	if o.Format = to.format; o.Format == "" {
		return fail(stderr, "export", fmt.Errorf("--to is required (csv, jsonl, parquet or arrow): %w", errUsage))
	}
	o.Redact = *redact
	if o.Compression, err = format.ParseCompression(*compress); err != nil {
		return fail(stderr, "export", fmt.Errorf("--compress: %w: %w", err, errUsage))
	}
	if o.Compression == format.LZ4 && o.Format == export.Parquet {
		return fail(stderr, "export", fmt.Errorf("--compress lz4 is for arrow only (parquet: zstd or none): %w", errUsage))
	}
	if *lost == "" && o.Format == export.Arrow {
		*lost = string(export.LostKeep)
	}
	if o.Lost, err = export.ParseLostMode(*lost); err != nil {
		return fail(stderr, "export", fmt.Errorf("%w: %w", err, errUsage))
	}
	if o.Filter, err = filter(); err != nil {
		return fail(stderr, "export", err)
	}
	if *partition && (o.Format != export.Parquet || *out == "" || *out == "-") {
		return fail(stderr, "export", fmt.Errorf("--partition needs --to parquet and -o FOLDER: %w", errUsage))
	}
	var res *export.Result
	err = withCapture(pos[0], stderr, func(c *replay.Capture) error {
		if *partition {
			res, err = export.WritePartitioned(c, *out, o)
			return err
		}
		return writeOut(*out, stdout, func(w io.Writer) error {
			switch o.Format {
			case export.CSV:
				res, err = export.WriteCSV(c, w, o)
			case export.JSONL:
				res, err = export.WriteJSONL(c, w, o)
			case export.Arrow:
				res, err = export.WriteArrow(c, w, o)
			default:
				res, err = export.WriteParquet(c, w, o)
			}
			return err
		})
	})
	if err != nil {
		return fail(stderr, "export", err)
	}
	if *out != "" && *out != "-" {
		what := fmt.Sprintf("%d events", res.Events)
		if o.Lost != export.LostDrop {
			what += fmt.Sprintf(" and %d loss records", res.LossRecords)
		}
		where := *out
		if *partition {
			where = fmt.Sprintf("%d files under %s", len(res.Files), *out)
		}
		if o.Redact {
			what += ", redacted"
		}
		fmt.Fprintf(stderr, "bpftape export: wrote %s to %s\n", what, where)
	}
	return exitOK
}

// formatOrEnd is export's --to: an output format, as the issue spells the
// verb, or, as in every other verb, the end of the time window.
type formatOrEnd struct {
	format export.Format
	end    time.Duration
}

func (f *formatOrEnd) String() string { return string(f.format) }

func (f *formatOrEnd) Set(s string) error {
	if fm, err := export.ParseFormat(s); err == nil {
		f.format = fm
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is neither a format (csv, jsonl, parquet, arrow) nor a duration", s)
	}
	f.end = d
	return nil
}
