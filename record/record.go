// Package record is bpftape's recorder: it resolves probe specs (see
// package probespec) against binaries and tracefs, loads the BPF programs of
// package bpf, attaches one uprobe or tracepoint per probe site, and drains
// the ring buffer into a capture file (package format) until it is told to
// stop, the duration is up, or the traced process exits.
//
// The order matters and is kept on every path: everything that can be
// checked without the kernel (syntax, privileges, BPF features, binaries,
// symbols, USDT notes, tracepoint formats, the output file) is checked
// before anything is attached, and every link, reader and BPF object is
// closed again on every exit.
package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/boottime"
	"github.com/bpftape/bpftape/internal/outfile"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/record/elfsym"
	"github.com/bpftape/bpftape/record/stacktable"
)

// Options configure a recording.
type Options struct {
	// Output is the capture file to write (see outputOptions).
	Output string
	// Probes are the probe specs as typed; see package probespec.
	Probes []string
	// PID limits the recording to a running process (-p); 0 records
	// system-wide unless Command is set.
	PID int
	// Follow (--follow) records, with PID, the processes it started and
	// starts from now on as well (fork, clone of a new process, exec).
	// NoFollow (--follow=false with -c) records the Command's process only.
	//
	// Following attaches uprobes in every process that maps the binary and
	// lets the program drop other processes' events: a uprobe in a shared
	// library (libc) then traps in every process of the host that runs it.
	Follow, NoFollow bool
	// PIDs (--pid) and Comms (--comm) record only the events of these
	// processes and of threads with these names, with every probe's
	// filter in the BPF program: (pid == A || ...) && (comm == "x" || ...).
	// Unlike PID, they attach nothing differently and never end the
	// recording.
	PIDs  []int
	Comms []string
	// Command (-c) is started with the probes attached before it runs and
	// recorded, with every process it starts, until it exits; its exit
	// status is Summary.ExitCode.
	Command []string
	// Duration bounds the recording; 0 means until stopped.
	Duration time.Duration
	// RingSize is the size of each CPU's ring buffer in bytes (0: bpf.DefaultRingSize()).
	RingSize uint32
	// Compression of the capture (zstd, lz4 or none; "" is zstd).
	Compression format.Compression
	// ReadyFile, if set, is written once every probe is attached, before a
	// Command is let run. It holds "pid=RECORDER_PID\n", "target=PID\n"
	// when recording a process, "setup_ms=MS\n", the time from the call
	// of Record to ready (resolving, loading, attaching), and
	// "kprobe_multi_links=N\n", the kprobe_multi links attached.
	ReadyFile string
	// DebugDirs are searched for the separate debug files of stripped
	// binaries before $BPFTAPE_DEBUG_DIRS and /usr/lib/debug (see
	// elfsym.DebugDirs and elfsym.FindDebugFile).
	DebugDirs []string
	// Force lets Output overwrite an existing file; without it, recording
	// into one is refused before anything starts.
	Force bool
	// Owner, if not nil, is given the capture file (and every rotated
	// part) as it is created, before anything is written to it.
	Owner *Owner
	// MaxSize, if not 0, stops the recording when the capture file reaches
	// that many bytes; with Rotate, the capture goes on in a new file
	// (PartName) and only the newest Rotate files are kept.
	MaxSize int64
	Rotate  int

	// CommandLine and Version go into the capture's metadata.
	CommandLine []string
	Version     string

	// Log receives warnings. Status, if not nil, gets a live status line
	// (elapsed, events, events/s, bytes, lost) redrawn 4 times a second
	// with \r: pass a terminal.
	Log    io.Writer
	Status io.Writer

	// Stdin, Stdout and Stderr of the Command (nil: the recorder's own).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// GateExe is the executable re-executed as the Command's gate (see
	// GateArg); "" is this process's own executable.
	GateExe string
	// KillGrace is how long a Command gets between SIGTERM and SIGKILL when
	// the recording stops before it exits (0: 2s).
	KillGrace time.Duration
	// Abort, when closed, kills a Command still running with SIGKILL at
	// once (a second Ctrl-C: the caller is about to exit); Killed, if not
	// nil, is closed once that is done.
	Abort  <-chan struct{}
	Killed chan<- struct{}

	// NoCookies attaches as on kernels without BPF attach cookies (before
	// 5.15), which Record does by itself there: one program per
	// attachment, loaded with its spec index as a constant. Forcing it is
	// for tests and for comparing the two (bpf.Options.NoCookies).
	NoCookies bool

	// NoKprobeMulti attaches a pattern's kprobes one link per function
	// even where the kernel has kprobe_multi links (which attach them all
	// with one): for tests and for comparing the two.
	NoKprobeMulti bool

	// Live, if not nil, checks the probes before anything is attached and
	// is shown the recording as the capture gets it (see Live): the
	// capture is written as without it.
	Live Live
}

