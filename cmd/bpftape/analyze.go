package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/textsafe"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/hist"
)

func init() {
	register("hist", "log2 or linear histogram of a probe field, printed as BCC or bpftrace print it", runHist)
	register("requests", "per-request totals: sum item events on a thread (or of a key) until its end event", runRequests)
	register("latency", "durations between entry and return events on the same thread, or of the same key", runLatency)
	register("compare", "two histograms side by side with deltas and the KS distance", runCompare)
	register("events", "list events like BCC's trace", runEvents)
	register("info", "host, kernel, probes, counts, losses and size of a capture", runInfo)
	register("repair", "copy the complete batches of a damaged capture into a standard file", runRepair)
}

// withCapture opens path, runs fn, and prints the notes (losses,
// recovery) of the pass fn returns to stderr afterwards.
func withCapture(path string, stderr io.Writer, fn func(c *replay.Capture) (*replay.Pass, error)) error {
	c, err := replay.Open(path)
	if err != nil {
		return err
	}
	defer c.Close()
	c.Progress = replayProgress.of(path)
	p, err := fn(c)
	p.Notes(stderr)
	return err
}

func runHist(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("hist", "[flags] FILE PROBE [FIELD]", `
Prints the log2 histogram of FIELD of PROBE's events exactly as BCC's
print_log2_hist(label) prints a BPF_HISTOGRAM filled with bpf_log2l(), or
as bpftrace prints hist() with --style bpftrace. Without FIELD, it is
PROBE's one integer field (not counting the --by field); the histogram's
label, by default the field's name, says which.

With --interval D, prints one histogram per D of the capture instead, as
BCC's tools print with an interval and -T: each after a blank line and the
wall-clock time (HH:MM:SS, the capture's clock) at which its interval
ended; intervals count from the capture's start, as --from and --to and
record --print do (interval k is --from k*D --to (k+1)*D), and empty
ones print their time alone. It combines with --by, --style, --linear and
--stats; with --json it prints one array of intervals, each with its start
and end (wall clock and offset from the capture start), its count, and
its histograms as --json prints them without --interval.

Examples:
  bpftape hist cap.arrow rx arg2 --label size
  bpftape hist cap.arrow rx                     # rx's one integer field, arg2
  bpftape hist cap.arrow tx_done retval --cast s32 --label "num packets"
  bpftape hist cap.arrow exit_read ret --by comm --style bpftrace
  bpftape hist cap.arrow exit_read ret --linear 0,2000,200 --stats
  bpftape hist cap.arrow issue nr_sector --interval 1s --by dev   # per second and disk
  bpftape hist cap.arrow issue nr_sector --interval 10s --json | jq '.[].count'`, stdout)
	rowFilter := rowFlags(fs)
	label := fs.String("label", "", "label of the value column (default: the field name)")
	style := fs.String("style", "bcc", "output style: bcc or bpftrace")
	by := fs.String("by", "", "one histogram per key: comm, pid, tid or a field of the probe")
	linear := fs.String("linear", "", "linear histogram MIN,MAX,STEP (lhist) instead of log2")
	cast := fs.String("cast", "", "reinterpret values as s8|u8|s16|u16|s32|u32|s64|u64 first, like a C cast")
	stats := fs.Bool("stats", false, "print count, sum, min, mean, p50, p90, p99 and max after the histogram")
	asJSON := fs.Bool("json", false, "print JSON (BCC's print_json_hist shape for log2 histograms; with --by one object a key, each on its line, as BCC prints one a section)")
	btVersion := fs.String("bpftrace-version", "", "mimic this bpftrace release's output (default: the newest)")
	interval := durationFlag(fs, "interval", "one histogram per `DURATION` of the capture (e.g. 1s), each after its end time")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpOr(stderr, "hist", err)
	}
	if len(pos) != 2 && len(pos) != 3 {
		return fail(stderr, "hist", usage.Errorf("want FILE PROBE [FIELD], got %d arguments", len(pos)))
	}
	o := replay.HistOptions{Probe: pos[1], Label: *label, Style: *style, By: *by, Stats: *stats, JSON: *asJSON, Interval: *interval}
	if flagSet(fs, "interval") && *interval <= 0 {
		return fail(stderr, "hist", usage.Errorf("--interval %v: must be more than 0", *interval))
	}
	if o.Rows, err = rowFilter(); err != nil {
		return fail(stderr, "hist", err)
	}
	if *style != "bcc" && *style != "bpftrace" {
		return fail(stderr, "hist", usage.Errorf("--style %q: use bcc or bpftrace", *style))
	}
	if *linear != "" {
		if o.Linear, err = replay.ParseLinear(*linear); err != nil {
			return fail(stderr, "hist", usage.Wrap(err))
		}
	}
	if o.Cast, err = replay.ParseCast(*cast); err != nil {
		return fail(stderr, "hist", usage.Wrap(err))
	}
	if *btVersion != "" {
		if o.Bpftrace, err = hist.ParseBpftraceVersion(*btVersion); err != nil {
			return fail(stderr, "hist", usage.Wrap(err))
		}
	}
	o.Notes = stderr
	err = withCapture(pos[0], stderr, func(c *replay.Capture) (*replay.Pass, error) {
		if len(pos) == 3 {
			o.Field = pos[2]
			return replay.Hist(c, o, stdout)
		}
		if _, err := c.ResolveProbe(o.Probe); err != nil {
			return nil, err
		}
		_, p := c.Meta().Probe(o.Probe)
		var err error
		if o.Field, err = onlyIntField(p, o.By); err != nil {
			return nil, err
		}
		if o.Label != "" {
			// The label hides the field's name: say which it is.
			fmt.Fprintf(stderr, "NOTE: the histogram is of %s's field %s\n", textsafe.Escape(o.Probe), textsafe.Escape(o.Field))
		}
		return replay.Hist(c, o, stdout)
	})
	if err != nil {
		return fail(stderr, "hist", err)
	}
	return exitOK
}

