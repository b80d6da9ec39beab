package record

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/record/stacktable"
)

// run records from an armed capture until something stops it, then
// detaches, drains what is left, closes the capture and sums it up.
func (r *recorder) run(ctx context.Context) (*Summary, error) {
	drainDone := make(chan error, 1)
	go func() { drainDone <- r.d.run() }()
	stopStatus := r.startStatus()

	var setupErr error
	if r.opts.ReadyFile != "" {
		setupErr = r.writeReady()
	}
	if setupErr == nil && r.gate != nil {
		setupErr = r.gate.open()
	}
	start := time.Now()

	stops, stopPrune, stopWatching := r.watch()
	defer stopWatching()

	var stopped string
	var runErr error
	drainFinished := false
	if setupErr != nil {
		runErr = setupErr
		stopped = "error"
	} else {
		stopped, runErr, drainFinished = r.wait(ctx, stops, drainDone)
	}

	elapsed := time.Since(start)
	r.stopCommand(setupErr != nil)

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
	if r.sideband != nil {
		r.sideband.Close()
		r.sideband = nil
		if n := r.stacks.Stats().SidebandLost; n > 0 {
			r.warn(fmt.Sprintf("the kernel dropped %d side-band records of mappings (its rings were full): the user stacks of processes that exited early may not all symbolize", n))
		}
	}
	r.countFiltered()
	if r.flight != nil {
		r.flight.finish()
	}
	r.objs.Close()
	r.objs = nil
	werr := r.w.Close()
	if werr != nil && runErr == nil {
		runErr = fmt.Errorf("write %s: %w", r.opts.Output, werr)
	}
	return r.summary(elapsed, stopped), runErr
}

// stops are what ends a recording besides its context, each nil when it
// does not apply: the duration, the command's exit and the -p process's.
type stops struct {
	timer      <-chan time.Time
	gateDone   <-chan struct{}
	targetGone <-chan struct{}
}

// watch starts the timer and the watchers of the recording: of the -p
// process, of Options.Abort, and of exited processes when following.
// stopPrune stops the last; stop stops the others.
func (r *recorder) watch() (s stops, stopPrune, stop func()) {
	o := &r.opts
	var undo []func()
	if o.Duration > 0 {
		t := time.NewTimer(o.Duration)
		undo = append(undo, func() { t.Stop() })
		s.timer = t.C
	}
	if r.gate != nil {
		s.gateDone = r.gate.done
	}
	if o.PID != 0 {
		stopWatch := make(chan struct{})
		undo = append(undo, func() { close(stopWatch) })
		s.targetGone = watchExit(o.PID, stopWatch)
	}
	if o.Abort != nil {
		stopAbort := make(chan struct{})
		undo = append(undo, func() { close(stopAbort) })
		go r.watchAbort(stopAbort)
	}
	stopPrune = func() {}
	if r.follow {
		stop, done := make(chan struct{}), make(chan struct{})
		go r.pruneExited(stop, done)
		stopPrune = func() { close(stop); <-done }
	}
	return s, stopPrune, func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
}

// wait waits for what stops the recording, and says what it was;
// drainFinished is set when it was the drainer's end, whose error err is.
func (r *recorder) wait(ctx context.Context, s stops, drainDone <-chan error) (stopped string, err error, drainFinished bool) {
	select {
	case <-ctx.Done():
		stopped = "interrupted"
	case <-s.timer:
		stopped = "duration"
	case <-s.gateDone:
		stopped = "command exited"
	case <-s.targetGone:
		stopped = "process exited"
	case err = <-drainDone:
		drainFinished = true
		stopped = "error"
		if err == nil {
			err = errors.New("ring buffer reader stopped")
		}
		if errors.Is(err, errMaxSize) {
			stopped, err = "max size", nil
		}
		if errors.Is(err, errMaxSnapshots) {
			stopped, err = "max snapshots", nil
		}
	}
	return stopped, err, drainFinished
}