// ProbeStats are one probe's totals.
type ProbeStats struct {
	Name       string
	Kind       string
	Sites      int // attachments: USDT sites, else 1
	Events     uint64
	Lost       uint64
	SampleSize int // ring buffer bytes per event
	// Filter is the probe's filter ("" for none) and Filtered the events
	// it rejected, which were not recorded.
	Filter   string
	Filtered uint64
}

// Summary is what a recording did.
type Summary struct {
	Output   string
	Elapsed  time.Duration
	Stopped  string // why it stopped: "interrupted", "duration", "command exited", "process exited", "max size"
	Probes   []ProbeStats
	Events   uint64
	Lost     uint64
	Bytes    int64 // capture file size
	RawBytes int64 // ring buffer bytes of the recorded events: sum of events x sample size
	// ReadFaults and Truncated count events with a value that could not be
	// read (recorded as 0 or "") or a string cut to 63 bytes; Malformed
	// counts ring records that were not valid samples (dropped).
	ReadFaults, Truncated, Malformed uint64
	// NoComm counts events recorded with an empty comm because no comm
	// record named their thread (it should stay 0).
	NoComm uint64
	// TargetPID is the recorded process (-p or -c), 0 if system-wide.
	TargetPID int
	// ExitCode is the Command's exit status (128+N if killed by signal N),
	// -1 without a Command.
	ExitCode int
	// Parts are the files a rotated recording (Options.Rotate) kept, oldest
	// first; Output is the last.
	Parts []string
	// Window is when every probe was recording (boot-clock ns), as the
	// capture's metadata says.
	Window format.Window
	// Followed is how many processes were recorded with Options.Follow or
	// a Command; Untracked how many children of theirs were not, for want
	// of room (bpf.MaxTraced at once).
	Followed, Untracked uint64
	// SkippedReads counts the files that the stack table did not read, or
	// did not wait for, because they were slow or the recording was
	// ending: their objects have no symbols, and say why.
	SkippedReads int
}

// Owner is who a capture file belongs to (Options.Owner): UID and GID as
// chown(2) takes them, -1 leaving one as it is. The file keeps mode 0600,
// readable by its owner only; with a GID it gets mode 0640, so that the
// group reads it too.
type Owner struct {
	UID, GID int
}

// Mode is the mode of a capture file given to o.
func (o *Owner) Mode() os.FileMode {
	if o != nil && o.GID >= 0 {
		return 0o640
	}
	return 0o600
}

// give hands f, just created and still empty, to o: fchown and fchmod on
// the open file, never by its name. A device or FIFO written in place is
// left as it is. A nil o does nothing.
func (o *Owner) give(f *outfile.File) error {
	if o == nil {
		return nil
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return nil
	}
	if err := f.Chown(o.UID, o.GID); err != nil {
		return fmt.Errorf("--owner: %w", err)
	}
	if err := f.Chmod(o.Mode()); err != nil {
		return fmt.Errorf("--owner: %w", err)
	}
	return nil
}

// CommandError is an Options.Command that could not be started because it
// was not found or is not an executable file: nothing was recorded.
type CommandError struct{ Err error }

func (e *CommandError) Error() string { return e.Err.Error() }
func (e *CommandError) Unwrap() error { return e.Err }

// Record records until ctx is done, Duration has passed, the Command or
// the PID exits, or an error occurs. It returns a Summary whenever a
// capture was written, even with an error.
func Record(ctx context.Context, o Options) (*Summary, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	r := &recorder{opts: o, start: time.Now()}
	if err := r.setup(); err != nil {
		// Before cleanup closes the writer, which would keep the file:
		// this removes the capture (the first part, when rotating) only
		// if setup created it.
		if r.outFile != nil {
			r.outFile.Discard()
		}
		r.cleanup()
		return nil, err
	}
	defer r.cleanup()
	return r.run(ctx)
}

