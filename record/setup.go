package record

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/boottime"
	"github.com/bpftape/bpftape/internal/outfile"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/record/elfsym"
	"github.com/bpftape/bpftape/record/host"
	"github.com/bpftape/bpftape/record/resolve"
	"github.com/bpftape/bpftape/record/sideband"
	"github.com/bpftape/bpftape/record/stacktable"
)

// setup takes a recording from its Options to an armed capture, in three
// steps: preflight checks everything that can be checked before a process
// is started or a file created, prepare starts the command and opens the
// output, and load and attach put the programs in the kernel. The capture
// starts last (startCapture).
func (r *recorder) setup() error {
	ring, base, err := r.checkOptions()
	if err != nil {
		return err
	}
	threadBases, err := r.preflight()
	if err != nil {
		return err
	}
	// The triggers name probes: checked before anything starts.
	names := make([]string, len(r.probes))
	for i, p := range r.probes {
		names[i] = p.Meta.Name
	}
	if _, _, _, err := r.opts.triggerProbes(names); err != nil {
		return err
	}
	if err := r.prepare(); err != nil {
		return err
	}
	kernelRead := r.readKernelSymbols()
	defer func() { <-kernelRead }()
	if err := r.load(ring, threadBases); err != nil {
		return err
	}
	if err := r.attach(); err != nil {
		return err
	}
	return r.startCapture(ring, base, kernelRead)
}

// checkOptions checks the Options that need nothing but themselves, and
// returns the ring buffer size and the base name of rotated parts.
func (r *recorder) checkOptions() (ring uint32, base string, err error) {
	o := &r.opts
	if len(o.Probes) == 0 {
		return 0, "", usage.Errorf("no probes: give at least one PROBE, e.g. u:./prog:func or t:syscalls:sys_exit_write")
	}
	if o.Output == "" {
		return 0, "", usage.Errorf("no output file")
	}
	base, err = o.sizeOptions()
	if err != nil {
		return 0, "", err
	}
	if err := o.flightOptions(); err != nil {
		return 0, "", err
	}
	if o.Flight == 0 {
		if _, err := outfile.Check(o.Output, outputOptions(o)); err != nil {
			return 0, "", err
		}
	}
	if o.PID != 0 && len(o.Command) > 0 {
		return 0, "", usage.Errorf("-p and -c exclude each other")
	}
	if o.PID < 0 || o.Duration < 0 {
		return 0, "", usage.Errorf("negative -p or -d")
	}
	ring = o.RingSize
	if ring == 0 {
		ring = bpf.DefaultRingSize()
	}
	if page := uint32(os.Getpagesize()); ring&(ring-1) != 0 || ring%page != 0 {
		return 0, "", usage.Errorf("ring buffer size %d is not a power of two multiple of the page size (%d)", ring, page)
	}
	if _, err := format.ParseCompression(string(o.Compression)); err != nil {
		return 0, "", usage.Wrap(err)
	}
	return ring, base, nil
}

// preflight parses the probes, checks privileges and BPF features, and
// resolves every probe into r.probes: nothing is started or created yet.
// It reports whether an attachment reads %fs: or %gs: operands.
func (r *recorder) preflight() (threadBases bool, err error) {
	specs, names, res, err := r.parseProbes()
	if err != nil {
		return false, err
	}
	if err := r.checkHost(); err != nil {
		return false, err
	}
	natt := 0
	for i, s := range specs {
		p, err := res.Resolve(s, names[i])
		if err != nil {
			return false, err
		}
		for k := range p.Atts {
			p.Atts[k].Spec.ProbeId = uint16(i)
			threadBases = threadBases || p.Atts[k].ThreadBase()
			if r.rates[i] > 0 {
				p.Atts[k].Spec.Flags |= bpf.SpecRateLimit
			}
		}
		p.Meta.MaxRate = r.rates[i]
		natt += len(p.Atts)
		r.probes = append(r.probes, p)
	}
	if natt > bpf.MaxSpecs {
		return false, fmt.Errorf("%d attachments (USDT sites count one each): at most %d", natt, bpf.MaxSpecs)
	}
	r.checkMapped()
	if o := &r.opts; o.Live != nil {
		if err := o.Live.Check(liveProbes(r.probes)); err != nil {
			return false, err
		}
	}
	return threadBases, nil
}

// checkMapped warns about a uprobe or USDT probe on a binary that the -p
// process does not map: it would record none of its events, unless the
// process loads the binary later (or, with --follow, a process it starts
// runs it).
func (r *recorder) checkMapped() {
	pid := r.opts.PID
	if pid == 0 {
		return
	}
	files, err := elfsym.MappedFiles(pid)
	if err != nil {
		return // the process is gone, or its maps unreadable: said elsewhere
	}
	var mapped []os.FileInfo
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			mapped = append(mapped, st)
		}
	}
	warned := map[string]bool{}
	for _, p := range r.probes {
		switch p.Meta.Kind {
		case "uprobe", "uretprobe", "usdt": // a kernel function's Target is vmlinux or a module
		default:
			continue
		}
		target := p.Meta.Target
		st, err := os.Stat(target)
		if target == "" || warned[target] || err != nil {
			continue
		}
		if slices.ContainsFunc(mapped, func(m os.FileInfo) bool { return os.SameFile(m, st) }) {
			continue
		}
		warned[target] = true
		later := "unless the process loads it later"
		if r.opts.Follow {
			later += ", or a process it starts runs it"
		}
		r.warn(fmt.Sprintf("process %d (-p) does not map %s: probe %s will record none of its events, %s", pid, target, p.Meta.Name, later))
	}
}

