//go:build linux && (amd64 || arm64)

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/humanfmt"
	"github.com/bpftape/bpftape/internal/shellwords"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/record"
	"github.com/bpftape/bpftape/record/resolve"
)

func init() {
	// A -c command waits in a re-executed bpftape until its probes are
	// attached: that process must become the command before main runs.
	record.MaybeRunGate()
	register("record", recordSummary, runRecord)
}

// DefaultOutput is the capture file record writes without -o.
const DefaultOutput = "bpftape.arrow"

const recordSynopsis = `[-o FILE [--force] [--owner USER[:GROUP]]] [-p PID [--follow] | -c 'CMD ARGS'] [-d DURATION] [--max-size SIZE [--rotate N]] [--ringbuf-size BYTES]
                      [--max-rate [PROBE=]N/s]... [--compress zstd|lz4|none] [--ready-file PATH] [--debug-dir DIR] [--print 'VERB ARGS'... [--interval D]]
                      [--flight DURATION [--flight-size SIZE] [--trigger PROBE | --trigger-latency 'START END > D'] [--after D] [--trigger-holdoff D] [--max-snapshots N]] PROBE...`

const recordHelp = `
Records every event of the PROBEs into FILE (default ` + DefaultOutput + `), an
Arrow capture that the other verbs replay offline. Without -p or -c it
records system-wide. -c records the command and every process it starts
(fork, clone of a new process, exec), so that -c make or -c 'sh -c ...'
works; -p records one process, and with --follow the processes it started
and starts too. It stops at the end of -d, when the -c command or the -p
process exits, or on Ctrl-C (SIGINT) or SIGTERM, and finishes the file
cleanly. A -c command still running then gets SIGTERM, and SIGKILL 2s
later; a second Ctrl-C, a second or more after the first, kills it with
SIGKILL at once and aborts, leaving a file that readers recover up to its
last complete batch (signals within a second of the first are one stop, as
'timeout N' sends its signal to bpftape and then to its process group). On a terminal a
status line shows progress; a summary follows on stderr.
Following processes places uprobes in every process that maps the binary
and drops the other processes' events in the program: a uprobe in a shared
library (libc) then costs every process on the host that calls it a trap.
-c --follow=false records the command's own process only.

Every probe records over the same window: from when the last probe was
attached to when the first is detached (bpftape info shows it), so the
counts of probes on one loop are equal and entries pair with returns.

--max-rate N/s bounds what recording costs: each probe records at most N
events a second (on average: a tenth of a second's worth may come at once),
and the BPF program rejects the others before it sends anything, counting
them as rate-limited (not lost). --max-rate PROBE=N/s bounds one probe,
named as info names it or as typed (for a pattern, each of its probes), over
a --max-rate for all; it is repeatable (N may have a k or M suffix). A
probe's filter runs first: what it rejects takes nothing from the rate. A
rate-limited probe's events are a subset, which info, the summary and every
analysis say, with how many were rejected.
  bpftape record -o srv.arrow -d 1h --max-rate 1000/s --max-rate req=100/s \
      'req=u:./server:handle(arg1)' 't:syscalls:sys_exit_write(ret)'

FILE is created with mode 0600, at its final name so that a recorder
killed at any moment leaves a capture the other verbs read up to its last
complete batch. An existing FILE is replaced only with --force: the new
capture is then written to .FILE.*.tmp beside it and renamed over FILE when
the recording ends (a recorder killed before leaves FILE as it was and the
new capture in the .tmp file). With --rotate, --force replaces the parts of
an earlier recording to FILE as this one reaches their numbers, and removes
those it did not reach when it ends. A device or FIFO is written in place; a
symbolic link is refused. A recording that fails to start removes only a
FILE it created. --owner USER gives FILE (and every rotated part) to USER
as it is created, still mode 0600, so that USER analyses it without root;
--owner USER:GROUP (or :GROUP) also gives it to GROUP with mode 0640.

PROBE := [NAME=]TYPE:TARGET[(FIELD,...)][/FILTER/]
  uprobe:BINARY:SYMBOL              u:   function entry
  uretprobe:BINARY:SYMBOL           ur:  function return
  usdt:BINARY:[PROVIDER:]PROBE      U:   USDT (sys/sdt.h) probe; PROVIDER may be
                                         left out when the name is unambiguous
  tracepoint:CATEGORY:EVENT         t:   kernel tracepoint
  kprobe:FUNCTION[+OFFSET]          k:   kernel function entry (argN)
  kretprobe:FUNCTION                kr:  kernel function return (retval)
  fentry:FUNCTION                   f:   kernel function entry, parameters by
                                         their BTF names and types (5.17+)
  fexit:FUNCTION                    fr:  kernel function return, parameters and
                                         retval (5.17+)
A kernel FUNCTION may be a pattern (vfs_*, tcp_send?sg): one probe per
traceable function it matches, named after it (at most 512); where the
kernel has kprobe_multi links, a pattern's kprobes share one. Module
functions work the same. 'bpftape list k:vfs_*' lists the matches.
Tracepoints and kernel functions fire in every process: with -p or -c the
programs keep the traced processes' events, and the recorder's own are
never kept.
BINARY is a path, a program on PATH, or a library name (libc, libfoo.so.1:
the -p process's mappings, $LD_LIBRARY_PATH, the ld.so cache, /lib...).
A uprobe's SYMBOL may also be SYMBOL+OFFSET, a byte offset into the function
(main+4), or an ADDRESS (0x1139): a link-time virtual address as nm, objdump
and readelf print it (bpftrace's convention). Either must start an
instruction; a uretprobe goes only on a function's entry. Symbols come from the binary's .symtab and .dynsym, and for a
stripped binary from its separate debug file, found by build id
(DIR/.build-id/xx/yyyy.debug) or .gnu_debuglink (next to the binary, in its
.debug/, in DIR/<its directory>) and checked to be of the same build; DIR is
each --debug-dir, then each of $BPFTAPE_DEBUG_DIRS (colon-separated), then
/usr/lib/debug. 'bpftape list BINARY' prints a binary's probes and functions.

FIELD := argN[:TYPE] | retval[:TYPE] | str(argN) | str(retval)
       | NAME[:TYPE] | str(NAME) | ustack[(N)] | kstack[(N)]
TYPE  := s8 | u8 | s16 | u16 | s32 | u32 | s64 | u64
  argN     argument N counted from 0 as bpftrace does: a uprobe's arg2 is
           the third integer argument register (PT_REGS_PARM3), N = 0..5
           on x86-64 (rdi..r9), 0..7 on arm64 (x0..x7);
           a USDT probe's argN is the Nth argument of its note
  retval   a uretprobe's, kretprobe's or fexit's return value
  NAME     a tracepoint field as its tracefs format names it, or a
           function's parameter as its debug info names it: a uprobe's by
           the binary's DWARF, a fentry's or fexit's by the kernel's BTF
  str(X)   the C string X points to (at most 63 bytes), kept under X's
           name; user memory for uprobes and USDT, user or kernel memory
           (by the address) for kernel functions
  :TYPE    cuts the value to that integer type, as a C cast would
  ustack, kstack  the user and kernel stack of each event, as bpftrace's
           ustack and kstack (at most N frames, default and most 127),
           walked by frame pointers; they do not count against the 12
           fields. The capture keeps the processes' mappings and the
           symbols the frames fall in: 'bpftape stacks' and 'bpftape
           flamegraph' symbolize from it alone, anywhere, later.
profile:hz:N samples every CPU N times a second (with -p or -c: only those
processes), recording kstack and ustack, as BCC's profile -F N does.
Without a list: a uprobe its function's parameters by their DWARF names and
types when the binary or its debug file has them, else (and a kprobe)
arg0..arg5 as u64; uretprobe and kretprobe retval as s64; fentry every
parameter with its BTF type (fexit also retval); usdt every note argument
with its size and sign; tracepoint every field (integers with their size and
sign, pointers as u64, char arrays and __data_loc as strings). Where the
fields are a function's parameters, argN also names the N-th of them, in a
filter as in the analyses. At most 12 fields per probe, 4 of them strings.

FILTER := FIELD OP CONST, joined with && || and ! (OP: == != < <= > >=);
also pid, tid, cpu and comm == "name". The BPF program drops the events it
rejects before they take ring space, as bpftrace's /predicate/ does; info
and every analysis say the capture is a subset.
  bpftape record -c ./app 'big=u:./app:rx(size)/size >= 4096 && pid != 1/'

NAME defaults to the symbol (uprobe, kprobe, fentry), the symbol + ":return"
(uretprobe, kretprobe, fexit), the USDT probe or the tracepoint event; a repeated default gets
"#2", "#3"...

Examples:
  bpftape record -c './virtnet 100000' \
      'u:./virtnet:virtio_net_receive_rcu(arg2)' \
      'ur:./virtnet:virtio_net_flush_tx(retval:s32)' \
      'U:./virtnet:qemu:virtio-net-rx-end' 'U:./virtnet:usdt2(arg0,str(arg1),arg2)'
  bpftape record -p $(pidof qemu-system-x86_64) -d 30s -o rx.arrow \
      'rx=u:qemu-system-x86_64:virtio_net_receive_rcu(arg2)'
  bpftape record -c 'dd if=/dev/zero of=/dev/null count=1000' 't:syscalls:sys_exit_write(ret)'
  bpftape record -o vfs.arrow -d 10s 'f:vfs_read(count)' 'fr:vfs_read(retval)'   # funclatency -u vfs_read
  bpftape record -o open.arrow -c 'ls /etc' 'f:do_sys_openat2(str(filename))'
  bpftape record -o funcs.arrow -d 10s 'k:vfs_*'     # then: bpftape count funcs.arrow
  bpftape record -o leaf.arrow -c ./app 'u:./app:leaf(arg0,ustack)'   # then: bpftape stacks leaf.arrow
  bpftape record -o prof.arrow -d 10s profile:hz:49                  # then: bpftape flamegraph prof.arrow -o prof.svg
  bpftape record -o bio.arrow -d 10s 'k:submit_bio(kstack)'          # stackcount submit_bio
  bpftape record -o rd.arrow -d 10s --interval 1s --print 'hist rd retval --label bytes' \
      --print 'count --by comm' 'rd=fr:vfs_read(retval)'            # a histogram a second, live

While it records, --print 'VERB ARGS' prints every --interval (default 1s)
what the analysis verb VERB prints of that interval's events, as bpftrace's
interval:s:1 { print(@); clear(@); } does. VERB is hist, count, latency,
requests, events or compare, with its arguments and flags as for a capture
but without the FILE; --print may be repeated. Each interval comes under a
header with its wall-clock end and the --from and --to that select it from
the capture: it is what 'bpftape VERB FILE ARGS --from A --to B' prints of
the finished capture (the same code reads it, and the capture is written
as without --print). Intervals count from the capture's start, by event
time; the last, partial one is printed when the recording stops. A --print
that names a probe or field the recording lacks is refused before anything
is attached. With --print on a terminal there is no status line.
  bpftape record -c ./server --print 'latency req req_ret -u' --print 'hist req arg1 --by comm' \
      'req=u:./server:handle(arg1)' 'req_ret=ur:./server:handle'

--flight DURATION makes the recorder a flight recorder, to leave running:
it keeps only the last DURATION of compressed batches in memory (at most
--flight-size, default 256M; past it the oldest go first and the window is
shorter, which the summary says) and writes no file until asked. Each
snapshot is an ordinary capture of that window, with the stack table and
the metadata it needs, named FILE-0001.arrow, FILE-0002.arrow... (FILE
without its extension). A snapshot is taken:
  on SIGUSR1, or 'bpftape snapshot PID' or 'bpftape snapshot --ready-file PATH';
  --trigger PROBE: at the first event of PROBE (give it a filter, e.g.
      'slow=u:./app:handle(arg0)/arg0 > 1000/'), and with --trigger-holdoff D
      at each one at least D after the last that took a snapshot;
  --trigger-latency 'START END > D': when an event of probe END follows its
      thread's event of probe START by more than D (10ms, 250us), as
      'bpftape latency START END' pairs them;
each with --after D more of the events that follow (the snapshot is written
D after the trigger). Without a trigger, one more snapshot is written when
the recording stops if none was. --max-snapshots N stops the recording after
N. 'bpftape info' shows a snapshot's trigger, its time and its window.
  bpftape record --flight 30s -o srv.arrow -p $(pidof server) 'req=u:server:handle(arg0)' 'req_ret=ur:server:handle'
      # kill -USR1 <recorder pid> (or bpftape snapshot) writes srv-0001.arrow: the last 30 s
  bpftape record --flight 5s --trigger-latency 'req req_ret > 50ms' --after 1s --trigger-holdoff 1m -o slow.arrow \
      -p $(pidof server) 'req=u:server:handle(arg0)' 'req_ret=ur:server:handle'

Kernels before 5.15 have no BPF attach cookies: bpftape then loads one
program per attachment, holding its probe's spec as constants (a few ms
each to load). BPFTAPE_NO_COOKIES=1 does so on any kernel, for tests and
comparisons. On kernels with kprobe_multi links (5.18, CONFIG_FPROBE), the
kprobes of a pattern (k:vfs_*) share one link; BPFTAPE_NO_KPROBE_MULTI=1
attaches one per function instead. BPFTAPE_CPUPROFILE=FILE writes a Go
CPU profile of the recorder to FILE, a new file (go tool pprof reads it).

Exit status (docs/exit-status.md has the details):
  0    the recording ended as asked, with a complete capture: -d elapsed,
       --max-size was reached, Ctrl-C (SIGINT) or SIGTERM, the -p process
       exited, or a -c command still running was stopped by any of these
  N    the -c command exited by itself with status N (128+S if signal S
       killed it), as a shell reports it
  126  the -c command is not executable; 127: it was not found
  1    the recording failed (probes, privileges, the output, a write error)
  2    a usage error
  130  a second Ctrl-C (143: SIGTERM), a second or more after the first,
       aborted: the capture has no footer
`