type recorder struct {
	opts    Options
	start   time.Time
	probes  []*probe
	gate    *gate
	w       *format.Writer
	outFile *outfile.File // the capture file, from setup
	objs    *bpf.Objects
	links   []link.Link
	// filtered is, by probe id, the events each probe's filter rejected
	// (countFiltered).
	filtered []uint64
	// stacks builds the capture's stack table, when a probe records stacks.
	stacks *stacktable.Collector
	// perfLinks are the profile probes' perf events, one per CPU.
	perfLinks []*bpf.PerfEventLink
	// kmultiLinks counts the kprobe_multi links among links.
	kmultiLinks int
	follow    bool      // record the target's new processes too
	forks     link.Link // track_fork, with follow
	// followed and untracked are the processes recorded while following
	// and the children not recorded for want of room (see pruneExited).
	followed, untracked uint64
	window              format.Window
	rd                  *bpf.Ring
	d                   *drainer
	target              int
	limit               *sizeLimit // nil without Options.MaxSize
}

// cleanup releases whatever is still held: on success run has already
// closed everything in order.
func (r *recorder) cleanup() {
	r.detach()
	if r.rd != nil {
		r.rd.Close()
		r.rd = nil
	}
	if r.objs != nil {
		r.objs.Close()
		r.objs = nil
	}
	if r.w != nil {
		r.w.Close()
		r.w = nil
	}
	if r.gate != nil && !r.gate.exited() {
		r.gate.abort()
	}
}

// detach closes the capture window, then every link. Closing a uprobe link
// takes about 90 ms on this kernel (the uprobe unregistration waits for RCU
// grace periods under a global lock, so closing them in parallel does not
// help): without the window, the probes closed last would record for
// seconds longer than the first.
func (r *recorder) detach() {
	r.disarm()
	for _, l := range r.links {
		l.Close()
	}
	r.links = nil
	for _, l := range r.perfLinks {
		l.Close()
	}
	r.perfLinks = nil
	if r.forks != nil {
		r.forks.Close()
		r.forks = nil
	}
}

// arm opens the capture window once every probe is attached and the
// capture was started: the window starts at its start time, read before.
func (r *recorder) arm() error {
	if err := r.objs.Arm(true); err != nil {
		return err
	}
	r.window.Start = r.w.Meta().Window.Start
	return nil
}

// disarm closes the capture window if it is open; the window ends at the
// boot time read just after. Events whose program saw the window open
// still reach the ring: the drainer reads them.
func (r *recorder) disarm() {
	if r.objs == nil || r.window.Start == 0 || r.window.End != 0 {
		return
	}
	if err := r.objs.Arm(false); err != nil {
		r.warn(err.Error())
		return
	}
	r.window.End = boottime.Now()
	if m := r.w.Meta(); m.Window != nil {
		m.Window.End = r.window.End
	}
}

// countFiltered puts in the capture's footer how many events each
// filtered probe's filter rejected; the probes are detached.
func (r *recorder) countFiltered() {
	m := r.w.Meta()
	r.filtered = make([]uint64, len(r.probes))
	for i, p := range r.probes {
		if p.meta.Filter == "" || i >= len(m.Probes) {
			continue
		}
		n, err := r.objs.FilteredSamples(uint16(i))
		if err != nil {
			r.warn(err.Error())
			continue
		}
		m.Probes[i].Filtered = n
		r.filtered[i] = n
	}
}

func (r *recorder) warn(msg string) { fmt.Fprintf(r.opts.Log, "bpftape record: warning: %s\n", msg) }

