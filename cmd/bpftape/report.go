package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/report"
)

func init() {
	register("report", "one self-contained HTML page for a bug report: metadata, losses, histograms, heat maps", runReport)
}

func runReport(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("report", "[flags] FILE [-o report.html]", `
Writes one self-contained HTML page about a capture, to attach to a bug
report: where and how it was recorded (host, kernel, command line, probes
with their binaries and build ids, time span), its losses in a warning box,
events per probe and over time, a histogram (BCC's log2 buckets, as bars,
with BCC's text) and a heat map of every numeric field of every probe but
addresses (pointer parameters: --pointers draws them too), the latency of
the entry/return pairs it finds (f and f:return, or a uprobe and uretprobe,
kprobe and kretprobe, fentry and fexit of one function: at most --pairs of
them) or of those --latency names (ENTRY_PROBE [RETURN_PROBE], as 'bpftape
latency' takes them), and the request and comparison analyses
asked for. The page loads
nothing: no scripts, no fonts, no network; CSS and SVG are inline. Without
-o the page goes to standard output, which must then be a file or a pipe,
not a terminal.
Analysis flags take their arguments as one word each, separated by spaces
or commas, and may be repeated.

Examples:
  bpftape report cap.arrow -o report.html
  bpftape report cap.arrow > report.html
  bpftape report cap.arrow -o report.html --latency "rx rx_ret" \
      --requests "tx_len arg0 tx_ret retval" --compare "rx arg2 rx_ret retval"
  bpftape report after.arrow --compare "rx arg2 before.arrow rx arg2" --from 10s --to 20s -o r.html`, stdout)
	rowFilter := rowFlags(fs)
	out := outputFlags(fs, "write the HTML to this file (default: standard output)", true)
	title := fs.String("title", "", "title of the page (default: the file name)")
	heatmaps := fs.Int("heatmaps", report.DefaultMaxHeatmaps, "heat maps of at most this many numeric fields (0: none)")
	cols := fs.Int("cols", report.DefaultCols, "most columns of the time line and heat maps")
	pairs := fs.Int("pairs", report.DefaultMaxAutoLatencies, "without --latency, the latency of at most this many entry/return pairs found in the capture (0: none)")
	pointers := fs.Bool("pointers", false, "draw histograms and heat maps of address fields too")
	var o report.Options
	words := func(name, want string, n []int, fn func([]string)) {
		fs.Func(name, fmt.Sprintf("add a %s analysis: %q (repeatable)", name, want), func(s string) error {
			w := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
			for _, k := range n {
				if len(w) == k {
					fn(w)
					return nil
				}
			}
			return fmt.Errorf("%q: want %s", s, want)
		})
	}
	words("latency", "ENTRY_PROBE [RETURN_PROBE]", []int{1, 2}, func(w []string) {
		ls := report.LatencySpec{Entry: w[0]}
		if len(w) == 2 {
			ls.Return = w[1]
		}
		o.Latencies = append(o.Latencies, ls)
	})
	words("requests", "ITEM_PROBE ITEM_FIELD END_PROBE END_FIELD", []int{4}, func(w []string) {
		o.Requests = append(o.Requests, report.RequestsSpec{ItemProbe: w[0], ItemField: w[1], EndProbe: w[2], EndField: w[3]})
	})
	words("compare", "PROBE FIELD [FILE2] PROBE2 FIELD2", []int{4, 5}, func(w []string) {
		cs := report.CompareSpec{ProbeA: w[0], FieldA: w[1], ProbeB: w[len(w)-2], FieldB: w[len(w)-1]}
		if len(w) == 5 {
			cs.FileB = w[2]
		}
		o.Compares = append(o.Compares, cs)
	})
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpOr(stderr, "report", err)
	}
	if len(pos) != 1 {
		return fail(stderr, "report", usage.Errorf("want FILE, got %d arguments", len(pos)))
	}
	if o.Rows, err = rowFilter(); err != nil {
		return fail(stderr, "report", err)
	}
	if *heatmaps < 0 || *cols <= 0 || *pairs < 0 {
		return fail(stderr, "report", usage.Errorf("--heatmaps %d, --pairs %d, --cols %d: --heatmaps and --pairs must be 0 or more, --cols more than 0", *heatmaps, *pairs, *cols))
	}
	o.MaxAutoLatencies, o.Pointers = *pairs, *pointers
	if *pairs == 0 {
		o.MaxAutoLatencies = -1
	}
	o.Title, o.MaxHeatmaps, o.Cols, o.Version = *title, *heatmaps, *cols, Version
	if o.MaxHeatmaps == 0 {
		o.MaxHeatmaps = -1
	}
	inputs := pos[:1]
	for _, cs := range o.Compares {
		if cs.FileB != "" {
			inputs = append(inputs, cs.FileB)
		}
	}
	if err := htmlToTerminal(out.toStdout(), stdoutIsTerminal()); err != nil {
		return fail(stderr, "report", err)
	}
	if err := out.check(inputs...); err != nil {
		return fail(stderr, "report", err)
	}
	err = out.write(stdout, inputs, func(w io.Writer) error {
		return withCapture(pos[0], stderr, func(c *replay.Capture) (*replay.Pass, error) {
			for i := range o.Latencies {
				if ls := &o.Latencies[i]; ls.Return == "" {
					var err error
					if ls.Entry, ls.Return, err = returnPair(c.Meta().Probes, ls.Entry); err != nil {
						return nil, fmt.Errorf("--latency: %w", err)
					}
				}
			}
			// A question asked twice is answered once.
			o.Latencies, o.Requests, o.Compares = distinct(o.Latencies), distinct(o.Requests), distinct(o.Compares)
			return report.Write(c, w, o)
		})
	})
	if err != nil {
		return fail(stderr, "report", err)
	}
	return exitOK
}

// distinct returns list without its repeated elements, in order.
func distinct[T comparable](list []T) []T {
	var out []T
	for _, v := range list {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// stdoutIsTerminal reports whether the process's standard output is a
// terminal. Verbs write to standard output through a wrapper, so it asks
// about os.Stdout itself; tests, which give the verbs buffers, replace it.
var stdoutIsTerminal = func() bool { return isTerminal(os.Stdout) }

// htmlToTerminal refuses to write a page to standard output (toStdout)
// when that is a terminal: HTML is for a browser, not for the screen.
func htmlToTerminal(toStdout, terminal bool) error {
	if toStdout && terminal {
		return usage.Errorf("will not write HTML to a terminal: give -o report.html, or redirect the output to a file")
	}
	return nil
}