func runRecord(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("record", recordSynopsis, recordHelp, stdout)
	output := fs.String("o", DefaultOutput, "capture `FILE` to write (created with mode 0600; an existing one needs --force)")
	force := fs.Bool("force", false, "replace the -o file if it exists (see above)")
	ownerFlag := fs.String("owner", "", "give the capture file to `USER[:GROUP]` (names or ids) as it is created: mode 0600, 0640 with a GROUP")
	maxSize := fs.String("max-size", "", "stop before the capture passes `SIZE` bytes (K, M, G suffixes), or with --rotate go on in a new file; the size is estimated from the batches written, so a file may end a little under it, or over it by a few KiB (or by its first batch, which with stacks carries the stack table)")
	rotate := fs.Int("rotate", 0, "with --max-size, write FILE as `N` or fewer files, c.000001.arrow, c.000002.arrow..., deleting the oldest")
	pid := fs.Int("p", 0, "record only process `PID` (tracepoints and kprobes filtered by it, uprobes attached to it); stop when it exits")
	follow := fs.Bool("follow", false, "with -p, record the processes PID started and starts as well; -c does unless --follow=false")
	command := fs.String("c", "", "run `'CMD ARGS'` with the probes attached from its first instruction, record until it exits, exit with its status (see Exit status)")
	duration := fs.String("d", "", "stop after `DURATION` (10s, 1m30s, or seconds)")
	ringSize := fs.String("ringbuf-size", "", "size of each CPU's ring buffer in `BYTES` (a power of two, at least a page; K, M, G suffixes;\n"+
		"default: 8M split over the CPUs, 256K to 4M each)")
	compress := fs.String("compress", "zstd", "batch compression: zstd, lz4 or none")
	ready := fs.String("ready-file", "", "write `PATH` once every probe is attached (for scripts and tests)")
	var pidList, commList stringList
	fs.Var(&pidList, "pid", fmt.Sprintf("record only events of processes `PID[,PID...]`, filtered in the kernel; unlike -p, attaches nothing differently (repeatable, at most %d PIDs)", resolve.MaxProcessValues))
	fs.Var(&commList, "comm", fmt.Sprintf("record only events of threads named `NAME[,NAME...]`, filtered in the kernel (repeatable, at most %d names)", resolve.MaxProcessValues))
	var maxRates stringList
	fs.Var(&maxRates, "max-rate", "record at most `[PROBE=]N/s` events a second of every probe, or of PROBE, rejecting the others in the kernel (repeatable; see above)")
	var debugDirs stringList
	fs.Var(&debugDirs, "debug-dir", "look for separate debug files of stripped binaries in `DIR` (repeatable; before $BPFTAPE_DEBUG_DIRS and /usr/lib/debug)")
	var prints stringList
	fs.Var(&prints, "print", "every --interval, print what `'VERB ARGS'` prints of the interval's events, e.g. 'hist PROBE FIELD' (repeatable; see above)")
	interval := fs.String("interval", "", "with --print, the `DURATION` of an interval (default 1s)")
	flightFor := fs.String("flight", "", "flight recorder: keep only the last `DURATION` in memory and write it as FILE-NNNN.arrow when asked (see above)")
	flightSize := fs.String("flight-size", "", "with --flight, keep at most `SIZE` bytes of compressed batches (K, M, G suffixes; default 256M)")
	trigger := fs.String("trigger", "", "with --flight, take a snapshot at the first event of `PROBE` (see --trigger-holdoff)")
	triggerLatency := fs.String("trigger-latency", "", "with --flight, take a snapshot when a thread's `'START END > DURATION'` pair takes longer")
	holdoff := fs.String("trigger-holdoff", "", "with a trigger, take a snapshot again at a trigger at least `DURATION` after the last one (default: only the first)")
	after := fs.String("after", "", "with a trigger, include `DURATION` of the events after it")
	maxSnapshots := fs.Int("max-snapshots", 0, "with --flight, stop the recording after `N` snapshots")
	probes, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return fail(stderr, "record", err)
	}
	if *output == "-" {
		// Not a file named "-", which a perf user would not expect.
		return fail(stderr, "record", usage.Errorf("-o -: record writes a capture file, not standard output: give -o FILE (--print shows analyses as it records)"))
	}
	live, err := newLiveFlags(prints, *interval, *output, stdout, stderr)
	if err != nil {
		return fail(stderr, "record", err)
	}

	pids, comms, err := processLists(pidList, commList)
	if err != nil {
		return fail(stderr, "record", err)
	}
	maxRate, probeRates, err := parseMaxRates(maxRates)
	if err != nil {
		return fail(stderr, "record", err)
	}
	opts := record.Options{
		Output:      *output,
		Probes:      probes,
		PID:         *pid,
		PIDs:        pids,
		Comms:       comms,
		Follow:      *follow,
		NoFollow:    flagSet(fs, "follow") && !*follow,
		Compression: format.Compression(*compress),
		ReadyFile:   *ready,
		Force:       *force,
		Rotate:      *rotate,
		MaxRate:     maxRate,
		MaxRates:    probeRates,
		DebugDirs:   debugDirs,
		CommandLine: append([]string{"bpftape", "record"}, args...),
		Version:     Version,
		Log:         stderr,
		// One program per attachment, as on kernels without attach
		// cookies: for tests and for comparing the two.
		NoCookies: os.Getenv("BPFTAPE_NO_COOKIES") == "1",
		// A link per kprobe of a pattern even with kprobe_multi.
		NoKprobeMulti: os.Getenv("BPFTAPE_NO_KPROBE_MULTI") == "1",
	}
	if *ownerFlag != "" {
		if opts.Owner, err = parseOwner(*ownerFlag); err != nil {
			return fail(stderr, "record", usage.Errorf("--owner: %w", err))
		}
	}
	if opts.Duration, err = parseDuration(*duration); err != nil {
		return fail(stderr, "record", usage.Errorf("-d: %w", err))
	}
	if opts.MaxSize, err = parseMaxSize(*maxSize); err != nil {
		return fail(stderr, "record", usage.Errorf("--max-size: %w", err))
	}
	if err := flightFlags(&opts, *flightFor, *flightSize, *trigger, *triggerLatency, *holdoff, *after, *maxSnapshots); err != nil {
		return fail(stderr, "record", err)
	}
	if *ringSize != "" {
		size, err := parseSize(*ringSize)
		if err != nil {
			return fail(stderr, "record", usage.Errorf("--ringbuf-size: %w", err))
		}
		opts.RingSize = size
	}
	// -c "" (an unset variable in -c "$CMD") is an error, not the whole
	// machine recorded until stopped.
	if flagSet(fs, "c") {
		if opts.Command, err = shellwords.Split(*command); err != nil {
			return fail(stderr, "record", usage.Errorf("-c: %w", err))
		}
	}
	if live != nil {
		opts.Live = live
	}
	// With --print on a terminal the intervals are the progress, as in
	// bpftrace, which prints nothing but what its script prints: a status
	// line redrawn 4 times a second on that screen would be cut into the
	// histograms or left among them, and scrolled-back or copied intervals
	// would hold its remains. On stdout piped elsewhere it stays.
	if f, ok := stderr.(*os.File); ok && isTerminal(f) && !(live != nil && isTerminalWriter(stdout)) {
		opts.Status = stderr
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// What a second interrupt leaves without a footer: with --force over an
	// existing capture, the temporary file the new one is written to.
	unfinished := *output
	if opts.Flight > 0 {
		unfinished = "the flight recorder's ring, in memory,"
	} else if st, err := os.Lstat(*output); err == nil && st.Mode().IsRegular() && *force && *rotate == 0 {
		unfinished = fmt.Sprintf("the new capture (in %s, beside %s, which is as it was)",
			filepath.Join(filepath.Dir(*output), "."+filepath.Base(*output)+".*.tmp"), *output)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// SIGUSR1 asks a flight recorder for a snapshot; any other recording
	// says so and goes on (by default it would end the process).
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	snapshot := make(chan struct{}, 1)
	opts.Snapshot = snapshot
	go func() {
		for range usr1 {
			if opts.Flight == 0 {
				fmt.Fprintln(stderr, "bpftape record: SIGUSR1 ignored: this recording is not a flight recorder (--flight)")
				continue
			}
			select {
			case snapshot <- struct{}{}:
			default: // one is already asked for
			}
		}
	}()
	abort, killed := make(chan struct{}), make(chan struct{})
	opts.Abort, opts.Killed = abort, killed
	var stopAsked atomic.Bool // a SIGINT or SIGTERM ended the recording
	go func() {
		var first time.Time
		for sig := range sigs {
			if first.IsZero() {
				first = time.Now()
				stopAsked.Store(true)
				cancel()
				continue
			}
			if time.Since(first) < repeatGrace {
				continue // one stop sent twice (timeout N: to bpftape, then its group)
			}
			// A -c command that ignores SIGTERM is killed, never orphaned.
			close(abort)
			select {
			case <-killed:
			case <-time.After(2 * time.Second):
			}
			fmt.Fprintf(stderr, "\nbpftape record: %v again: aborting; %s has no footer, readers recover its complete batches ('bpftape repair' writes a standard file)\n", sig, unfinished)
			abortExit(128 + int(sig.(syscall.Signal)))
		}
	}()

	if path := os.Getenv("BPFTAPE_CPUPROFILE"); path != "" {
		stop, err := startCPUProfile(path)
		if err != nil {
			return fail(stderr, "record", err)
		}
		defer stop()
	}
	sum, err := record.Record(ctx, opts)
	signaled := stopAsked.Load()
	if live != nil && sum != nil {
		live.Finish(sum.Window.End) // the last, partial interval, before the summary
	} else if live != nil {
		live.Discard()
	}
	if sum != nil {
		sum.Print(stderr)
		if err != nil {
			err = writeHint(err, *output)
		}
	}
	if err != nil {
		code := fail(stderr, "record", err)
		var notRun *record.CommandError
		if errors.As(err, &notRun) {
			code = exitCannotRun
			if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
				code = exitNotFound
			}
		}
		return code
	}
	code, note := recordStatus(sum, signaled)
	if note != "" {
		fmt.Fprintf(stderr, "[ bpftape record: %s ]\n", note)
	}
	return code
}