func (r *recorder) setup() error {
	o := &r.opts
	if len(o.Probes) == 0 {
		return usage.Errorf("no probes: give at least one PROBE, e.g. u:./prog:func or t:syscalls:sys_exit_write")
	}
	if o.Output == "" {
		return usage.Errorf("no output file")
	}
	base, err := o.sizeOptions()
	if err != nil {
		return err
	}
	if _, err := outfile.Check(o.Output, outputOptions(o)); err != nil {
		return err
	}
	if o.PID != 0 && len(o.Command) > 0 {
		return usage.Errorf("-p and -c exclude each other")
	}
	if o.PID < 0 || o.Duration < 0 {
		return usage.Errorf("negative -p or -d")
	}
	ring := o.RingSize
	if ring == 0 {
		ring = bpf.DefaultRingSize()
	}
	if page := uint32(os.Getpagesize()); ring&(ring-1) != 0 || ring%page != 0 {
		return usage.Errorf("ring buffer size %d is not a power of two multiple of the page size (%d)", ring, page)
	}
	if _, err := format.ParseCompression(string(o.Compression)); err != nil {
		return usage.Wrap(err)
	}
	specs := make([]*probespec.Spec, len(o.Probes))
	for i, text := range o.Probes {
		s, err := probespec.Parse(text)
		if err != nil {
			return usage.Wrap(err)
		}
		specs[i] = s
	}
	procFilter, err := processFilter(o.PIDs, o.Comms)
	if err != nil {
		return usage.Wrap(err)
	}
	res := &resolver{pid: o.PID, warn: r.warn, debugDirs: elfsym.DebugDirs(o.DebugDirs), procFilter: procFilter}
	if specs, err = expandWildcards(specs, res.tracefsDir); err != nil {
		return err
	}
	names, err := probespec.Names(specs)
	if err != nil {
		return usage.Wrap(err)
	}
	if len(specs) > format.MaxProbes || len(specs) > bpf.MaxProbes {
		return usage.Errorf("%d probes: at most %d", len(specs), bpf.MaxProbes)
	}

	if err := CheckPrivileges(); err != nil {
		return err
	}
	// Before the feature probes, which create maps too.
	if err := raiseMemlock(); err != nil {
		return err
	}
	if err := bpf.CheckFeatures(); err != nil {
		return err
	}
	if o.PID != 0 {
		if err := unix.Kill(o.PID, 0); err == unix.ESRCH {
			return fmt.Errorf("no process %d (-p)", o.PID)
		}
	}

	natt := 0
	threadBases := false
	for i, s := range specs {
		p, err := res.resolve(s, names[i])
		if err != nil {
			return err
		}
		for k := range p.atts {
			p.atts[k].spec.ProbeId = uint16(i)
			threadBases = threadBases || p.atts[k].threadBase()
		}
		natt += len(p.atts)
		r.probes = append(r.probes, p)
	}
	if natt > bpf.MaxSpecs {
		return fmt.Errorf("%d attachments (USDT sites count one each): at most %d", natt, bpf.MaxSpecs)
	}
	if o.Live != nil {
		if err := o.Live.Check(liveProbes(r.probes)); err != nil {
			return err
		}
	}

	// The command's process exists from here on, blocked in its gate, so
	// that its pid can filter tracepoints and uprobes.
	r.target = o.PID
	if len(o.Command) > 0 {
		exe := o.GateExe
		if exe == "" {
			if exe, err = os.Executable(); err != nil {
				return fmt.Errorf("find own executable for -c: %w", err)
			}
		}
		stdin, stdout, stderr := o.Stdin, o.Stdout, o.Stderr
		if stdin == nil {
			stdin = os.Stdin
		}
		if stdout == nil {
			stdout = os.Stdout
		}
		if stderr == nil {
			stderr = os.Stderr
		}
		if r.gate, err = startGate(exe, o.Command, stdin, stdout, stderr); err != nil {
			var notRun *exec.Error // from the search for the command
			if errors.As(err, &notRun) {
				return &CommandError{Err: err}
			}
			return err
		}
		r.target = r.gate.pid()
	}

	// The output is opened now, before anything is attached; the capture
	// starts in it once every probe is (see arm).
	if r.outFile, err = createOutput(o.Output, o); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	if err := o.Owner.give(r.outFile); err != nil {
		return fmt.Errorf("output: %w", err)
	}

	// -c follows the command's new processes; -p only with --follow.
	r.follow = (len(o.Command) > 0 && !o.NoFollow) || (o.Follow && o.PID != 0)
	if (o.Follow || o.NoFollow) && o.PID == 0 && len(o.Command) == 0 {
		return usage.Errorf("--follow needs -p or -c")
	}
	if r.follow {
		if _, err := bpf.TaskTgidOffset(); err != nil {
			if o.Follow {
				return fmt.Errorf("--follow: %w", err)
			}
			r.warn(fmt.Sprintf("recording the command's process only, not the processes it starts: %v", err))
			r.follow = false
		}
	}

	// A recorder of user stacks reads a process's mappings when its first
	// comm record comes (see drainer.sample): at once, so that a short
	// command is still there.
	wakeOnComm, kstacks := false, false
	for _, p := range r.probes {
		wakeOnComm = wakeOnComm || p.ustack > 0
		kstacks = kstacks || p.kstack > 0
		if (p.ustack > 0 || p.kstack > 0) && r.stacks == nil {
			r.stacks = stacktable.New(stacktable.Options{DebugDirs: elfsym.DebugDirs(o.DebugDirs)})
		}
	}
	// kallsyms is read while the programs load, not in the drain loop at
	// the first kernel stack: the stall filled the rings of a loaded host.
	kernelRead := make(chan struct{})
	if kstacks {
		go func() { r.stacks.ReadKernelSymbols(); close(kernelRead) }()
	} else {
		close(kernelRead)
	}
	defer func() { <-kernelRead }()
	// The programs hold only the code that these probes' specs run.
	var bpfSpecs []*bpf.ProbeSpec
	var tpEnd uint32 // the shortest tracepoint record's end
	for _, p := range r.probes {
		for i := range p.atts {
			bpfSpecs = append(bpfSpecs, &p.atts[i].spec)
			if a := &p.atts[i]; a.category != "" && (tpEnd == 0 || a.tpEnd < tpEnd) {
				tpEnd = a.tpEnd
			}
		}
	}
	uses := bpf.UsesOf(bpfSpecs...)
	uses.TPContextEnd = tpEnd
	if r.objs, err = bpf.Load(bpf.Options{RingSize: ring, FilterTgid: uint32(r.target), WakeupBytes: uint64(ring) / 4,
		ThreadBases: threadBases, Follow: r.follow, NoCookies: o.NoCookies, WakeOnComm: wakeOnComm, Uses: &uses}); err != nil {
		return err
	}
	if r.rd, err = r.objs.NewRing(); err != nil {
		return fmt.Errorf("ring buffer reader: %w", err)
	}
	if err := r.attach(); err != nil {
		return err
	}

	// The capture starts once every probe is attached, so that its start
	// is the window's (see arm).
	if r.w, err = format.NewFileWriter(keepOnClose{r.outFile}, r.meta(ring), format.WriterOptions{Compression: o.Compression}); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	r.limit = newSizeLimit(r.w, o, base)
	r.d = newDrainer(r.rd, r.w, r.objs.Lost, r.probes, r.objs.ForgetComms)
	if r.stacks != nil {
		<-kernelRead
		r.d.stacks = r.stacks
	}
	if r.limit != nil {
		r.d.limit = r.limit.check
	}
	if o.Live != nil {
		o.Live.Start(r.w.Meta())
		r.d.live = o.Live
	}
	return r.arm()
}

