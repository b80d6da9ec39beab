// Package record is bpftape's recorder: it has probe specs (see package
// probespec) resolved against binaries and tracefs (package record/resolve),
// loads the BPF programs of package bpf, attaches one uprobe or tracepoint
// per probe site, and drains the ring buffer into a capture file (package
// format) until it is told to stop, the duration is up, or the traced
// process exits. What the host offers is checked by package record/host.
//
// The order matters and is kept on every path: everything that can be
// checked without the kernel (syntax, privileges, BPF features, binaries,
// symbols, USDT notes, tracepoint formats, the output file) is checked
// before anything is attached, and every link, reader and BPF object is
// closed again on every exit.
package record

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cilium/ebpf/link"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/outfile"
	"github.com/bpftape/bpftape/record/resolve"
	"github.com/bpftape/bpftape/record/sideband"
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

	// MaxRate, if above 0, bounds every probe to that many events a
	// second (--max-rate N/s), and MaxRates the probes they name
	// (--max-rate PROBE=N/s; the last that names a probe wins), in the
	// BPF program: an event past the rate is rejected there before
	// anything is sent, and counted (ProbeStats.RateLimited, the
	// capture's format.Probe.RateLimited). A probe's filter runs first:
	// the events it rejects take nothing from the rate.
	MaxRate  float64
	MaxRates []ProbeRate

	// NoCookies attaches as on kernels without BPF attach cookies (before
	// 5.15), which Record does by itself there: one program per
	// attachment, loaded with its spec index as a constant. Forcing it is
	// for tests and for comparing the two (bpf.Options.NoCookies).
	NoCookies bool

	// NoKprobeMulti attaches a pattern's kprobes one link per function
	// even where the kernel has kprobe_multi links (which attach them all
	// with one): for tests and for comparing the two.
	NoKprobeMulti bool

	// Flight (--flight), if not 0, makes the recording a flight recorder:
	// it keeps only the last Flight of compressed batches, in memory (at
	// most FlightSize bytes; 0: DefaultFlightSize), and writes them as a
	// capture, SnapshotName(Output, n), when asked: on Snapshot, at the
	// first event of the probe named Trigger (the first after
	// TriggerHoldoff since the last, with one), on a TriggerLatency pair,
	// each After later. Without a trigger it also writes one when the
	// recording ends, if none was. MaxSnapshots, if not 0, ends the
	// recording after that many.
	Flight         time.Duration
	FlightSize     int64
	Snapshot       <-chan struct{}
	Trigger        string
	TriggerLatency *LatencyTrigger
	TriggerHoldoff time.Duration
	After          time.Duration
	MaxSnapshots   int

	// Live, if not nil, checks the probes before anything is attached and
	// is shown the recording as the capture gets it (see Live): the
	// capture is written as without it.
	Live Live
}

// ProbeRate is a rate limit of one probe (Options.MaxRates): Probe is its
// name (as info and the analyses name it) or its argument as typed, which
// for a pattern (k:vfs_*) limits each of its probes.
type ProbeRate struct {
	Probe     string
	PerSecond float64
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
	// RecorderSwitches are the sched_switch events left out as the
	// recorder's own (between its threads and the idle task).
	RecorderSwitches uint64
	// MaxRate is the probe's rate limit (events a second, 0: none) and
	// RateLimited the events it rejected, which were not recorded.
	MaxRate     float64
	RateLimited uint64
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
	// EarlierRemoved are the parts of an earlier recording to the same
	// name that this one, with Options.Force, did not replace, and
	// removed; EarlierError says why others could not be.
	EarlierRemoved []string
	EarlierError   error
	// Window is when every probe was recording (boot-clock ns), as the
	// capture's metadata says.
	Window format.Window
	// Followed is how many processes were recorded with Options.Follow or
	// a Command; Untracked how many children of theirs were not, for want
	// of room (bpf.MaxTraced at once).
	Followed, Untracked uint64
	// Snapshots are the files a flight recording wrote (Options.Flight),
	// and Flight its ring's totals; Output is then "".
	Snapshots        []string
	SnapshotsSkipped int
	Flight           format.FlightStats
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
	probes  []*resolve.Probe
	gate    *gate
	w       *format.Writer
	outFile *outfile.File // the capture file, from setup
	objs    *bpf.Objects
	links   []link.Link
	// filtered is, by probe id, the events each probe's filter rejected,
	// ownSwitches the sched_switch events left out as the recorder's own,
	// rateLimited the events a rate limit rejected (countFiltered).
	filtered, ownSwitches, rateLimited []uint64
	// rates are the probes' rate limits (events a second, 0: none), by
	// probe id; limiter refills their tokens while the window is open.
	rates   []float64
	limiter *rateLimiter
	// stacks builds the capture's stack table, when a probe records stacks;
	// sideband, when one records user stacks and the kernel let it open,
	// tells it of the mappings of every process (see openSideband).
	stacks   *stacktable.Collector
	sideband *sideband.Reader
	// perfLinks are the profile probes' perf events, one per CPU.
	perfLinks []*bpf.PerfEventLink
	// kmultiLinks counts the kprobe_multi links among links.
	kmultiLinks int
	follow      bool      // record the target's new processes too
	forks       link.Link // track_fork, with follow
	// followed and untracked are the processes recorded while following
	// and the children not recorded for want of room (see pruneExited).
	followed, untracked uint64
	window              format.Window
	rd                  *bpf.Ring
	d                   *drainer
	target              int
	limit               *sizeLimit // nil without Options.MaxSize
	flight              *flight    // nil without Options.Flight
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
	if r.sideband != nil {
		r.sideband.Close()
		r.sideband = nil
	}
	if r.w != nil {
		r.w.Close()
		r.w = nil
	}
	if r.gate != nil && !r.gate.exited() {
		r.gate.abort()
	}
}

// warn writes a warning to Options.Log.
func (r *recorder) warn(msg string) { fmt.Fprintf(r.opts.Log, "bpftape record: warning: %s\n", msg) }