// recordStatus is the exit status of a recording that wrote its capture,
// and what the summary says of a -c command: the command's own status
// when it exited by itself, 0 when the recording ended as asked (-d,
// --max-size, SIGINT or SIGTERM; a command still running was then
// stopped). signaled says that the recorder got SIGINT or SIGTERM: on a
// terminal Ctrl-C reaches the command too, which may exit before the
// recorder sees its own signal.
func recordStatus(sum *record.Summary, signaled bool) (code int, note string) {
	if sum.ExitCode < 0 { // no -c command
		return exitOK, ""
	}
	status := commandStatus(sum.ExitCode)
	if sum.Stopped == "command exited" && !signaled {
		return sum.ExitCode, "the command " + status
	}
	why := sum.Stopped
	if signaled {
		why = "interrupted"
	}
	return exitOK, fmt.Sprintf("the recording stopped as asked (%s): exit status 0; the command %s", why, status)
}

// commandStatus says how a command with shell-style exit status code ended.
func commandStatus(code int) string {
	if code > 128 && code < 128+65 {
		sig := syscall.Signal(code - 128)
		return fmt.Sprintf("was killed by signal %d, %s (status %d)", int(sig), unix.SignalName(sig), code)
	}
	return fmt.Sprintf("exited with status %d", code)
}