// onlyIntField is the one integer field of p, not counting the field by
// (hist's --by), which hist takes when no FIELD is given.
func onlyIntField(p *format.Probe, by string) (string, error) {
	var ints, all []string
	for _, f := range p.Fields {
		all = append(all, f.Name)
		if f.Type.IsInt() && f.Name != by {
			ints = append(ints, f.Name)
		}
	}
	switch {
	case len(ints) == 1:
		return ints[0], nil
	case len(ints) > 1:
		return "", usage.Errorf("probe %s has %d integer fields: give FIELD, one of %s", p.Name, len(ints), strings.Join(ints, ", "))
	case len(all) > 0:
		return "", usage.Errorf("probe %s has no integer field to count (its fields: %s)", p.Name, strings.Join(all, ", "))
	}
	return "", usage.Errorf("probe %s has no fields: a histogram needs an integer field", p.Name)
}

func runRequests(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("requests", "[flags] FILE ITEM_PROBE ITEM_FIELD END_PROBE END_FIELD", `
Sums ITEM_FIELD of every ITEM_PROBE event on a thread until that thread's
END_PROBE event, then records one request: END_FIELD and the sum. Prints the
histogram of END_FIELD and of the sums as BCC prints them. This is the TX
analysis of the BCC virtio-net case study (per-packet lengths summed until
virtio_net_flush_tx returns the packets sent), done offline. End events with no items are skipped, as that
BPF program skips them; items never followed by an end are reported.

With --key FIELD[,FIELD...], items and ends make one request when their
values of those fields are equal, instead of when they are on one thread:
both probes must have the fields (a request handed between threads, keyed
by its id or a pointer).

Examples:
  bpftape requests cap.arrow tx_len arg0 tx_flush retval --end-label "sent pkts" --total-label len
  bpftape requests cap.arrow chunk len done status --key req_id`, stdout)
	rowFilter := rowFlags(fs)
	endLabel := fs.String("end-label", "", "label of the end value histogram (default: END_FIELD)")
	totalLabel := fs.String("total-label", "", "label of the totals histogram (default: ITEM_FIELD)")
	endCast := fs.String("end-cast", "", "reinterpret end values as s8|u8|s16|u16|s32|u32|s64|u64")
	global := fs.Bool("global", false, "one running sum for all threads (the seed's constant hash key)")
	key := fs.String("key", "", "pair items and ends by the values of these `FIELD[,FIELD...]` of both probes, not by thread")
	list := fs.Bool("list", false, "also print every request")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpOr(stderr, "requests", err)
	}
	if len(pos) != 5 {
		return fail(stderr, "requests", usage.Errorf("want FILE ITEM_PROBE ITEM_FIELD END_PROBE END_FIELD, got %d arguments", len(pos)))
	}
	o := replay.RequestsOptions{ItemProbe: pos[1], ItemField: pos[2], EndProbe: pos[3], EndField: pos[4],
		EndLabel: *endLabel, TotalLabel: *totalLabel, Global: *global, List: *list, JSON: *asJSON}
	if o.Rows, err = rowFilter(); err != nil {
		return fail(stderr, "requests", err)
	}
	if o.EndCast, err = replay.ParseCast(*endCast); err != nil {
		return fail(stderr, "requests", usage.Wrap(err))
	}
	if flagSet(fs, "key") {
		if o.Key, err = replay.ParseKeyFields(*key); err != nil {
			return fail(stderr, "requests", err)
		}
	}
	err = withCapture(pos[0], stderr, func(c *replay.Capture) (*replay.Pass, error) {
		_, p, err := replay.Requests(c, o, stdout)
		return p, err
	})
	if err != nil {
		return fail(stderr, "requests", err)
	}
	return exitOK
}

