package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/humanfmt"
	"github.com/bpftape/bpftape/internal/outfile"
	"github.com/bpftape/bpftape/internal/textsafe"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/export"
	"github.com/bpftape/bpftape/replay/perfetto"
	"github.com/bpftape/bpftape/replay/pprof"
)

func init() {
	register("export", "write a capture's events as CSV, JSON lines, Parquet (optionally hive-partitioned) or a new capture, optionally redacted for sharing; its stacks as a pprof profile; its threads' time lines as a Perfetto trace", runExport)
}

func runExport(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("export", "[flags] FILE --format csv|jsonl|parquet|arrow|pprof|perfetto [-o OUT [--force]]", `
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
  pprof    not rows: a probe's stacks as a gzipped pprof profile
           (profile.proto), which go tool pprof, Pyroscope, Parca, Grafana
           and speedscope read (see below)
  perfetto not rows: a Perfetto trace, a time line per thread, which
           ui.perfetto.dev opens (see below)
--format (-f) takes the format; without it, the extension of the -o file
gives it: .csv, .jsonl or .ndjson, .parquet, .arrow, .feather or .ipc,
.pb.gz or .pprof, .pftrace or .perfetto-trace (--format wins over the
extension, with a warning when they disagree).
--from and --to bound the time window, as in the other verbs.
Loss records (rows that count lost events) are dropped by default, with a
warning on stderr, so that one row is one event; --lost keep adds them and
a lost column (empty/null on events), --lost only writes just them.
Parquet always has the lost column (null on events, and on every row with
--lost drop), so that a query with WHERE lost IS NULL runs on any export.
--partition (Parquet) writes OUT/host=HOST/probe=PROBE/part-N.parquet, the
hive layout DuckDB and Spark read as one table with host and probe columns;
exporting more captures (other hosts) into the same OUT adds part files;
the same rows of a capture (same filters) again are refused, as a query of
OUT would count them twice.
--compress (arrow, parquet) is zstd (default), lz4 (arrow only) or none.

A stack field (ustack, kstack) is a stack id in the capture, whose frames
are in its stack table. CSV, JSON lines and Parquet have no place for the
table, so they write each stack as its frames, root first, separated by
';', exactly as bpftape stacks --build-ids prints them ("main;top;mid;leaf";
a frame that did not resolve as [OBJECT@BUILDID+0xOFFSET], the same on
every host that ran that build, or [0xADDRESS]), in a text column (utf8 in
Parquet) of the same name, empty/null for an event without a stack.
--stack-ids writes the uint64 ids instead. arrow always keeps the ids and
the stack table.

CSV text cells (command names, probe names, string fields) that a
spreadsheet would run as a formula — starting with =, +, -, @, a tab or a
carriage return — get a leading single quote, as OWASP recommends;
--csv-formulas writes them as they are. Bytes that are not UTF-8 become
U+FFFD in CSV, JSON lines and Parquet.

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

A pprof profile counts the events of --probe (default: the one probe that
recorded stacks) by stack, as bpftape stacks does; each sample is one
stack of one thread, labelled with comm and probe, and pid and tid as
numbers. --user, --kernel, --both and --by KEY work as in bpftape stacks,
and so do --pid, --tid, --comm, --from and --to. What a sample weighs:
  --weight events   samples/count; for a profile:hz:N probe also
                    cpu/nanoseconds, one period per sample (the default)
  --weight offcpu   off-cpu/nanoseconds by the stack a thread left the CPU
                    with, from a sched_switch probe, as stacks --offcpu
                    (--offcpu is short for it)
  --weight latency  latency/nanoseconds: the time of each call of --pair
                    START,END (default PROBE,PROBE:return), paired as
                    bpftape latency pairs them (--key FIELDS as there), by
                    the stack of its entry (or of its return, when only the
                    return recorded stacks); calls/count counts them
Every location keeps its address and mapping (file, build id, start,
limit and file offset), so a symbol server can symbolize it again; the
frames bpftape resolved carry their function names, so the profile reads
the same after the binaries are gone. Two exports compare with
go tool pprof -diff_base; bpftape stacks --base compares folded stacks.

A Perfetto trace has a track per process and per thread, named by their
comm (a rename or exec gives the later name from where it happened). Entry
and return events pair into slices, as bpftape latency pairs them: each
entry probe with its function's return probe, and any --pair START,END
(--key FIELDS pairs by key across threads, as latency --key; a probe pairs
once, so a --pair takes its probes out of their entry/return pair); the
fields of both ends are the slice's arguments, and an end that pairs with
nothing is an instant marked unmatched. Every other event is an instant
with its fields; --counter PROBE.FIELD draws a field as a counter track;
stacks are callstacks on their events, symbolized from the capture. A
"bpftape" track holds the loss records and the capture's window. Times
are the capture's boot clock, mapped to its wall clock in the trace.

Examples:
  bpftape export cap.arrow -o cap.parquet          # the format from the extension
  bpftape export cap.arrow --format csv -o cap.csv
  bpftape export cap.arrow --format jsonl --lost keep --from 2s --to 3s | jq .
  bpftape export cap.arrow --format parquet -o cap.parquet
  bpftape export cap.arrow --format arrow --redact -o shareable.arrow
  bpftape export cap.arrow --format csv --redact --from 2s --to 3s -o window.csv
  bpftape export leaf.arrow -f parquet -o leaf.parquet   # leaf.ustack: main;top;mid;leaf
  duckdb -c "SELECT \"leaf.ustack\", count(*) FROM 'leaf.parquet' GROUP BY 1"
  bpftape export prof.arrow -f csv --stack-ids -o prof-ids.csv
  bpftape export host-a.arrow --partition -o fleet/   # --partition: Parquet
  bpftape export host-b.arrow --partition -o fleet/
  duckdb -c "SELECT host, probe, count(*) FROM read_parquet('fleet/*/*/*.parquet', hive_partitioning=true, union_by_name=true) GROUP BY ALL"
  bpftape export prof.arrow -o prof.pb.gz && go tool pprof -top prof.pb.gz
  bpftape export sw.arrow --offcpu --comm app -o offcpu.pb.gz
  bpftape export leaf.arrow --weight latency --probe leaf -o leaf-time.pb.gz
  go tool pprof -top -diff_base before.pb.gz after.pb.gz
  bpftape export vnet.arrow -o vnet.pftrace                 # then open it in ui.perfetto.dev
  bpftape export vnet.arrow -f perfetto --pair tx_len,tx_ret --counter rx.arg2 -o vnet.pftrace`, stdout)
	var fmtName string
	fs.StringVar(&fmtName, "format", "", "output format: csv, jsonl, parquet, arrow, pprof or perfetto (default: from the -o file's extension)")
	fs.StringVar(&fmtName, "f", "", "short for --format")
	var end time.Duration
	fs.Func("to", "only rows less than this `duration` after the capture start (e.g. 3s)", func(s string) error {
		if _, err := export.ParseFormat(s); err == nil {
			return fmt.Errorf("--to is the end of the time window, as in every verb: give the format with --format %s", s)
		}
		if err := (secondsValue{&end}).Set(s); err != nil {
			return errors.New(notDuration)
		}
		return nil
	})
	rowFilter := idRowFlags(fs, "rows", func() time.Duration { return end })
	out := outputFlags(fs, "output file (default: standard output); the folder with --partition", true)
	lost := fs.String("lost", "", "loss records: drop (events only), keep (add them and a lost column; parquet always has the column) or only (default drop; keep for arrow)")
	partition := fs.Bool("partition", false, "Parquet only: hive-style folders host=HOST/probe=PROBE under -o")
	redact := fs.Bool("redact", false, "leave out comm, string fields and what identifies the host or a command (see above)")
	formulas := fs.Bool("csv-formulas", false, "CSV: write text cells that start with = + - @ tab or CR as they are (by default they get a leading ' so that a spreadsheet does not run them)")
	compress := fs.String("compress", "zstd", "arrow and parquet: zstd, lz4 (arrow only) or none")
	stackIDs := fs.Bool("stack-ids", false, "csv, jsonl, parquet: write stack fields as their uint64 ids, not as folded frames (arrow keeps the ids)")
	pf := addProfileFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpOr(stderr, "export", err)
	}
	if len(pos) != 1 {
		return fail(stderr, "export", usage.Errorf("want FILE, got %d arguments", len(pos)))
	}
	var o export.Options
	if o.Format, err = exportFormat(fmtName, out, *partition, stderr); err != nil {
		return fail(stderr, "export", err)
	}
	if err := pf.check(fs, o.Format); err != nil {
		return fail(stderr, "export", err)
	}
	var po pprof.Options
	var to perfetto.Options
	if o.Format == export.Pprof || o.Format == export.Perfetto {
		if err := rowsOnly(fs, string(o.Format)); err != nil {
			return fail(stderr, "export", err)
		}
		rows, err := rowFilter()
		if err == nil && o.Format == export.Pprof {
			po, err = pf.pprofOptions(rows)
		} else if err == nil {
			to, err = pf.perfettoOptions(rows)
		}
		if err != nil {
			return fail(stderr, "export", err)
		}
	}
	o.Redact = *redact
	o.CSVFormulas = *formulas
	o.StackIDs = *stackIDs
	if o.Compression, err = format.ParseCompression(*compress); err != nil {
		return fail(stderr, "export", usage.Errorf("--compress: %w", err))
	}
	if o.Compression == format.LZ4 && o.Format == export.Parquet {
		return fail(stderr, "export", usage.Errorf("--compress lz4 is for arrow only (parquet: zstd or none)"))
	}
	if *lost == "" && o.Format == export.Arrow {
		*lost = string(export.LostKeep)
	}
	if o.Lost, err = export.ParseLostMode(*lost); err != nil {
		return fail(stderr, "export", usage.Wrap(err))
	}
	if o.Rows, err = rowFilter(); err != nil {
		return fail(stderr, "export", err)
	}
	if *partition && (o.Format != export.Parquet || out.toStdout()) {
		return fail(stderr, "export", usage.Errorf("--partition needs --format parquet and -o FOLDER"))
	}
	if o.Format != export.CSV && o.Format != export.JSONL && out.toStdout() && stdoutIsTerminal() {
		return fail(stderr, "export", usage.Errorf("will not write %s, a binary format, to a terminal: give -o FILE, or redirect the output to a file", o.Format))
	}
	if *partition {
		err = outfile.CheckDir(*out.path)
	} else {
		err = out.check(pos[0])
	}
	if err != nil {
		return fail(stderr, "export", err)
	}
	var res *export.Result
	var samples int
	var sampled uint64
	var trace *perfetto.Result
	err = withCapture(pos[0], stderr, func(c *replay.Capture) (pass *replay.Pass, err error) {
		switch o.Format {
		case export.Pprof:
			err = out.write(stdout, pos[:1], func(w io.Writer) error {
				var err error
				samples, sampled, pass, err = writePprof(c, w, po, stderr)
				return err
			})
			return pass, err
		case export.Perfetto:
			err = out.write(stdout, pos[:1], func(w io.Writer) error {
				var err error
				trace, pass, err = perfetto.Write(c, w, to)
				return err
			})
			return pass, err
		}
		if *partition {
			res, pass, err = export.WritePartitioned(c, *out.path, o)
			return pass, err
		}
		err = out.write(stdout, pos[:1], func(w io.Writer) error {
			var err error
			switch o.Format {
			case export.CSV:
				res, pass, err = export.WriteCSV(c, w, o)
			case export.JSONL:
				res, pass, err = export.WriteJSONL(c, w, o)
			case export.Arrow:
				res, pass, err = export.WriteArrow(c, w, o)
			default:
				res, pass, err = export.WriteParquet(c, w, o)
			}
			return err
		})
		return pass, err
	})
	if err != nil {
		if errors.Is(err, format.ErrStackTable) && !o.StackIDs && (o.Format == export.CSV || o.Format == export.JSONL || o.Format == export.Parquet) {
			err = fmt.Errorf("%w (--stack-ids exports the stack ids without the table)", err)
		}
		return fail(stderr, "export", err)
	}
	if o.Format == export.Perfetto {
		for _, l := range trace.LeftOut {
			fmt.Fprintf(stderr, "NOTE: %s: not drawn as slices, a probe pairs once\n", l)
		}
		if trace.Slices == 0 && trace.Unmatched > 0 {
			fmt.Fprintf(stderr, "NOTE: no pair made a slice (%s ends or starts matched nothing): an end closes the last open start of its thread; --key FIELDS pairs by fields across threads\n", humanfmt.Commas(trace.Unmatched))
		}
		if !out.toStdout() {
			fmt.Fprintf(stderr, "bpftape export: wrote a Perfetto trace of %s slices, %s instants and %s counter values to %s (open it in ui.perfetto.dev)\n",
				humanfmt.Commas(trace.Slices), humanfmt.Commas(trace.Instants+trace.Unmatched+trace.LossRecords), humanfmt.Commas(trace.Counters), *out.path)
		}
		return exitOK
	}
	if o.Format == export.Pprof {
		if !out.toStdout() {
			fmt.Fprintf(stderr, "bpftape export: wrote a profile of %d samples (%s %s) to %s\n", samples, humanfmt.Commas(sampled), profileUnit(po.Weight), *out.path)
		}
		return exitOK
	}
	(&replay.StackCounts{Unresolved: res.UnresolvedFrames}).Notes(stderr)
	if !out.toStdout() {
		what := fmt.Sprintf("%d events", res.Events)
		if o.Lost != export.LostDrop {
			what += fmt.Sprintf(" and %d loss records", res.LossRecords)
		}
		where := *out.path
		if *partition {
			where = fmt.Sprintf("%d files under %s", len(res.Files), *out.path)
		}
		if o.Redact {
			what += ", redacted"
		}
		fmt.Fprintf(stderr, "bpftape export: wrote %s to %s\n", what, where)
	}
	return exitOK
}

