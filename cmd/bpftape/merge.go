package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/humanfmt"
	"github.com/bpftape/bpftape/internal/usage"
)

func init() {
	register("merge", "merge captures of several hosts, or rotated parts, into one with a host column", runMerge)
}

func runMerge(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("merge", "[flags] FILE FILE... -o OUT [--force]", `
Writes the events and loss records of several captures into one capture that
every verb reads:
  - every probe gets a "host" string field, the host its event was recorded
    on (loss records do not say their host);
  - probes with the same name, kind, spec and fields are one probe of the
    merged capture (hist shows the fleet, --by host splits it); a different
    probe with a name already taken is renamed NAME@HOST;
  - times stay on the boot clock of the capture that started first; captures
    of other hosts or boots are shifted by the difference of their boot times
    on the wall clock, so that wall-clock times stay right;
  - events are grouped by host, each host's captures merged in time order, as
    latency and requests pair events by thread id within a host;
  - two machines of one host name, or two boots of one machine, are two
    hosts: the second is NAME#2 (thread ids mean nothing across boots);
  - the merged metadata lists every input's metadata (bpftape info --json).

Examples:
  bpftape merge host-a.arrow host-b.arrow -o fleet.arrow
  bpftape hist fleet.arrow rx arg2 --by host
  bpftape merge part-1.arrow part-2.arrow part-3.arrow -o all.arrow`, stdout)
	out := outputFlags(fs, "the merged capture to write (required; not one of the inputs)", false)
	compress := fs.String("compress", "", "body compression: zstd, lz4 or none (default: the first input's)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpOr(stderr, "merge", err)
	}
	if len(pos) < 1 || *out.path == "" {
		return fail(stderr, "merge", usage.Errorf("want FILE... -o OUT"))
	}
	if err := out.check(pos...); err != nil {
		return fail(stderr, "merge", err)
	}
	if err := distinctInputs(pos); err != nil {
		return fail(stderr, "merge", err)
	}
	warnCapture(*out.path, stderr)
	o := format.MergeOptions{Tool: "bpftape " + Version, CommandLine: append([]string{"bpftape", "merge"}, args...), Force: *out.force}
	if *compress != "" {
		c, err := format.ParseCompression(*compress)
		if err != nil {
			return fail(stderr, "merge", usage.Errorf("--compress: %w", err))
		}
		o.Writer.Compression = c
	}
	var done func()
	o.Progress, done = replayProgress.copying(humanfmt.Plural(uint64(len(pos)), "capture", "captures"))
	res, err := format.Merge(*out.path, pos, o)
	done()
	if err != nil {
		return fail(stderr, "merge", err)
	}
	for _, r := range res.Recovered {
		fmt.Fprintf(stderr, "NOTE: %s has no footer (was the recorder killed?): merged its complete batches\n", r)
	}
	for _, r := range res.Relabeled {
		fmt.Fprintf(stderr, "NOTE: %s\n", r)
	}
	fmt.Fprintf(stdout, "merged %d captures (hosts %s) into %s: %d events, %d probes", len(pos),
		strings.ReplaceAll(res.Meta.Host, ",", ", "), *out.path, res.Events, len(res.Meta.Probes))
	if res.LossRecords > 0 {
		fmt.Fprintf(stdout, ", %d lost events in %d loss records", res.Lost, res.LossRecords)
	}
	fmt.Fprintln(stdout)
	return exitOK
}

// distinctInputs refuses a file given twice (by two names, or a link):
// its events would be merged twice, and every count doubled.
func distinctInputs(paths []string) error {
	seen := make([]os.FileInfo, len(paths))
	for i, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			continue // Merge says why it cannot open it
		}
		for j := range i {
			if seen[j] != nil && os.SameFile(seen[j], st) {
				return usage.Errorf("%s and %s are the same file: merged twice, each of its events would count twice", paths[j], p)
			}
		}
		seen[i] = st
	}
	return nil
}