func runLatency(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("latency", "[flags] FILE ENTRY_PROBE [RETURN_PROBE]", `
Pairs each RETURN_PROBE event with the latest unreturned ENTRY_PROBE event
of the same thread (a stack per thread, so recursion pairs correctly) and
prints the histogram of durations like BCC's funclatency. Unmatched entries
and returns are counted and reported.

Without RETURN_PROBE, it is ENTRY_PROBE:return, the name record gives the
return probe of a function recorded without NAME= ('u:./prog:f' and
'ur:./prog:f' are f and f:return); given f:return alone, the entry is f.

With --key FIELD[,FIELD...], an end pairs instead with the latest start
whose values of those fields are equal, on any thread, as biolatency pairs
block:block_rq_issue with block:block_rq_complete by dev and sector: both
probes must have the fields. A start whose key is already open replaces
it, as bpftrace's @start[key] = nsecs does, and is counted as restarted.

--by splits the histogram per comm, pid, tid or field of RETURN_PROBE's
events (biolatency -D is --by dev). --interval D prints one histogram per D
of the capture, by the return's time, each after a blank line and the
wall-clock time its interval ended (biolatency -T; the capture's clock),
empty intervals too; the totals and unmatched counts follow. With --json,
"hists" holds the --by histograms and "intervals" the intervals (each with
its start, end, count and histograms).

--style bpftrace prints the histograms as bpftrace prints a hist() map
named after the unit (@nsecs, @usecs, @msecs), exactly as hist --style
bpftrace prints them, then the summary lines. --json is the same in both
styles.

Examples:
  bpftape latency cap.arrow rx rx_ret -u
  bpftape latency cap.arrow vfs_read -u          # vfs_read and vfs_read:return
  bpftape latency cap.arrow vfs_read -u --style bpftrace   # @usecs = hist(...)
  bpftape record -o bio.arrow -d 10s 'issue=t:block:block_rq_issue(dev,sector)' \
      'complete=t:block:block_rq_complete(dev,sector,error)'
  bpftape latency -m bio.arrow issue complete --key dev,sector              # biolatency -m
  bpftape latency -m bio.arrow issue complete --key dev,sector --interval 1s   # biolatency -mT 1
  bpftape latency bio.arrow issue complete --key dev,sector --by dev -u    # biolatency -D`, stdout)
	rowFilter := rowFlags(fs)
	us := fs.Bool("u", false, "microsecond histogram")
	ms := fs.Bool("m", false, "millisecond histogram")
	asJSON := fs.Bool("json", false, "print JSON")
	key := fs.String("key", "", "pair starts and ends by the values of these `FIELD[,FIELD...]` of both probes, not by thread")
	by := fs.String("by", "", "one histogram per key of the return event: comm, pid, tid or a field of RETURN_PROBE")
	interval := durationFlag(fs, "interval", "one histogram per `DURATION` of the capture (e.g. 1s), by the return's time")
	style := fs.String("style", "bcc", "output style: bcc or bpftrace")
	btVersion := fs.String("bpftrace-version", "", "with --style bpftrace, mimic this bpftrace release's output (default: the newest)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpOr(stderr, "latency", err)
	}
	if len(pos) != 2 && len(pos) != 3 {
		return fail(stderr, "latency", usage.Errorf("want FILE ENTRY_PROBE [RETURN_PROBE], got %d arguments", len(pos)))
	}
	o := replay.LatencyOptions{Entry: pos[1], JSON: *asJSON, By: *by, Interval: *interval, Style: *style}
	if *style != "bcc" && *style != "bpftrace" {
		return fail(stderr, "latency", usage.Errorf("--style %q: use bcc or bpftrace", *style))
	}
	if *btVersion != "" {
		if o.Bpftrace, err = hist.ParseBpftraceVersion(*btVersion); err != nil {
			return fail(stderr, "latency", usage.Wrap(err))
		}
	}
	if len(pos) == 3 {
		o.Return = pos[2]
	}
	if flagSet(fs, "key") {
		if o.Key, err = replay.ParseKeyFields(*key); err != nil {
			return fail(stderr, "latency", err)
		}
	}
	if flagSet(fs, "interval") && *interval <= 0 {
		return fail(stderr, "latency", usage.Errorf("--interval %v: must be more than 0", *interval))
	}
	switch {
	case *us && *ms:
		return fail(stderr, "latency", usage.Errorf("-u and -m exclude each other"))
	case *us:
		o.Unit = "us"
	case *ms:
		o.Unit = "ms"
	}
	if o.Rows, err = rowFilter(); err != nil {
		return fail(stderr, "latency", err)
	}
	err = withCapture(pos[0], stderr, func(c *replay.Capture) (*replay.Pass, error) {
		if o.Return == "" {
			var err error
			if o.Entry, o.Return, err = returnPair(c.Meta().Probes, o.Entry); err != nil {
				return nil, err
			}
		}
		if note := swapped(c.Meta(), o.Entry, o.Return); note != "" {
			fmt.Fprintln(stderr, note)
		}
		res, p, err := replay.Latency(c, o, stdout)
		if err == nil && res.Calls == 0 && o.Rows.Empty() { // a filter that matched nothing has its note
			fmt.Fprintf(stderr, "NOTE: %s: no call of %s returned (%s): the histogram is empty.\n", textsafe.Escape(pos[0]),
				textsafe.Escape(o.Entry), textsafe.Escape(o.Return))
		}
		return p, err
	})
	if err != nil {
		return fail(stderr, "latency", err)
	}
	return exitOK
}

