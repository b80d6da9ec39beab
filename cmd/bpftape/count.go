package main

import (
	"fmt"
	"io"

	"github.com/bpftape/bpftape/internal/textsafe"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay"
)

func init() {
	register("count", "events per probe (or per probe and comm, pid or tid), like BCC's funccount", runCount)
}

func runCount(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("count", "[flags] FILE [PROBE-PATTERN...]", `
Counts the events of each probe, in ascending order of count as BCC's
funccount prints them (--zeros: with the probes that recorded nothing, as 0).
A kernel function pattern (k:vfs_*) records one probe per function it
matched, named after it, so its count table is funccount's; PROBE-PATTERN
(shell glob) keeps the probes it matches. Losses of the counted probes are
reported under the table.

Examples:
  bpftape record -o vfs.arrow -d 10s 'k:vfs_*'
  bpftape count vfs.arrow                  # funccount 'vfs_*'
  bpftape count vfs.arrow 'vfs_read*'      # only some of the probes
  bpftape count --by comm vfs.arrow        # per probe and command name
  bpftape count --json vfs.arrow | jq '.counts[-1]'`, stdout)
	by := fs.String("by", "", "also split the counts by `KEY`: comm, pid or tid")
	zeros := fs.Bool("zeros", false, "list the probes that recorded nothing too (a pattern's functions never called)")
	asJSON := fs.Bool("json", false, "print JSON")
	rowFilter := rowFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpOr(stderr, "count", err)
	}
	if len(pos) < 1 {
		return fail(stderr, "count", usage.Errorf("want FILE [PROBE-PATTERN...]"))
	}
	f, err := rowFilter()
	if err != nil {
		return fail(stderr, "count", err)
	}
	o := replay.CountOptions{Rows: f, Probes: pos[1:], By: *by, Zeros: *zeros, JSON: *asJSON}
	err = withCapture(pos[0], stderr, func(c *replay.Capture) (*replay.Pass, error) {
		rows, p, err := replay.Count(c, o, stdout)
		n := uint64(0)
		for _, r := range rows {
			n += r.Count
		}
		if err == nil && n == 0 && o.Rows.Empty() { // a filter that matched nothing has its note
			what := "no events"
			if len(o.Probes) > 0 {
				what = "no events of the probes counted"
			}
			fmt.Fprintf(stderr, "NOTE: %s: %s.\n", textsafe.Escape(pos[0]), what)
		}
		return p, err
	})
	if err != nil {
		return fail(stderr, "count", err)
	}
	return exitOK
}