// formatsByExt are the output formats the extension of export's -o file
// names. .json is left out: a reader of a .json file expects one JSON
// document, not JSON lines.
var formatsByExt = map[string]export.Format{
	".pprof":          export.Pprof,
	".pb.gz":          export.Pprof,
	".pftrace":        export.Perfetto,
	".perfetto-trace": export.Perfetto,
	".csv":            export.CSV,
	".jsonl":          export.JSONL,
	".ndjson":         export.JSONL,
	".parquet":        export.Parquet,
	".arrow":          export.Arrow,
	".feather":        export.Arrow,
	".ipc":            export.Arrow,
}

// exportFormat is the format export writes: --format's (name) if given,
// warning on stderr when it is not the one the -o file's extension names;
// else the extension's, or Parquet with --partition.
func exportFormat(name string, out *output, partition bool, stderr io.Writer) (export.Format, error) {
	ext := ""
	if !out.toStdout() && !partition {
		ext = strings.ToLower(filepath.Ext(*out.path))
		if strings.HasSuffix(strings.ToLower(*out.path), ".pb.gz") {
			ext = ".pb.gz"
		}
	}
	byExt, known := formatsByExt[ext]
	if name == "" {
		switch {
		case known:
			return byExt, nil
		case partition:
			return export.Parquet, nil
		case ext != "":
			return "", usage.Errorf("--format is required: the extension %s of -o does not name a format (csv, jsonl, parquet, arrow, pprof or perfetto)", ext)
		}
		return "", usage.Errorf("--format is required (csv, jsonl, parquet, arrow, pprof or perfetto), or an -o file ending in .csv, .jsonl, .parquet, .arrow, .pb.gz or .pftrace")
	}
	f, err := export.ParseFormat(name)
	if err != nil {
		return "", usage.Errorf("--format: %w", err)
	}
	if known && f != byExt {
		fmt.Fprintf(stderr, "WARNING: writing %s to %s, as --format says, though its extension says %s\n", f, textsafe.Escape(*out.path), byExt)
	}
	return f, nil
}