// meta describes the capture; the start times are read together.
func (r *recorder) meta(ring uint32) *format.Meta {
	o := &r.opts
	m := &format.Meta{
		Tool:        strings.TrimSpace("bpftape " + o.Version),
		CommandLine: o.CommandLine,
		Extra: map[string]string{
			"ring_size":    strconv.FormatUint(uint64(ring), 10), // per CPU
			"wakeup_bytes": strconv.FormatUint(uint64(ring)/4, 10),
			// false: one program per attachment (see Options.NoCookies)
			"attach_cookies": strconv.FormatBool(r.objs.Cookies()),
		},
	}
	m.Host, _ = os.Hostname()
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		m.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	if o.PID != 0 {
		m.Extra["pid"] = strconv.Itoa(o.PID)
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", o.PID)); err == nil {
			m.Extra["comm"] = strings.TrimSpace(string(comm))
		}
	}
	if len(o.Command) > 0 {
		m.Extra["command"] = strings.Join(o.Command, " ")
		m.Extra["pid"] = strconv.Itoa(r.target)
	}
	for _, p := range r.probes {
		m.Probes = append(m.Probes, p.meta)
		if p.debugFile != "" {
			m.Extra["debug_file:"+p.meta.Name] = p.debugFile
		}
	}
	b1 := boottime.Now()
	m.StartWall = time.Now()
	b2 := boottime.Now()
	m.StartBoot = b1 + (b2-b1)/2
	m.Window = &format.Window{Start: b2} // the window opens after this (arm)
	return m
}