// stopCommand ends a command still running: at once if setup failed
// (abort), else with SIGTERM, then SIGKILL after Options.KillGrace. Its
// last events are recorded while it exits.
func (r *recorder) stopCommand(abort bool) {
	if r.gate == nil || r.gate.exited() {
		return
	}
	if abort {
		r.gate.abort()
		return
	}
	r.gate.signal(syscall.SIGTERM)
	grace := r.opts.KillGrace
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

// summary sums up a recording whose capture is closed.
func (r *recorder) summary(elapsed time.Duration, stopped string) *Summary {
	o := &r.opts
	s := &Summary{Output: o.Output, Elapsed: elapsed, Stopped: stopped, TargetPID: r.target, ExitCode: -1,
		ReadFaults: r.d.faults, Truncated: r.d.truncated, Malformed: r.d.malformed, NoComm: r.d.noComm}
	s.Bytes = r.w.Stats.Bytes.Load()
	if st, err := os.Stat(o.Output); err == nil && st.Mode().IsRegular() { // not a pipe
		s.Bytes = st.Size()
	}
	r.limit.summarize(s)
	unwritten := r.w.Unwritten() // after a write error: only complete batches count
	s.Flight = r.w.FlightStats()
	r.w = nil
	for i, p := range r.probes {
		events := r.d.events[i]
		if i < len(unwritten) {
			events -= min(events, unwritten[i])
		}
		ps := ProbeStats{Name: p.Meta.Name, Kind: p.Meta.Kind, Sites: len(p.Atts), Events: events,
			Lost: r.d.lostN[i], SampleSize: bpf.SampleSize(p.Class), Filter: p.Meta.Filter}
		if r.filtered != nil {
			ps.Filtered, ps.RecorderSwitches, ps.RateLimited = r.filtered[i], r.ownSwitches[i], r.rateLimited[i]
		}
		ps.MaxRate = p.Meta.MaxRate
		s.Probes = append(s.Probes, ps)
		s.Events += ps.Events
		s.Lost = format.AddCount(s.Lost, ps.Lost)
		s.RawBytes += int64(ps.Events) * int64(ps.SampleSize)
	}
	if r.gate != nil {
		s.ExitCode = r.gate.exitCode()
	}
	s.Window = r.window
	if f := r.flight; f != nil {
		s.Output, s.Bytes = "", 0
		s.Snapshots, s.SnapshotsSkipped = f.written, f.skipped
		for _, name := range f.written {
			if st, err := os.Stat(name); err == nil {
				s.Bytes += st.Size()
			}
		}
	}
	s.Followed, s.Untracked = r.followed, r.untracked
	if r.stacks != nil {
		s.SkippedReads = r.stacks.Stats().Skipped
	}
	return s
}

// countFiltered puts in the capture's footer how many events each
// filtered probe's filter rejected, how many sched_switch events were
// left out as the recorder's own, and how many events each rate limit
// rejected; the probes are detached.
func (r *recorder) countFiltered() {
	m := r.w.Meta()
	c, errs := r.readCounts()
	for _, err := range errs {
		r.warn(err.Error())
	}
	r.filtered, r.ownSwitches, r.rateLimited = c.filtered, c.ownSwitches, c.rateLimited
	c.setMeta(m.Probes)
}

// kernelCounts are, by probe id, the events the programs counted and did
// not send so far: rejected by a filter, left out as the recorder's own
// switches, rejected by a rate limit.
type kernelCounts struct {
	filtered, ownSwitches, rateLimited []uint64
}

// readCounts reads the kernel's counts of the probes that have them.
func (r *recorder) readCounts() (c kernelCounts, errs []error) {
	n := len(r.probes)
	c = kernelCounts{make([]uint64, n), make([]uint64, n), make([]uint64, n)}
	read := func(dst []uint64, i int, f func(uint16) (uint64, error)) {
		v, err := f(uint16(i))
		if err != nil {
			errs = append(errs, err)
			return
		}
		dst[i] = v
	}
	for i, p := range r.probes {
		if p.Meta.Filter != "" {
			read(c.filtered, i, r.objs.FilteredSamples)
		}
		if len(p.Atts) > 0 && p.Atts[0].Spec.Flags&bpf.SpecSelfSwitch != 0 {
			read(c.ownSwitches, i, r.objs.OwnSwitchCount)
		}
		if p.Meta.MaxRate > 0 {
			read(c.rateLimited, i, r.objs.RateLimitedCount)
		}
	}
	return c, errs
}

// setMeta puts the counts into the probes' metadata.
func (c kernelCounts) setMeta(probes []format.Probe) {
	for i := range probes {
		if i < len(c.filtered) {
			probes[i].Filtered, probes[i].RecorderSwitches, probes[i].RateLimited = c.filtered[i], c.ownSwitches[i], c.rateLimited[i]
		}
	}
}

// since returns the counts c less those of base.
func (c kernelCounts) since(base kernelCounts) kernelCounts {
	d := kernelCounts{slices.Clone(c.filtered), slices.Clone(c.ownSwitches), slices.Clone(c.rateLimited)}
	sub := func(dst, b []uint64) {
		for i := range dst {
			if i < len(b) {
				dst[i] -= min(dst[i], b[i])
			}
		}
	}
	sub(d.filtered, base.filtered)
	sub(d.ownSwitches, base.ownSwitches)
	sub(d.rateLimited, base.rateLimited)
	return d
}

// countsKept reports whether any probe has kernel counts (readCounts).
func (r *recorder) countsKept() bool {
	for _, p := range r.probes {
		if p.Meta.Filter != "" || p.Meta.MaxRate > 0 || len(p.Atts) > 0 && p.Atts[0].Spec.Flags&bpf.SpecSelfSwitch != 0 {
			return true
		}
	}
	return false
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