// warnCapture warns on stderr when path, a capture merge or repair
// writes, has the extension of another format (fleet.csv).
func warnCapture(path string, stderr io.Writer) {
	ext := strings.ToLower(filepath.Ext(path))
	if strings.HasSuffix(strings.ToLower(path), ".pb.gz") {
		ext = ".pb.gz"
	}
	if f, ok := formatsByExt[ext]; ok && f != export.Arrow {
		fmt.Fprintf(stderr, "WARNING: writing an Arrow capture to %s, though its extension says %s\n", textsafe.Escape(path), f)
	}
}

// rowsOnly refuses, for a format that writes no rows (what), the flags
// about rows.
func rowsOnly(fs *flag.FlagSet, what string) error {
	var bad []string
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "lost", "partition", "redact", "csv-formulas", "compress", "stack-ids":
			bad = append(bad, "--"+fl.Name)
		}
	})
	if len(bad) > 0 {
		return usage.Errorf("%s: not for --format %s, which writes no rows", strings.Join(bad, ", "), what)
	}
	return nil
}

// profileUnit names what a profile's samples count.
func profileUnit(w pprof.Weight) string {
	switch w {
	case pprof.OffCPU:
		return "off-CPU intervals"
	case pprof.Latency:
		return "calls"
	}
	return "events"
}