// attach stores each attachment's spec, then attaches it; its index is
// the attachment's spec index (its cookie, or its program's constant on
// kernels without cookies: see bpf.Objects.Cookies).
func (r *recorder) attach() error {
	execs := map[string]*link.Executable{}
	onTracepoint := map[string]int{} // attachments so far, by tracepoint
	uprobePID := r.target
	if r.follow {
		uprobePID = 0 // system-wide, filtered by the programs
	}
	cookie := uint32(0)
	// A pattern's kprobes share one kprobe_multi link where the kernel
	// has them: attaching is then one call, not one perf event each.
	multi := !r.opts.NoKprobeMulti && r.objs.Cookies() && bpf.HaveKprobeMulti()
	kmulti := map[kmultiKey]*link.KprobeMultiOptions{}
	var kmultiOrder []kmultiKey
	for _, p := range r.probes {
		for k := range p.atts {
			a := &p.atts[k]
			if err := r.objs.PutSpec(cookie, &a.spec); err != nil {
				return err
			}
			var l link.Link
			var err error
			if a.hz != 0 {
				if err := r.attachProfile(a, cookie); err != nil {
					return err
				}
				cookie++
				continue
			}
			if a.category != "" {
				// Each probe on a tracepoint needs a program of its own.
				tp := a.category + ":" + a.event
				prog, c, perr := r.objs.TracepointProgram(cookie, onTracepoint[tp])
				if perr != nil {
					return fmt.Errorf("attach %s: %w", a.what, perr)
				}
				onTracepoint[tp]++
				l, err = link.Tracepoint(a.category, a.event, prog, &link.TracepointOptions{Cookie: c})
			} else if a.tracing {
				// fentry/fexit: a program of its own, loaded for kfunc.
				prog, perr := r.objs.FuncProgram(cookie, a.kfunc, a.ret)
				if perr != nil {
					return fmt.Errorf("attach %s: %w", a.what, perr)
				}
				l, err = link.AttachTracing(link.TracingOptions{Program: prog})
			} else if a.kfunc != "" && a.pattern != "" && multi {
				// Attached below, one link for the pattern.
				k := kmultiKey{a.pattern, a.ret}
				if kmulti[k] == nil {
					kmultiOrder = append(kmultiOrder, k)
					kmulti[k] = &link.KprobeMultiOptions{}
				}
				kmulti[k].Symbols = append(kmulti[k].Symbols, a.kfunc)
				kmulti[k].Cookies = append(kmulti[k].Cookies, uint64(cookie))
				cookie++
				continue
			} else if a.kfunc != "" {
				// Kprobes fire in every process: the programs filter
				// by FilterTgid or the followed processes.
				prog, c, perr := r.objs.UprobeProgram(cookie)
				if perr != nil {
					return fmt.Errorf("attach %s: %w", a.what, perr)
				}
				ko := &link.KprobeOptions{Cookie: c, Offset: a.kprobeOff}
				if a.ret {
					l, err = link.Kretprobe(a.kfunc, prog, ko)
				} else {
					l, err = link.Kprobe(a.kfunc, prog, ko)
				}
			} else {
				ex := execs[a.path]
				if ex == nil {
					if ex, err = link.OpenExecutable(a.path); err != nil {
						return fmt.Errorf("attach %s: %w", a.what, err)
					}
					execs[a.path] = ex
				}
				prog, c, perr := r.objs.UprobeProgram(cookie)
				if perr != nil {
					return fmt.Errorf("attach %s: %w", a.what, perr)
				}
				uo := &link.UprobeOptions{Address: a.addr, Cookie: c, PID: uprobePID, RefCtrOffset: a.refCtr}
				if a.ret {
					l, err = ex.Uretprobe("", prog, uo)
				} else {
					l, err = ex.Uprobe("", prog, uo)
				}
				err = uprobeConflict(err, a.path)
				if errors.Is(err, unix.ESRCH) && uprobePID != 0 {
					err = fmt.Errorf("process %d exited before recording started: %w", uprobePID, err)
				}
			}
			if err != nil {
				return fmt.Errorf("attach %s: %w", a.what, err)
			}
			r.links = append(r.links, l)
			cookie++
		}
	}
	for _, k := range kmultiOrder {
		prog, err := r.objs.KprobeMultiProgram()
		if err != nil {
			return err
		}
		o := kmulti[k]
		var l link.Link
		if k.ret {
			l, err = link.KretprobeMulti(prog, *o)
		} else {
			l, err = link.KprobeMulti(prog, *o)
		}
		if err != nil {
			return fmt.Errorf("attach the kprobes of pattern %s (%d functions, one kprobe_multi link): %w", k.pattern, len(o.Symbols), err)
		}
		r.links = append(r.links, l)
		r.kmultiLinks++
	}
	if r.follow {
		return r.startFollowing()
	}
	return nil
}

