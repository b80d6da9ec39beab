package main

import (
	"flag"
	"io"
	"time"

	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay"
)

func init() {
	register("stacks", "events (or off-CPU time) per stack, folded for flame graphs or as BCC's stackcount prints them", runStacks)
}

// stackFlags are the flags of the verbs that read stacks (stacks,
// flamegraph): which events and stacks, and a base profile to compare
// with.
type stackFlags struct {
	rowFilter        func() (replay.RowFilter, error)
	user, kernel     *bool
	both, offcpu     *bool
	by               *string
	offsets          *bool
	buildIDs         *bool
	base             *string
	baseFrom, baseTo *time.Duration
	normalize        *bool
}

func addStackFlags(fs *flag.FlagSet) *stackFlags {
	return &stackFlags{
		rowFilter: rowFlags(fs),
		user:      fs.Bool("user", false, "user stacks only"),
		kernel:    fs.Bool("kernel", false, "kernel stacks only"),
		both:      fs.Bool("both", false, "user and kernel stacks joined, kernel frames marked _[k] (the default when the probe recorded both)"),
		offcpu:    fs.Bool("offcpu", false, "sum the time off CPU by stack (a sched_switch probe), as offcputime"),
		by:        fs.String("by", "", "put `KEY` as the root frame: comm, pid, tid or a field of the probe"),
		offsets:   fs.Bool("offsets", false, "write function+0xOFFSET rather than the function alone"),
		buildIDs:  fs.Bool("build-ids", false, "name a frame that did not resolve by its object's build id too: [OBJECT@BUILDID+0xOFFSET], as exports do"),
		base:      fs.String("base", "", "compare with the stacks of `FILE` (may be FILE itself, with --base-from/--base-to)"),
		baseFrom:  durationFlag(fs, "base-from", "the base's events from this long after its capture start"),
		baseTo:    durationFlag(fs, "base-to", "the base's events until this long after its capture start"),
		normalize: fs.Bool("normalize", false, "scale the base's values to the total of FILE's (difffolded.pl -n)"),
	}
}

// options builds the analysis options; probe is PROBE or "".
func (sf *stackFlags) options(probe string) (replay.StacksOptions, error) {
	f, err := sf.rowFilter()
	if err != nil {
		return replay.StacksOptions{}, err
	}
	o := replay.StacksOptions{Rows: f, By: *sf.by, Offsets: *sf.offsets, BuildIDs: *sf.buildIDs, Probe: probe}
	n := 0
	for _, m := range []struct {
		on   bool
		mode replay.StackMode
	}{{*sf.user, replay.StacksUser}, {*sf.kernel, replay.StacksKernel}, {*sf.both, replay.StacksBoth}} {
		if m.on {
			n++
			o.Mode = m.mode
		}
	}
	if n > 1 {
		return o, usage.Errorf("--user, --kernel and --both exclude each other")
	}
	if *sf.base == "" && (*sf.baseFrom != 0 || *sf.baseTo != 0 || *sf.normalize) {
		return o, usage.Errorf("--base-from, --base-to and --normalize go with --base FILE")
	}
	if *sf.baseFrom < 0 || *sf.baseTo < 0 {
		return o, usage.Errorf("--base-from and --base-to count from the base's capture start: give durations after it (e.g. --base-to 3s)")
	}
	if *sf.baseTo != 0 && *sf.baseTo <= *sf.baseFrom {
		return o, usage.Errorf("--base-to %v is not after --base-from %v", *sf.baseTo, *sf.baseFrom)
	}
	return o, nil
}

// counts reads the stacks of path and, with --base, of the base.
func (sf *stackFlags) counts(path string, o replay.StacksOptions, stderr io.Writer) (cur, base *replay.StackCounts, err error) {
	read := func(path string, o replay.StacksOptions) (r *replay.StackCounts, err error) {
		err = withCapture(path, stderr, func(c *replay.Capture) (p *replay.Pass, err error) {
			if *sf.offcpu {
				r, p, err = replay.OffCPU(c, o)
			} else {
				r, p, err = replay.Stacks(c, o)
			}
			if err == nil {
				r.Notes(stderr)
			}
			return p, err
		})
		return r, err
	}
	if cur, err = read(path, o); err != nil || *sf.base == "" {
		return cur, nil, err
	}
	o.Rows.From, o.Rows.To = *sf.baseFrom, *sf.baseTo
	base, err = read(*sf.base, o)
	return cur, base, err
}

func runStacks(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("stacks", "[flags] FILE [PROBE]", `
Counts PROBE's events by stack and prints them folded, one line a stack as
FlameGraph's stackcollapse scripts write them: the frames root first,
separated by ';', then a space and the count ("main;top;mid;leaf 5000").
flamegraph.pl, speedscope and bpftape flamegraph read it. --text prints
BCC stackcount's view instead. Frames are symbolized from the capture
alone: it holds the mappings and symbols the recorder took, so this works
on any machine, after the processes and binaries are gone. A frame that
did not resolve shows as [OBJECT+0xOFFSET] or [0xADDRESS], and a note says
why. PROBE may be left out when one probe recorded stacks.

--offcpu reads a t:sched:sched_switch probe that recorded prev_pid and
next_pid with stacks, and sums each thread's time off CPU, from its
switch-out to its next switch-in, by its stack at the switch-out, as
BCC's offcputime does (nanoseconds; --text prints microseconds). The
switch-ins run in other processes: record it without -p or -c, and pick
the processes here with --pid or --comm.

--base FILE compares with another profile (or FILE itself in another
window: --base-from, --base-to) and prints difffolded.pl's three columns:
the stack, its value in the base, its value in FILE.

Examples:
  bpftape record -o leaf.arrow -c ./app 'u:./app:leaf(ustack)'
  bpftape stacks leaf.arrow                     # main;top;mid;leaf 5000
  bpftape record -o prof.arrow -d 10s profile:hz:49
  bpftape stacks prof.arrow --by comm > prof.folded
  bpftape stacks prof.arrow --user --pid 1234 --text
  bpftape stacks prof.arrow --to 5s --base prof.arrow --base-from 5s
  bpftape record -o sw.arrow -d 5s 't:sched:sched_switch(prev_pid,next_pid,kstack,ustack)'
  bpftape stacks --offcpu --comm app sw.arrow > offcpu.folded`, stdout)
	sf := addStackFlags(fs)
	text := fs.Bool("text", false, "print stackcount's view: each stack innermost frame first, then its count")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpOr(stderr, "stacks", err)
	}
	if len(pos) < 1 || len(pos) > 2 {
		return fail(stderr, "stacks", usage.Errorf("want FILE [PROBE]"))
	}
	o, err := sf.options(append(pos, "")[1])
	if err != nil {
		return fail(stderr, "stacks", err)
	}
	if *text && *sf.base != "" {
		return fail(stderr, "stacks", usage.Errorf("--text and --base exclude each other: a comparison prints folded stacks"))
	}
	cur, base, err := sf.counts(pos[0], o, stderr)
	switch {
	case err != nil:
	case base != nil:
		err = replay.WriteFoldedDiff(stdout, replay.DiffStacks(base, cur, *sf.normalize))
	case *text:
		err = cur.WriteText(stdout)
	default:
		err = cur.WriteFolded(stdout)
	}
	if err != nil {
		return fail(stderr, "stacks", err)
	}
	return exitOK
}