// swapped returns a note when the entry probe of a latency is a return
// probe and its return probe is not: the two were probably given in the
// wrong order. "" otherwise.
func swapped(m *format.Meta, entry, ret string) string {
	_, e := m.Probe(entry)
	_, r := m.Probe(ret)
	isReturn := func(kind string) bool { return kind == "uretprobe" || kind == "kretprobe" || kind == "fexit" }
	if e == nil || r == nil || !isReturn(e.Kind) || isReturn(r.Kind) {
		return ""
	}
	return fmt.Sprintf("NOTE: the entry probe %s is a %s and the return probe %s a %s: were they swapped? (bpftape latency FILE %s %s)",
		textsafe.Escape(entry), e.Kind, textsafe.Escape(ret), r.Kind, textsafe.Escape(ret), textsafe.Escape(entry))
}

// returnSuffix ends the name record gives a return probe (uretprobe,
// kretprobe, fexit) recorded without NAME=: the entry probe's and this.
const returnSuffix = ":return"

// returnPair is the entry and return probe latency pairs when given one
// probe, name: name and name:return, or, for a name:return, name and it.
// Without such a pair, the error lists the probes that pair so, or else
// the capture's return probes; all its probes if it has no probe name.
func returnPair(probes []format.Probe, name string) (entry, ret string, err error) {
	has := map[string]bool{}
	for _, p := range probes {
		has[p.Name] = true
	}
	base, isReturn := strings.CutSuffix(name, returnSuffix)
	switch {
	case has[name] && has[name+returnSuffix]:
		return name, name + returnSuffix, nil
	case isReturn && has[name] && has[base]:
		return base, name, nil
	}
	var msg string
	switch {
	case !has[name]:
		msg = fmt.Sprintf("no probe %q", name)
	case isReturn:
		msg = fmt.Sprintf("no probe %q to pair with %q: give ENTRY_PROBE RETURN_PROBE", base, name)
	default:
		msg = fmt.Sprintf("no probe %q to pair with %q: give ENTRY_PROBE RETURN_PROBE", name+returnSuffix, name)
	}
	var pairs, returns, all []string
	for _, p := range probes {
		if has[p.Name+returnSuffix] {
			pairs = append(pairs, p.Name)
		}
		switch p.Kind {
		case "uretprobe", "kretprobe", "fexit":
			returns = append(returns, p.Name)
		}
		all = append(all, p.Name)
	}
	switch {
	case !has[name]:
		msg += "; the capture has: " + strings.Join(all, ", ")
	case len(pairs) > 0:
		msg += "; probes that pair with their :return: " + strings.Join(pairs, ", ")
	case len(returns) > 0:
		msg += "; the capture's return probes: " + strings.Join(returns, ", ")
	default:
		msg += "; the capture has: " + strings.Join(all, ", ")
	}
	return "", "", usage.Errorf("%s", msg)
}

