package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/replay"
)

// newFlags makes a FlagSet whose --help prints the verb's synopsis, text
// and flags.
func newFlags(name, synopsis, help string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// flag calls Usage on every parse error; only --help should print it.
	fs.Usage = func() {}
	helpsMu.Lock()
	helps[fs] = func() {
		fmt.Fprintf(stdout, "Usage: bpftape %s %s\n\n%s", name, synopsis, strings.TrimSpace(help)+"\n")
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintf(stdout, "\nFlags:\n")
			printFlags(stdout, fs)
		}
	}
	helpsMu.Unlock()
	return fs
}

// printFlags lists fs's flags as they are typed: --name for long ones, -x
// for one letter (Go's PrintDefaults writes -name for both).
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		arg, usage := flag.UnquoteUsage(f)
		if arg != "" {
			arg = " " + arg
		}
		fmt.Fprintf(w, "  %s%s%s\n    \t%s", dash, f.Name, arg, strings.ReplaceAll(usage, "\n", "\n    \t"))
		if d := f.DefValue; d != "" && d != "0" && d != "0s" && d != "false" {
			fmt.Fprintf(w, " (default %s)", d)
		}
		fmt.Fprintln(w)
	})
}

// helps holds each FlagSet's --help text printer.
// parseArgs forgets it: record --print runs verbs every interval, from
// the goroutine that prints them.
var (
	helps   = map[*flag.FlagSet]func(){}
	helpsMu sync.Mutex
)

// parseArgs parses flags that may come before, between or after positional
// arguments, as users of perf and bpftrace expect; "--" ends flags.
// It returns flag.ErrHelp for -h/--help, already printed.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	helpsMu.Lock()
	help := helps[fs]
	delete(helps, fs)
	helpsMu.Unlock()
	var pos []string
	args = splitShort(fs, args)
	for {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				help()
				return nil, err
			}
			msg := err.Error()
			if v, ok := strings.CutPrefix(msg, "invalid value "); ok {
				msg = invalidValue(fs, v)
			}
			if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
				msg = "unknown flag --" + name
				if len(name) == 1 {
					msg = "unknown flag -" + name
				}
			}
			return nil, usage.Errorf("%s (see 'bpftape %s --help')", msg, fs.Name())
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// splitShort splits a one-letter flag run together with a number, as
// getopt takes it (head -n1, perf -F99), into the flag and the number,
// where no flag has the whole name: -n1 is -n 1. Anything else stays as
// it is (-offcpu is an unknown flag, not -o ffcpu), as do the value of a
// flag that takes one and the arguments after "--".
func splitShort(fs *flag.FlagSet, args []string) []string {
	var out []string
	takesValue := func(name string) bool {
		f := fs.Lookup(name)
		if f == nil {
			return false
		}
		b, ok := f.Value.(interface{ IsBoolFlag() bool })
		return !ok || !b.IsBoolFlag()
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if name, ok := strings.CutPrefix(strings.TrimPrefix(a, "-"), "-"); ok || strings.HasPrefix(a, "-") {
			if !ok {
				name = a[1:]
			}
			if !strings.Contains(name, "=") && takesValue(name) && i+1 < len(args) {
				out = append(out, a, args[i+1]) // a flag and its value
				i++
				continue
			}
		}
		if len(a) > 2 && a[0] == '-' && a[2] >= '0' && a[2] <= '9' && fs.Lookup(a[1:]) == nil && takesValue(a[1:2]) {
			out = append(out, a[:2], a[2:])
			continue
		}
		out = append(out, a)
	}
	return out
}

// invalidValue rewords flag's `invalid value "1" for flag -from: parse
// error` (given from `"1" for...`) as the flag is typed, --from, and says
// what a duration looks like.
func invalidValue(fs *flag.FlagSet, v string) string {
	val, rest, ok := strings.Cut(v, " for flag -")
	if !ok {
		return "invalid value " + v
	}
	name, why, _ := strings.Cut(rest, ": ")
	dash := "--"
	if len(name) == 1 {
		dash = "-"
	}
	if f := fs.Lookup(name); f != nil && why == "parse error" {
		if g, ok := f.Value.(flag.Getter); ok {
			if _, ok := g.Get().(time.Duration); ok {
				why = notDuration
			}
		}
	}
	if uq, err := strconv.Unquote(val); err == nil && !strings.ContainsAny(uq, "'\n") {
		// As typed: Go's quoting escapes the quotes, and the escaping of
		// what is printed would double the backslashes.
		val = "'" + uq + "'"
	}
	return fmt.Sprintf("%s%s %s: %s", dash, name, val, why)
}

// notDuration says what a duration flag takes.
const notDuration = "not a duration: give a number and a unit, such as 1.5s, 200ms or 2m, or a number of seconds"