// parseProbes parses the probe specs, expands their wildcards and names
// them, and returns the resolver that resolves them.
func (r *recorder) parseProbes() ([]*probespec.Spec, []string, *resolve.Resolver, error) {
	o := &r.opts
	specs := make([]*probespec.Spec, len(o.Probes))
	for i, text := range o.Probes {
		s, err := probespec.Parse(text)
		if err != nil {
			return nil, nil, nil, usage.Wrap(err)
		}
		specs[i] = s
	}
	procFilter, err := resolve.ProcessPredicate(o.PIDs, o.Comms)
	if err != nil {
		return nil, nil, nil, usage.Wrap(err)
	}
	res := &resolve.Resolver{PID: o.PID, Warn: r.warn, DebugDirs: elfsym.DebugDirs(o.DebugDirs), ProcPredicate: procFilter}
	typed := specs
	if specs, err = resolve.ExpandWildcards(specs, res.TracefsDir); err != nil {
		return nil, nil, nil, err
	}
	names, err := probespec.Names(specs)
	if err != nil {
		return nil, nil, nil, usage.Wrap(err)
	}
	if r.rates, err = probeRates(o, typed, specs, names); err != nil {
		return nil, nil, nil, err
	}
	if len(specs) > format.MaxProbes || len(specs) > bpf.MaxProbes {
		return nil, nil, nil, usage.Errorf("%d probes: at most %d", len(specs), bpf.MaxProbes)
	}
	return specs, names, res, nil
}

// checkHost checks privileges and BPF features, and that a -p process
// exists.
func (r *recorder) checkHost() error {
	if err := host.CheckPrivileges(); err != nil {
		return err
	}
	// Before the feature probes, which create maps too.
	if err := host.RaiseMemlock(); err != nil {
		return err
	}
	if err := bpf.CheckFeatures(); err != nil {
		return err
	}
	if pid := r.opts.PID; pid != 0 {
		if err := unix.Kill(pid, 0); err == unix.ESRCH {
			return fmt.Errorf("no process %d (-p)", pid)
		}
	}
	return nil
}

