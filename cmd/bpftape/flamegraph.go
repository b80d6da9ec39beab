package main

import (
	"fmt"
	"io"

	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/flamegraph"
)

func init() {
	register("flamegraph", "interactive flame graph SVG of a probe's stacks, off-CPU time, or the difference of two profiles", runFlamegraph)
}

func runFlamegraph(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("flamegraph", "[flags] FILE [PROBE] -o OUT.svg", `
Draws the stacks of PROBE's events as an interactive flame graph, as
Brendan Gregg's flamegraph.pl draws folded stacks: each box a function,
its width the share of events (or, with --offcpu, of time off CPU) whose
stack passes through it, callers below callees. Open the SVG in a
browser: click a box to zoom into it, Reset Zoom to go back, Search (or
Ctrl-F) to highlight the functions matching a regular expression and see
their share. Frames are symbolized from the capture alone, as by
'bpftape stacks', which takes the same flags and writes the folded stacks
flamegraph.pl reads.

--base FILE draws a differential flame graph (difffolded.pl, then
flamegraph.pl): widths from FILE, red where a stack grew since the base,
blue where it shrank.

Examples:
  bpftape record -o prof.arrow -d 10s profile:hz:49
  bpftape flamegraph prof.arrow -o prof.svg
  bpftape flamegraph prof.arrow --user --pid 1234 --title "app CPU" -o app.svg
  bpftape record -o sw.arrow -d 5s 't:sched:sched_switch(prev_pid,next_pid,kstack,ustack)'
  bpftape flamegraph --offcpu --comm app sw.arrow -o offcpu.svg
  bpftape flamegraph after.arrow --base before.arrow --normalize -o diff.svg`, stdout)
	sf := addStackFlags(fs)
	out := outputFlags(fs, "write the SVG to this file (default: standard output)", true)
	title := fs.String("title", "", "title of the graph (default: Flame Graph, Off-CPU Time Flame Graph or Differential Flame Graph)")
	width := fs.Int("width", 1200, "width of the image in px")
	inverted := fs.Bool("inverted", false, "draw an icicle graph: roots at the top")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpOr(stderr, "flamegraph", err)
	}
	if len(pos) < 1 || len(pos) > 2 {
		return fail(stderr, "flamegraph", usage.Errorf("want FILE [PROBE]"))
	}
	if *width < flamegraph.MinImageWidth {
		return fail(stderr, "flamegraph", usage.Errorf("--width %d: at least %d", *width, flamegraph.MinImageWidth))
	}
	o, err := sf.options(append(pos, "")[1])
	if err != nil {
		return fail(stderr, "flamegraph", err)
	}
	inputs := pos[:1]
	if *sf.base != "" {
		inputs = append(inputs, *sf.base)
	}
	if err := out.check(inputs...); err != nil {
		return fail(stderr, "flamegraph", err)
	}
	cur, base, err := sf.counts(pos[0], o, stderr)
	if err != nil {
		return fail(stderr, "flamegraph", err)
	}
	fo := flamegraph.Options{Title: *title, Width: *width, Inverted: *inverted, Unit: flamegraph.UnitSamples,
		Subtitle: fmt.Sprintf("%s, probe %s", pos[0], cur.Probe)}
	if *sf.offcpu {
		fo.Unit = flamegraph.UnitNs
		if fo.Title == "" {
			fo.Title = "Off-CPU Time Flame Graph"
		}
	}
	var stacks []flamegraph.Stack
	if base != nil {
		fo.Diff = true
		if fo.Title == "" {
			fo.Title = "Differential Flame Graph"
		}
		fo.Subtitle += ", against " + *sf.base
		for _, d := range replay.DiffStacks(base, cur, *sf.normalize) {
			stacks = append(stacks, flamegraph.Stack{Frames: d.Frames, Value: d.Value, Base: d.Base})
		}
	} else {
		for _, s := range cur.Stacks {
			stacks = append(stacks, flamegraph.Stack{Frames: s.Frames, Value: s.Value})
		}
	}
	err = out.write(stdout, inputs, func(w io.Writer) error { return flamegraph.Render(w, stacks, fo) })
	if err != nil {
		return fail(stderr, "flamegraph", err)
	}
	return exitOK
}
