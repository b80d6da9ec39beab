package main

import (
	"io"
	"strconv"
	"time"

	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/heatmap"
)

func init() {
	register("heatmap", "SVG heat map over time of a probe field, or of latencies from entry/return pairs", runHeatmap)
}

func runHeatmap(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("heatmap", "[flags] FILE PROBE FIELD | --latency [flags] FILE ENTRY_PROBE [RETURN_PROBE]", `
Draws an SVG heat map: time since the capture start across (one column per
--step, or a round step giving at most --cols columns), values up in rows on
BCC's log2 bucket edges (or --rows linear rows from --min to --max), and the
count of events in each cell as colour. Every cell has a tooltip with its
count, its share of the column and the cumulative percentile in its column.
The last column and the top row are drawn (trace2heatmap.pl drops them).
With --latency, the values are the durations from each ENTRY_PROBE event to
its RETURN_PROBE event on the same thread (as 'bpftape latency' pairs them),
placed at the time of the return; without RETURN_PROBE, it is
ENTRY_PROBE:return, as 'bpftape latency' takes it. Reads the file twice; memory does not
grow with the capture.

Examples:
  bpftape heatmap cap.arrow rx arg2 -o rx-size.svg
  bpftape heatmap cap.arrow --latency rx rx_ret --step 10ms -o rx-latency.svg
  bpftape heatmap cap.arrow --latency vfs_read -o vfs-read.svg   # vfs_read and vfs_read:return
  bpftape heatmap cap.arrow tx_len arg0 --rows 30 --min 0 --max 1500 --color linear > tx.svg
  bpftape heatmap cap.arrow --latency rx rx_ret --rows 40 --max 50us --from 2s --to 4s`, stdout)
	rowFilter := rowFlags(fs)
	out := outputFlags(fs, "write the SVG to this file (default: standard output)", true)
	latency := fs.Bool("latency", false, "arguments are ENTRY_PROBE [RETURN_PROBE]: map the latencies between them")
	step := durationFlag(fs, "step", "column width (default: a round step giving at most --cols columns)")
	cols := fs.Int("cols", heatmap.DefaultCols, "most columns an automatic --step gives")
	rows := fs.Int("rows", 0, "linear rows instead of log2 ones (default 20 with --min or --max)")
	minS := fs.String("min", "", "lowest value of the linear rows (default: the smallest value); a duration such as 10us with --latency")
	maxS := fs.String("max", "", "highest value of the linear rows (default: the largest value)")
	cast := fs.String("cast", "", "reinterpret values as s8|u8|s16|u16|s32|u32|s64|u64 first, like a C cast")
	color := fs.String("color", heatmap.ColorLog, "colour scale of the counts: log or linear")
	title := fs.String("title", "", "title of the map (default: PROBE FIELD, or latency ENTRY → RETURN)")
	width := fs.Int("width", 960, "target width of the image in px")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpOr(stderr, "heatmap", err)
	}
	if len(pos) != 3 && !(*latency && len(pos) == 2) {
		want := "FILE PROBE FIELD"
		if *latency {
			want = "FILE ENTRY_PROBE [RETURN_PROBE]"
		}
		return fail(stderr, "heatmap", usage.Errorf("want %s, got %d arguments", want, len(pos)))
	}
	spec := heatmap.Spec{Title: *title, Rows: *rows}
	if *latency {
		spec.Entry = pos[1]
		if len(pos) == 3 {
			spec.Return = pos[2]
		}
	} else {
		spec.Probe, spec.Field = pos[1], pos[2]
	}
	if spec.Cast, err = replay.ParseCast(*cast); err != nil {
		return fail(stderr, "heatmap", usage.Wrap(err))
	}
	if spec.Min, err = parseBound("--min", *minS, *latency); err != nil {
		return fail(stderr, "heatmap", err)
	}
	if spec.Max, err = parseBound("--max", *maxS, *latency); err != nil {
		return fail(stderr, "heatmap", err)
	}
	if spec.Rows == 0 && (spec.Min != nil || spec.Max != nil) {
		spec.Rows = 20
	}
	if spec.Rows < 0 || *cols <= 0 || *step < 0 {
		return fail(stderr, "heatmap", usage.Errorf("--rows, --cols and --step must be positive"))
	}
	if *color != heatmap.ColorLog && *color != heatmap.ColorLinear {
		return fail(stderr, "heatmap", usage.Errorf("--color %q: use log or linear", *color))
	}
	f, err := rowFilter()
	if err != nil {
		return fail(stderr, "heatmap", err)
	}
	if err := out.check(pos[0]); err != nil {
		return fail(stderr, "heatmap", err)
	}
	var maps []*heatmap.Map
	err = withCapture(pos[0], stderr, func(c *replay.Capture) (p *replay.Pass, err error) {
		if *latency && spec.Return == "" {
			if spec.Entry, spec.Return, err = returnPair(c.Meta().Probes, spec.Entry); err != nil {
				return nil, err
			}
		}
		maps, p, err = heatmap.Build(c, &f, []heatmap.Spec{spec}, heatmap.Options{Step: *step, MaxCols: *cols})
		return p, err
	})
	if err != nil {
		return fail(stderr, "heatmap", err)
	}
	err = out.write(stdout, pos[:1], func(w io.Writer) error {
		return maps[0].WriteSVG(w, heatmap.SVGOptions{Width: *width, Color: *color})
	})
	if err != nil {
		return fail(stderr, "heatmap", err)
	}
	return exitOK
}

// parseBound parses --min/--max: an integer, or with durations a Go
// duration such as 250us, in ns.
func parseBound(name, s string, durations bool) (*int64, error) {
	if s == "" {
		return nil, nil
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return &v, nil
	}
	if durations {
		if d, err := time.ParseDuration(s); err == nil {
			v := int64(d)
			return &v, nil
		}
		return nil, usage.Errorf("%s %q: want an integer (ns) or a duration such as 250us", name, s)
	}
	return nil, usage.Errorf("%s %q: want an integer", name, s)
}