// parseOwner parses --owner USER[:GROUP] or :GROUP, as chown(1) takes it:
// names or numeric ids. A missing part is -1, left as it is.
func parseOwner(s string) (*record.Owner, error) {
	name, group, hasGroup := strings.Cut(s, ":")
	o := &record.Owner{UID: -1, GID: -1}
	if name == "" && (!hasGroup || group == "") {
		return nil, fmt.Errorf("%q: want USER, USER:GROUP or :GROUP", s)
	}
	if name != "" {
		if id, err := strconv.Atoi(name); err == nil && id >= 0 {
			o.UID = id
		} else if u, err := user.Lookup(name); err == nil {
			o.UID, _ = strconv.Atoi(u.Uid)
		} else {
			return nil, fmt.Errorf("no user %q", name)
		}
	}
	if hasGroup {
		if group == "" {
			return nil, fmt.Errorf("%q: no GROUP after the colon", s)
		}
		if id, err := strconv.Atoi(group); err == nil && id >= 0 {
			o.GID = id
		} else if g, err := user.LookupGroup(group); err == nil {
			o.GID, _ = strconv.Atoi(g.Gid)
		} else {
			return nil, fmt.Errorf("no group %q", group)
		}
	}
	return o, nil
}

// flightFlags puts the flight recorder's flags into o.
func flightFlags(o *record.Options, flight, size, trigger, latency, holdoff, after string, maxSnapshots int) (err error) {
	if o.Flight, err = parseDuration(flight); err != nil {
		return usage.Errorf("--flight: %w", err)
	}
	if o.FlightSize, err = parseMaxSize(size); err != nil {
		return usage.Errorf("--flight-size: %w", err)
	}
	if o.TriggerHoldoff, err = parseDuration(holdoff); err != nil {
		return usage.Errorf("--trigger-holdoff: %w", err)
	}
	if o.After, err = parseDuration(after); err != nil {
		return usage.Errorf("--after: %w", err)
	}
	if latency != "" {
		t, err := record.ParseLatencyTrigger(latency)
		if err != nil {
			return usage.Wrap(err)
		}
		o.TriggerLatency = &t
	}
	if maxSnapshots < 0 {
		return usage.Errorf("--max-snapshots %d is negative", maxSnapshots)
	}
	o.Trigger, o.MaxSnapshots = trigger, maxSnapshots
	return nil
}