// attachProfile opens a CPU-clock perf event on every CPU with the profile
// program of spec index spec: the programs then filter by process, as
// BCC's profile does with -p. A CPU that is offline (ENODEV) is skipped.
func (r *recorder) attachProfile(a *attachment, spec uint32) error {
	prog, err := r.objs.PerfEventProgram(spec)
	if err != nil {
		return fmt.Errorf("attach %s: %w", a.what, err)
	}
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return fmt.Errorf("attach %s: %w", a.what, err)
	}
	n := 0
	for cpu := range ncpu {
		l, err := bpf.AttachPerfEvent(prog, cpu, a.hz)
		if errors.Is(err, unix.ENODEV) {
			continue
		}
		if err != nil {
			return fmt.Errorf("attach %s: %w", a.what, err)
		}
		r.perfLinks = append(r.perfLinks, l)
		n++
	}
	if n == 0 {
		return fmt.Errorf("attach %s: no CPU is online", a.what)
	}
	return nil
}

// kmultiKey groups a pattern's kprobes (or kretprobes) into one
// kprobe_multi link.
type kmultiKey struct {
	pattern string
	ret     bool
}

func (r *recorder) writeReady() error {
	o := &r.opts
	content := fmt.Sprintf("pid=%d\n", os.Getpid())
	if r.target != 0 {
		content += fmt.Sprintf("target=%d\n", r.target)
	}
	content += fmt.Sprintf("setup_ms=%d\n", time.Since(r.start).Milliseconds())
	content += fmt.Sprintf("kprobe_multi_links=%d\n", r.kmultiLinks)
	tmp := o.ReadyFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return fmt.Errorf("ready file: %w", err)
	}
	if err := os.Rename(tmp, o.ReadyFile); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("ready file: %w", err)
	}
	return nil
}