// durationFlag registers a duration flag that also takes a bare number of
// seconds, as record -d does (--from 0.1 is --from 100ms).
func durationFlag(fs *flag.FlagSet, name, usage string) *time.Duration {
	d := new(time.Duration)
	fs.Var(secondsValue{d}, name, usage)
	return d
}

// secondsValue is the flag.Value of durationFlag.
type secondsValue struct{ d *time.Duration }

func (v secondsValue) String() string {
	if v.d == nil {
		return "0s"
	}
	return v.d.String()
}

func (v secondsValue) Set(s string) error {
	if secs, err := strconv.ParseFloat(s, 64); err == nil && plainNumber(s) && math.Abs(secs) < math.MaxInt64/1e9 {
		*v.d = time.Duration(math.Round(secs * 1e9)) // 1.001 is 1.001s, not 1.000999999s
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("parse error")
	}
	*v.d = d
	return nil
}

// plainNumber reports whether s is a decimal number as a user types
// seconds (-1, 2.5): no exponent, hex or underscores, which ParseFloat
// also takes.
func plainNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return s != "" && strings.Trim(s, "0123456789.") == "" && strings.Count(s, ".") <= 1
}

// Get makes the value a flag.Getter of a time.Duration, as invalidValue
// recognizes a duration flag.
func (v secondsValue) Get() any { return *v.d }

// rowFlags registers the flags of the row filter every analysis verb
// takes: --pid, --tid, --comm, --from and --to.
func rowFlags(fs *flag.FlagSet) func() (replay.RowFilter, error) {
	to := durationFlag(fs, "to", "only events less than this long after the capture start")
	return idRowFlags(fs, "events", func() time.Duration { return *to })
}

// idRowFlags registers --pid, --tid, --comm and --from (help naming the
// selected rows what) and returns the parser of the row filter, whose end
// comes from to: export's --to also explains that the format is --format.
func idRowFlags(fs *flag.FlagSet, what string, to func() time.Duration) func() (replay.RowFilter, error) {
	most := fmt.Sprintf(", at most %d)", maxListValues)
	pids := fs.String("pid", "", "only "+what+" of these processes (comma-separated PIDs"+most)
	tids := fs.String("tid", "", "only "+what+" of these threads (comma-separated TIDs"+most)
	comms := fs.String("comm", "", "only "+what+" of these commands (comma-separated names"+most)
	from := durationFlag(fs, "from", "only "+what+" at least this long after the capture start (e.g. 1.5s, or 1.5)")
	return func() (replay.RowFilter, error) {
		var f replay.RowFilter
		var err error
		if f.PIDs, err = parseIDs(*pids); err != nil {
			return f, usage.Errorf("--pid: %w", err)
		}
		if f.TIDs, err = parseIDs(*tids); err != nil {
			return f, usage.Errorf("--tid: %w", err)
		}
		if *comms != "" {
			f.Comms = strings.Split(*comms, ",")
			if len(f.Comms) > maxListValues {
				return f, usage.Errorf("--comm: %d values, at most %d", len(f.Comms), maxListValues)
			}
		}
		f.From, f.To = *from, to()
		if f.From < 0 {
			return f, usage.Errorf("--from %v is before the capture start: --from and --to count from it (e.g. --from 1.5s)", f.From)
		}
		if f.To < 0 || f.To == 0 && flagSet(fs, "to") {
			return f, usage.Errorf("--to %v leaves no time after the capture start: --from and --to count from it (e.g. --to 3s)", f.To)
		}
		if f.To != 0 && f.To <= f.From {
			return f, usage.Errorf("--to %v is not after --from %v", f.To, f.From)
		}
		return f, nil
	}
}

// maxListValues bounds the --pid, --tid and --comm lists of the analysis
// verbs, as probespec.MaxAny bounds the lists of a probe filter: every
// event is looked up in them.
const maxListValues = probespec.MaxAny

func parseIDs(s string) ([]uint32, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxListValues {
		return nil, fmt.Errorf("%d values, at most %d", len(parts), maxListValues)
	}
	var ids []uint32
	for _, p := range parts {
		v, err := strconv.ParseUint(strings.TrimSpace(p), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%q is not a process or thread id", p)
		}
		ids = append(ids, uint32(v))
	}
	return ids, nil
}

// flagSet reports whether flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// parseNoArgs parses the flags of a verb that takes no arguments. ok false
// means the verb is done, with exit status code: it printed its help, or
// refused a bad flag or an argument.
func parseNoArgs(fs *flag.FlagSet, verb string, args []string, stderr io.Writer) (code int, ok bool) {
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK, false
	}
	if err != nil {
		return fail(stderr, verb, err), false
	}
	if len(pos) > 0 {
		return fail(stderr, verb, usage.Errorf("%s takes no arguments, got %q", verb, pos[0])), false
	}
	return exitOK, true
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}