// abortExit ends the process on a second interrupt; tests replace it.
var abortExit = os.Exit

// repeatGrace is how long after the first stop signal another one is the
// same stop: GNU timeout signals bpftape and then its process group, two
// signals microseconds apart, where a user's second Ctrl-C to abort a
// slow finish comes later.
const repeatGrace = time.Second

func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if secs <= 0 {
			return 0, fmt.Errorf("duration %q is not positive", s)
		}
		return time.Duration(math.Round(secs * float64(time.Second))), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q: want e.g. 10s, 1m30s or a number of seconds", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("duration %q is not positive", s)
	}
	return d, nil
}

// parseSize parses a byte count with an optional K, M or G suffix (powers
// of 1024; a trailing "B" or "iB" is allowed).
func parseSize(s string) (uint32, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I")
	mult := uint64(1)
	switch {
	case strings.HasSuffix(t, "K"):
		mult, t = 1<<10, t[:len(t)-1]
	case strings.HasSuffix(t, "M"):
		mult, t = 1<<20, t[:len(t)-1]
	case strings.HasSuffix(t, "G"):
		mult, t = 1<<30, t[:len(t)-1]
	}
	n, err := strconv.ParseUint(t, 10, 64)
	if err != nil || n == 0 || n*mult > 1<<31 {
		return 0, fmt.Errorf("bad size %q: want bytes, e.g. 4096, 256K or 16M (at most 2G)", s)
	}
	return uint32(n * mult), nil
}