func runCompare(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("compare", "[flags] FILE PROBE FIELD [FILE2] PROBE2 FIELD2 | FILE FILE2 PROBE FIELD", `
Prints two log2 histograms bucket by bucket with counts, deltas (B - A),
percentiles and the Kolmogorov–Smirnov distance between them:
  FILE PROBE FIELD PROBE2 FIELD2          two fields of one capture
  FILE PROBE FIELD FILE2 PROBE2 FIELD2    fields of two captures
  FILE FILE2 PROBE FIELD                  one field before and after
With --identical the exit status is 0 only when every bucket count is equal
(3 when they differ).

Examples (the virtio-net case study: RX entry size vs RX return value; a
field before and after a change):
  bpftape compare cap.arrow rx arg2 rx_ret retval --identical
  bpftape compare before.arrow after.arrow rx arg2`, stdout)
	rowFilter := rowFlags(fs)
	identical := fs.Bool("identical", false, "exit 0 only if every bucket count is equal, 3 otherwise")
	castA := fs.String("cast-a", "", "reinterpret A's values as s8|u8|s16|u16|s32|u32|s64|u64")
	castB := fs.String("cast-b", "", "reinterpret B's values likewise")
	label := fs.String("label", "", "label of the value column")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpOr(stderr, "compare", err)
	}
	var fileA, fileB string
	var a, b replay.Side
	switch len(pos) {
	case 4:
		fileA, fileB = pos[0], pos[1]
		a.Probe, a.Field, b.Probe, b.Field = pos[2], pos[3], pos[2], pos[3]
		if _, err := os.Stat(fileB); err != nil && !strings.ContainsAny(fileB, `./\`) {
			// FILE PROBE FIELD PROBE2, one short of two fields of one capture.
			return fail(stderr, "compare", usage.Errorf("%q is not a file: four arguments are FILE FILE2 PROBE FIELD; two fields of one capture are FILE PROBE FIELD PROBE2 FIELD2", fileB))
		}
	case 5:
		fileA, fileB = pos[0], pos[0]
		a.Probe, a.Field, b.Probe, b.Field = pos[1], pos[2], pos[3], pos[4]
	case 6:
		fileA, fileB = pos[0], pos[3]
		a.Probe, a.Field, b.Probe, b.Field = pos[1], pos[2], pos[4], pos[5]
	default:
		return fail(stderr, "compare", usage.Errorf("want 4, 5 or 6 arguments, got %d (see --help)", len(pos)))
	}
	if a.Cast, err = replay.ParseCast(*castA); err != nil {
		return fail(stderr, "compare", usage.Wrap(err))
	}
	if b.Cast, err = replay.ParseCast(*castB); err != nil {
		return fail(stderr, "compare", usage.Wrap(err))
	}
	o := replay.CompareOptions{Label: *label, JSON: *asJSON}
	if o.Rows, err = rowFilter(); err != nil {
		return fail(stderr, "compare", err)
	}
	ca, err := replay.Open(fileA)
	if err != nil {
		return fail(stderr, "compare", err)
	}
	defer ca.Close()
	cb := ca
	if fileB != fileA {
		if cb, err = replay.Open(fileB); err != nil {
			return fail(stderr, "compare", err)
		}
		defer cb.Close()
	}
	ca.Progress = replayProgress.of(fileA)
	if cb != ca {
		cb.Progress = replayProgress.of(fileB)
	}
	a.Capture, b.Capture = ca, cb
	res, err := replay.Compare(&a, &b, o, stdout)
	a.Pass.Notes(stderr)
	if b.Pass != a.Pass {
		b.Pass.Notes(stderr)
	}
	if err != nil {
		return fail(stderr, "compare", err)
	}
	if *identical && !res.Identical {
		return exitDiffer
	}
	return exitOK
}

func runEvents(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("events", "[flags] FILE [PROBE-PATTERN...]", `
Lists events one per line like BCC's trace: TIME PID TID COMM FUNC, then the
fields, or a printf-style message per probe given as BCC's trace takes it.
PROBE-PATTERN picks the probes listed, as count takes them ('vfs_*').
A stack field prints as its id: 'stacks --by tid' and 'export' (CSV, JSON
lines, Parquet) name its frames.

--jsonl lists them as JSON lines instead, streamed (one object per line, in
file order, memory independent of the capture's size), for jq and the like:
  {"time":BOOT_NS,"offset":S,"cpu":N,"pid":N,"tid":N,"comm":"..","probe":"..","fields":{"NAME":VALUE,..}}
"offset" is the TIME column's seconds (--time wall: "wall":"15:04:05.000000",
--time none: neither; "time" is always the event's CLOCK_BOOTTIME ns).
"fields" holds every field of the probe (so that a field named pid or comm
stays apart): integers as JSON numbers, exact even above 2^53 (jq 1.7+
prints them back unchanged; Go: json.Decoder.UseNumber), addresses and
stack ids in decimal; strings as export -f jsonl writes them; null for a
missing value. With -f, "message" holds the probe's formatted message, as
the text line shows it. A loss record of a listed probe is
  {"time":..,"offset":..,"cpu":N,"probe":"..","lost":N}
as 'export -f jsonl --lost keep' names it; -n counts events only.

Examples:
  bpftape events cap.arrow
  bpftape events cap.arrow --time none -f 'usdt1 "x=%d", arg0' -f 'usdt2 "x=%d, arg2=%s, arg3=%d", arg0, arg1, arg2'
  bpftape events --jsonl cap.arrow rx | jq -c 'select(.fields.arg2 > 1500) | {tid, size: .fields.arg2}'
  bpftape events --jsonl cap.arrow | jq -n 'reduce (inputs | .lost // empty) as $n (0; . + $n)'`, stdout)
	rowFilter := rowFlags(fs)
	var formats []*replay.EventFormat
	fs.Func("f", "per-probe message: 'PROBE \"FMT\", FIELD, ...' (repeatable)", func(s string) error {
		f, err := replay.ParseEventFormat(s)
		if err == nil {
			formats = append(formats, f)
		}
		return err
	})
	timeMode := fs.String("time", "rel", "TIME column: rel (seconds since capture start), wall, or none")
	limit := fs.Uint64("n", 0, "stop after this many events (0: all)")
	jsonl := fs.Bool("jsonl", false, "one JSON object per event (and per loss record) per line, streamed")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpOr(stderr, "events", err)
	}
	if len(pos) < 1 {
		return fail(stderr, "events", usage.Errorf("want FILE [PROBE...]"))
	}
	// Like BCC's trace, formatted probes are listed; with neither formats
	// nor probe names, every probe is.
	o := replay.EventsOptions{Probes: pos[1:], Formats: formats, Time: *timeMode, Limit: *limit, JSONL: *jsonl}
	for _, f := range formats {
		o.Probes = append(o.Probes, f.Probe)
	}
	if o.Rows, err = rowFilter(); err != nil {
		return fail(stderr, "events", err)
	}
	err = withCapture(pos[0], stderr, func(c *replay.Capture) (*replay.Pass, error) { return replay.Events(c, o, stdout) })
	if err != nil {
		return fail(stderr, "events", err)
	}
	return exitOK
}

func runInfo(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("info", "[flags] FILE", `
Prints where and how a capture was made (host, kernel, command line, probes
with their binaries' build ids), events per probe, the time span, losses,
size and compression ratio, whether the file was recovered, and the window
in which every probe recorded. Strings from the capture are printed
escaped (\x1b, \n), and the recording's command line shell-quoted, so
that it pastes back into a shell.

Examples:
  bpftape info cap.arrow
  bpftape info --json cap.arrow | jq '.events_per_probe'`, stdout)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpOr(stderr, "info", err)
	}
	if len(pos) != 1 {
		return fail(stderr, "info", usage.Errorf("want FILE"))
	}
	err = withCapture(pos[0], stderr, func(c *replay.Capture) (*replay.Pass, error) {
		_, p, err := replay.Info(c, *asJSON, stdout)
		return p, err
	})
	if err != nil {
		return fail(stderr, "info", err)
	}
	return exitOK
}

func runRepair(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("repair", "[--force] IN OUT | [--force] IN -o OUT", `
Copies every complete batch of IN, for example the capture of a recorder
that was killed, into OUT, a standard Arrow file any reader opens. OUT must
not exist (--force replaces it) and may not be IN; it appears only once
complete. A batch whose compressed bytes fail their checksum is left out,
and said so on stderr and in OUT: bpftape info OUT shows a "repaired:" line
with the events it held, by probe, when IN's footer counted them.

Examples:
  bpftape repair killed.arrow fixed.arrow
  bpftape repair killed.arrow -o fixed.arrow --force`, stdout)
	force := fs.Bool("force", false, "replace OUT if it exists")
	outPath := fs.String("o", "", "OUT, the file to write, as the other verbs take it")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpOr(stderr, "repair", err)
	}
	if *outPath != "" {
		pos = append(pos, *outPath)
	}
	if len(pos) != 2 {
		return fail(stderr, "repair", usage.Errorf("want IN OUT, or IN -o OUT"))
	}
	warnCapture(pos[1], stderr)
	o := format.RepairOptions{Force: *force}
	var done func()
	o.Progress, done = replayProgress.copying(pos[0])
	res, err := format.RepairWith(pos[0], pos[1], o)
	done()
	if err != nil {
		return fail(stderr, "repair", err)
	}
	state := "had its footer"
	if res.Recovered {
		state = "had no footer"
	}
	fmt.Fprintf(stdout, "%s %s: wrote %d events in %d batches to %s\n", pos[0], state, res.Rows, res.Batches, pos[1])
	if res.Cut != nil {
		fmt.Fprintf(stdout, "dropped the %v\n", res.Cut)
	}
	for _, err := range res.Skipped {
		fmt.Fprintf(stderr, "bpftape repair: skipped %v\n", err)
	}
	if res.Left != "" {
		fmt.Fprintf(stderr, "bpftape repair: WARNING: %s; %s records it (bpftape info shows it as %q)\n",
			strings.TrimPrefix(res.Left, "bpftape repair "), pos[1], format.ExtraRepaired)
	}
	return exitOK
}

// helpOr returns 0 after --help, or the usage failure.
func helpOr(stderr io.Writer, verb string, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return fail(stderr, verb, err)
}