func (r *recorder) run(ctx context.Context) (*Summary, error) {
	o := &r.opts
	drainDone := make(chan error, 1)
	go func() { drainDone <- r.d.run() }()
	stopStatus := r.startStatus()

	var setupErr error
	if o.ReadyFile != "" {
		setupErr = r.writeReady()
	}
	if setupErr == nil && r.gate != nil {
		setupErr = r.gate.open()
	}
	start := time.Now()

	var timer <-chan time.Time
	if o.Duration > 0 {
		t := time.NewTimer(o.Duration)
		defer t.Stop()
		timer = t.C
	}
	var gateDone <-chan struct{}
	if r.gate != nil {
		gateDone = r.gate.done
	}
	var targetGone <-chan struct{}
	if o.PID != 0 {
		stopWatch := make(chan struct{})
		defer close(stopWatch)
		targetGone = watchExit(o.PID, stopWatch)
	}

	if o.Abort != nil {
		stopAbort := make(chan struct{})
		defer close(stopAbort)
		go r.watchAbort(stopAbort)
	}
	stopPrune := func() {}
	if r.follow {
		stop, done := make(chan struct{}), make(chan struct{})
		go r.pruneExited(stop, done)
		stopPrune = func() { close(stop); <-done }
	}

	var stopped string
	var runErr error
	drainFinished := false
	if setupErr != nil {
		runErr = setupErr
		stopped = "error"
	} else {
		select {
		case <-ctx.Done():
			stopped = "interrupted"
		case <-timer:
			stopped = "duration"
		case <-gateDone:
			stopped = "command exited"
		case <-targetGone:
			stopped = "process exited"
		case runErr = <-drainDone:
			drainFinished = true
			stopped = "error"
			if runErr == nil {
				runErr = errors.New("ring buffer reader stopped")
			}
			if errors.Is(runErr, errMaxSize) {
				stopped, runErr = "max size", nil
			}
		}
	}

	elapsed := time.Since(start)

	// A command still running gets SIGTERM, then SIGKILL; its last events
	// are recorded while it exits.
	if r.gate != nil && !r.gate.exited() {
		if setupErr != nil {
			r.gate.abort()
		} else {
			r.gate.signal(syscall.SIGTERM)
			grace := o.KillGrace
			if grace <= 0 {
				grace = 2 * time.Second
			}
			select {
			case <-r.gate.done:
			case <-time.After(grace):
				r.gate.signal(syscall.SIGKILL)
				<-r.gate.done
			}
		}
	}

	// Detach, then let the drainer read everything left: the stack table's
	// reads of traced processes' files get EndBudget in all, so that none
	// (a FUSE file system that never answers) holds up the footer.
	r.detach()
	stopPrune()
	if r.stacks != nil {
		r.stacks.Hurry(stacktable.EndBudget)
	}
	if !drainFinished {
		if err := r.d.stop(); err != nil && runErr == nil {
			runErr = err
		}
		if err := <-drainDone; err != nil && runErr == nil {
			runErr = err
		}
	}
	stopStatus()
	r.rd.Close()
	r.rd = nil
	r.countFiltered()
	r.objs.Close()
	r.objs = nil
	werr := r.w.Close()
	if werr != nil && runErr == nil {
		runErr = fmt.Errorf("write %s: %w", o.Output, werr)
	}

	s := &Summary{Output: o.Output, Elapsed: elapsed, Stopped: stopped, TargetPID: r.target, ExitCode: -1,
		ReadFaults: r.d.faults, Truncated: r.d.truncated, Malformed: r.d.malformed, NoComm: r.d.noComm}
	s.Bytes = r.w.Stats.Bytes.Load()
	if st, err := os.Stat(o.Output); err == nil && st.Mode().IsRegular() { // not a pipe
		s.Bytes = st.Size()
	}
	r.limit.summarize(s)
	unwritten := r.w.Unwritten() // after a write error: only complete batches count
	r.w = nil
	for i, p := range r.probes {
		events := r.d.events[i]
		if i < len(unwritten) {
			events -= min(events, unwritten[i])
		}
		ps := ProbeStats{Name: p.meta.Name, Kind: p.meta.Kind, Sites: len(p.atts), Events: events,
			Lost: r.d.lostN[i], SampleSize: bpf.SampleSize(p.class), Filter: p.meta.Filter}
		if r.filtered != nil {
			ps.Filtered = r.filtered[i]
		}
		s.Probes = append(s.Probes, ps)
		s.Events += ps.Events
		s.Lost = format.AddCount(s.Lost, ps.Lost)
		s.RawBytes += int64(ps.Events) * int64(ps.SampleSize)
	}
	if r.gate != nil {
		s.ExitCode = r.gate.exitCode()
	}
	s.Window = r.window
	s.Followed, s.Untracked = r.followed, r.untracked
	if r.stacks != nil {
		s.SkippedReads = r.stacks.Stats().Skipped
	}
	return s, runErr
}

// watchAbort kills the command with SIGKILL at once when Options.Abort
// is closed, then closes Options.Killed; it ends when stop is closed.
func (r *recorder) watchAbort(stop <-chan struct{}) {
	select {
	case <-stop:
		return
	case <-r.opts.Abort:
	}
	if r.gate != nil {
		r.gate.signal(syscall.SIGKILL)
		select {
		case <-r.gate.done:
		case <-time.After(time.Second):
		}
	}
	if r.opts.Killed != nil {
		close(r.opts.Killed)
	}
}

// watchExit returns a channel closed when process pid exits (or stop is
// closed, which ends the watching).
func watchExit(pid int, stop <-chan struct{}) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		fd, err := unix.PidfdOpen(pid, 0)
		if err == nil {
			defer unix.Close(fd)
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			var gone bool
			if err == nil {
				n, perr := unix.Poll(fds, 100)
				gone = n > 0 || (perr != nil && perr != unix.EINTR)
			} else {
				// No pidfd: poll the pid (a zombie still counts as alive).
				time.Sleep(100 * time.Millisecond)
				gone = unix.Kill(pid, 0) != nil
			}
			if gone {
				close(ch)
				return
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	return ch
}