// parseMaxRates reads the --max-rate values: N/s for every probe (at most
// once) and PROBE=N/s for one (PROBE is what comes before the last =: a
// probe argument as typed may hold = too).
func parseMaxRates(vals []string) (all float64, probes []record.ProbeRate, err error) {
	for _, v := range vals {
		probe, rate := "", v
		if i := strings.LastIndexByte(v, '='); i >= 0 {
			probe, rate = v[:i], v[i+1:]
			if probe == "" {
				return 0, nil, usage.Errorf("--max-rate %q: no PROBE before the =", v)
			}
		}
		n, err := parseRate(rate)
		if err != nil {
			return 0, nil, usage.Errorf("--max-rate %q: %v", v, err)
		}
		switch {
		case probe != "":
			probes = append(probes, record.ProbeRate{Probe: probe, PerSecond: n})
		case all != 0:
			return 0, nil, usage.Errorf("--max-rate %q: a rate for every probe was given already (%s/s); name a PROBE=N/s", v, humanfmt.Rate(all))
		default:
			all = n
		}
	}
	return all, probes, nil
}

// parseRate reads N/s, N a number above 0 with an optional k (thousand) or
// M (million) suffix: 1000/s, 2.5/s, 10k/s.
func parseRate(s string) (float64, error) {
	num, ok := strings.CutSuffix(s, "/s")
	mult := 1.0
	switch {
	case strings.HasSuffix(num, "k"):
		num, mult = num[:len(num)-1], 1e3
	case strings.HasSuffix(num, "M"):
		num, mult = num[:len(num)-1], 1e6
	}
	n, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || num == "" || strings.ContainsAny(num, "xXpPeE_") {
		return 0, errors.New("want N/s or PROBE=N/s, N events a second, e.g. 1000/s or 10k/s")
	}
	n *= mult
	if !(n > 0) || math.IsInf(n, 0) || n > 1e9 {
		return 0, errors.New("want a rate above 0 and at most 1G/s")
	}
	return n, nil
}

// processLists splits the --pid and --comm lists at commas.
func processLists(pidList, commList []string) (pids []int, comms []string, err error) {
	for _, l := range pidList {
		for _, f := range strings.Split(l, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				return nil, nil, usage.Errorf("--pid %q: want process ids above 0, separated by commas", l)
			}
			pids = append(pids, n)
		}
	}
	for _, l := range commList {
		for _, f := range strings.Split(l, ",") {
			if f == "" {
				return nil, nil, usage.Errorf("--comm %q: an empty name", l)
			}
			comms = append(comms, f)
		}
	}
	return pids, comms, nil
}

// startCPUProfile profiles the recorder into path, which must not exist:
// for measuring where its CPU per event goes (bench/README.md).
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("BPFTAPE_CPUPROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("BPFTAPE_CPUPROFILE: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