// prepare starts the command in its gate, opens the output and decides
// whether new processes are followed: nothing is attached yet.
func (r *recorder) prepare() error {
	o := &r.opts
	// The command's process exists from here on, blocked in its gate, so
	// that its pid can filter tracepoints and uprobes.
	r.target = o.PID
	if len(o.Command) > 0 {
		if err := r.startCommand(); err != nil {
			return err
		}
	}

	// The output is opened now, before anything is attached; the capture
	// starts in it once every probe is (see arm).
	if o.Flight == 0 {
		var err error
		if r.outFile, err = createOutput(o.Output, o); err != nil {
			return fmt.Errorf("output: %w", err)
		}
		if err := o.Owner.give(r.outFile); err != nil {
			return fmt.Errorf("output: %w", err)
		}
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
	return nil
}

// startCommand starts Options.Command blocked in its gate and makes it the
// target.
func (r *recorder) startCommand() error {
	o := &r.opts
	exe := o.GateExe
	if exe == "" {
		var err error
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
	var err error
	if r.gate, err = startGate(exe, o.Command, stdin, stdout, stderr); err != nil {
		var notRun *exec.Error // from the search for the command
		if errors.As(err, &notRun) {
			return &CommandError{Err: err}
		}
		return err
	}
	r.target = r.gate.pid()
	return nil
}

// readKernelSymbols creates the stack table when a probe records stacks,
// and starts reading kallsyms when one records kernel stacks; the channel
// it returns is closed once that is done (at once without kernel stacks).
// kallsyms is read while the programs load, not in the drain loop at the
// first kernel stack: the stall filled the rings of a loaded host.
func (r *recorder) readKernelSymbols() <-chan struct{} {
	kstacks := false
	for _, p := range r.probes {
		kstacks = kstacks || p.KStack > 0
		if (p.UStack > 0 || p.KStack > 0) && r.stacks == nil {
			r.stacks = stacktable.New(stacktable.Options{DebugDirs: elfsym.DebugDirs(r.opts.DebugDirs)})
		}
	}
	kernelRead := make(chan struct{})
	if kstacks {
		go func() { r.stacks.ReadKernelSymbols(); close(kernelRead) }()
	} else {
		close(kernelRead)
	}
	return kernelRead
}

// openSideband opens the kernel's side-band records of mappings, execs,
// forks and exits (package record/sideband) when a probe records user
// stacks: the stack table takes from them the mappings of a process that
// exited, or exec'd, before it read /proc/PID/maps (see package
// stacktable). It is opened once every probe is attached, as the capture
// starts and before the command's gate opens: the drain loop reads it from
// then on, and what it would have collected while the programs loaded (the
// mmaps of every process of the host, for events not recorded) could only
// have filled its rings. Without it (perf_event_open refused:
// perf_event_paranoid, no CAP_PERFMON), the recording goes on as before,
// with a warning.
func (r *recorder) openSideband() {
	ustacks := false
	for _, p := range r.probes {
		ustacks = ustacks || p.UStack > 0
	}
	if !ustacks || r.stacks == nil {
		return
	}
	ncpu, err := ebpf.PossibleCPU()
	if err == nil {
		buildIDs, _ := bpf.HaveMmapBuildID()
		r.sideband, err = sideband.Open(sideband.Options{CPUs: ncpu, BuildID: buildIDs})
	}
	if err != nil {
		r.warn(fmt.Sprintf("the user stacks of a process that exits or execs before its mappings are read may not symbolize: %v", err))
	}
}

// load loads the BPF programs, which hold only the code that these probes'
// specs run, and opens the ring buffer reader.
func (r *recorder) load(ring uint32, threadBases bool) error {
	o := &r.opts
	// A recorder of user stacks reads a process's mappings when its first
	// comm record comes (see drainer.sample): at once, so that a short
	// command is still there.
	wakeOnComm := false
	var bpfSpecs []*bpf.ProbeSpec
	var tpEnd uint32 // the shortest tracepoint record's end
	for _, p := range r.probes {
		wakeOnComm = wakeOnComm || p.UStack > 0
		for i := range p.Atts {
			bpfSpecs = append(bpfSpecs, &p.Atts[i].Spec)
			if a := &p.Atts[i]; a.Category != "" && (tpEnd == 0 || a.TPEnd < tpEnd) {
				tpEnd = a.TPEnd
			}
		}
	}
	uses := bpf.UsesOf(bpfSpecs...)
	uses.TPContextEnd = tpEnd
	var err error
	if r.objs, err = bpf.Load(bpf.Options{RingSize: ring, FilterTgid: uint32(r.target), WakeupBytes: uint64(ring) / 4,
		ThreadBases: threadBases, Follow: r.follow, NoCookies: o.NoCookies, WakeOnComm: wakeOnComm, Uses: &uses,
		Probes: len(r.probes)}); err != nil {
		return err
	}
	if r.rd, err = r.objs.NewRing(); err != nil {
		return fmt.Errorf("ring buffer reader: %w", err)
	}
	return nil
}

// startCapture starts the capture once every probe is attached, so that
// its start is the window's (see arm), and the drainer that fills it; it
// waits for kallsyms (kernelRead) if the drainer needs the stack table.
func (r *recorder) startCapture(ring uint32, base string, kernelRead <-chan struct{}) error {
	o := &r.opts
	var err error
	wo := format.WriterOptions{Compression: o.Compression}
	if o.Flight > 0 {
		r.w, err = format.NewFlightWriter(r.meta(ring), wo, format.FlightOptions{Window: o.Flight.Nanoseconds(), MaxBytes: o.FlightSize})
	} else {
		r.w, err = format.NewFileWriter(keepOnClose{r.outFile}, r.meta(ring), wo)
	}
	if err != nil {
		return fmt.Errorf("output: %w", err)
	}
	r.limit = newSizeLimit(r.w, o, base)
	r.d = newDrainer(r.rd, r.w, r.objs, r.probes, r.objs.ForgetComms)
	if o.Flight > 0 {
		var counts func() kernelCounts
		if r.countsKept() {
			counts = func() kernelCounts {
				c, _ := r.readCounts() // an error shows at the end, in countFiltered
				return c
			}
		}
		if r.flight, err = newFlight(r.w, o, r.w.Meta().ProbeNames(), counts); err != nil {
			return err
		}
		r.d.flight = r.flight
	}
	if r.stacks != nil {
		<-kernelRead
		r.d.stacks = r.stacks
		if r.openSideband(); r.sideband != nil {
			r.stacks.UseSideband(r.sideband)
		}
		if r.gate != nil {
			// The command's gate runs this binary until the recording
			// starts, then execs the command: the stacks it may take
			// before the exec resolve in these mappings, read while it
			// waits.
			r.stacks.Snapshot(uint32(r.target), boottime.Now())
		}
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
	if id, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		m.Extra[format.ExtraBootID] = strings.TrimSpace(string(id))
	}
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
		m.Probes = append(m.Probes, p.Meta)
		if p.DebugFile != "" {
			m.Extra["debug_file:"+p.Meta.Name] = p.DebugFile
		}
	}
	b1 := boottime.Now()
	m.StartWall = time.Now()
	b2 := boottime.Now()
	m.StartBoot = b1 + (b2-b1)/2
	m.Window = &format.Window{Start: b2} // the window opens after this (arm: its start then)
	return m
}
