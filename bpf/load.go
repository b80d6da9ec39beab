package bpf

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// DefaultRingSize returns the per-CPU ring size used when Options.RingSize
// is 0: 8 MiB split over the possible CPUs, 256 KiB to 4 MiB per CPU, so
// that the rings' memory stays bounded on large machines.
func DefaultRingSize() uint32 {
	n, err := ebpf.PossibleCPU()
	if err != nil || n < 1 {
		n = 1
	}
	size := uint32(4 << 20)
	for size > 256<<10 && size*uint32(n) > 8<<20 {
		size /= 2
	}
	return size
}

// WakeupKernelDefault as Options.WakeupBytes submits with flags 0: the kernel
// wakes the reader only when it had already caught up with the ring.
const WakeupKernelDefault = ^uint64(0)

// DrainInterval is how long Drain waits for a wake-up before it looks at the
// ring anyway: samples submitted without a wake-up reach the reader after at
// most this long (staged ones after 2 DrainInterval, see flushEvery).
//
// Each look costs the recorder more than its system calls: a Go thread that
// blocked in one wakes the runtime's sysmon, which then polls every 20 us
// while the pass runs. Recording 1M uprobe events at 167k/s on the 6.18 VM
// (perf stat, recorder on CPU 0), 10 ms took 4,352-4,584 context switches
// and 326-539 ms of CPU, 50 ms 1,816-2,843 and 233-484; recorder CPU per
// event (/proc, 4 rounds alternating) 190, 240, 310, 300 ns against 140,
// 250, 230, 230. At 650k tracepoint events/s, where the rings' wake-ups
// come before the interval ends, both cost 96-106 ns.
const DrainInterval = 50 * time.Millisecond

// Options configure Load. They are compiled into the programs as constants
// (volatile const globals), so changing them means loading again.
type Options struct {
	// RingSize is the size of each CPU's ring buffer in bytes: a power of
	// two and a multiple of the page size. 0 means DefaultRingSize().
	RingSize uint32

	// FilterTgid, if not 0, makes the programs record only events of this
	// process (its tgid in the initial PID namespace): tracepoints and
	// kprobes fire in every process. Uprobes are limited to a process by
	// link.UprobeOptions.PID as well. The recorder's own process is never
	// recorded.
	FilterTgid uint32

	// WakeupBytes is the wake-up policy. Samples are submitted without
	// waking the reader until WakeupBytes were submitted to a CPU's ring
	// since its last forced wake-up (so at least whenever that many wait),
	// then with a forced wake-up, which saves most wake-ups under load; the
	// reader polls every DrainInterval as well, so nothing waits longer
	// than that. 0 wakes the reader on every sample; WakeupKernelDefault
	// leaves it to the kernel. A quarter of RingSize is a good value.
	WakeupBytes uint64

	// WakeOnComm makes a comm record wake the reader at once when it is
	// the first of its process, or the first with a new comm (an exec):
	// a recorder of user stacks must read the process's mappings then,
	// before a short-lived process exits. Comm records of a process
	// already seen with that comm (one goes ahead of a thread's samples
	// whenever its CPU recorded another thread since) wake it no sooner
	// than samples do.
	WakeOnComm bool

	// ThreadBases lets AddrFS and AddrGS operands read the thread's segment
	// base, whose place in task_struct Load then takes from the kernel's BTF
	// (without it such operands record read faults).
	ThreadBases bool

	// Follow records only the processes in Objects.Traced (put the first
	// with Objects.Trace), and TrackFork, once attached, adds every process
	// a traced one starts. Uprobes are then attached system-wide and
	// filtered by the programs; FilterTgid is unused. It needs the
	// kernel's BTF (the place of tgid in task_struct).
	Follow bool

	// Uses, if not nil, is what the recording's specs need (UsesOf): the
	// verifier then skips the code of size classes above Uses.MaxClass,
	// of filters and of stacks that no spec takes, which shortens the
	// load. A spec that needs more is counted lost. nil keeps all of it.
	Uses *Uses

	// NoCookies loads the fallback for kernels without attach cookies
	// (before 5.15) even if this one has them: one copy of the uprobe or
	// tracepoint program per attachment, which holds its spec as load-time
	// constants (see Objects.UprobeProgram). Load picks it by itself on
	// kernels without cookies; forcing it is for tests and for comparing
	// the two.
	NoCookies bool

	// StageBytes is how many bytes of samples a CPU stages before it
	// sends them to its ring in one batch (see Objects.FlushStages): 0
	// means DefaultStageBytes, a negative value sends every sample at once.
	// At most MaxStageBytes. WakeupBytes 0, which wants each sample read
	// at once, turns staging off.
	StageBytes int

	// Probes is how many probe ids the recording uses (0..Probes-1): the
	// lost counters hold that many per CPU. 0 means MaxProbes.
	Probes int
}

// Per-CPU staging (Options.StageBytes). 1024 bytes is 21 samples of two
// args: HelperCost measured a flush every 1024 bytes at 192-219 ns per
// event against 212-232 for every 4096.
const (
	DefaultStageBytes = 1024
	MaxStageBytes     = 3072 // STAGE_MAX_BYTES in bpftape.c
)

// MaxTraced is how many processes Options.Follow can record at once.
const MaxTraced = 65536

// Objects are the loaded programs and maps. Close them when done.
type Objects struct {
	// ProbeUprobe records uprobe, uretprobe and USDT events; attach it
	// with link.Executable.Uprobe/Uretprobe and the cookie of a spec
	// stored by PutSpec. ProbeTracepoint records tracepoint events; attach
	// it with link.Tracepoint and the cookie of a spec stored by PutSpec.
	// Both are nil without cookies (see Cookies): UprobeProgram and
	// TracepointProgram give the program of each attachment then.
	ProbeUprobe     *ebpf.Program
	ProbeTracepoint *ebpf.Program
	// Rings holds a ring buffer of samples per possible CPU, indexed by
	// CPU number; RingMaps are those rings. Read them with NewRing.
	Rings    *ebpf.Map
	RingMaps []*ebpf.Map
	// ProbeSpecs holds one ProbeSpec per attachment, indexed by its spec
	// index: its cookie, or its program's constant without cookies.
	ProbeSpecs *ebpf.Map
	// Lost counts, per CPU and by probe id, samples dropped because the
	// ring was full; see LostCounts.
	Lost *ebpf.Map
	// Filtered counts, per CPU and by probe id, events a probe's filter
	// rejected; see FilteredSamples.
	Filtered *ebpf.Map
	// OwnSwitches counts, per CPU and by probe id, the sched_switch
	// events left out as the recorder's own (SpecSelfSwitch); see
	// OwnSwitchCount. SelfTids holds the recorder's threads: Load puts
	// those it has, the program adds the others it sees.
	OwnSwitches *ebpf.Map
	SelfTids    *ebpf.Map
	// Tokens holds, by probe id, the tokens of the probes with a rate
	// limit (SpecRateLimit), which this process maps (see AddTokens);
	// RateLimited counts, per CPU and by probe id, the events a rate
	// limit rejected (see RateLimitedCount).
	Tokens      *ebpf.Map
	RateLimited *ebpf.Map
	// CommGen is the generation of the comms the CPUs have recorded (a
	// global in .bss); see ForgetComms.
	CommGen *ebpf.Variable
	// CPUState is, per CPU, the thread, comm and generation of the last
	// comm record, and the bytes submitted since the last forced wake-up.
	CPUState *ebpf.Map
	// TrackFork adds the children of traced processes to Traced
	// (Options.Follow); attach it with link.AttachRawTracepoint to
	// sched_process_fork.
	TrackFork *ebpf.Program
	// Traced holds the tgids recorded with Options.Follow.
	Traced *ebpf.Map
	// Armed opens and closes the capture window (see Arm); Tracked and
	// Untracked count the children TrackFork added to Traced and those it
	// found no room for.
	Armed     *ebpf.Variable
	Tracked   *ebpf.Variable
	Untracked *ebpf.Variable

	// cookies is whether the programs take their spec index from the
	// attach cookie (see Cookies).
	cookies bool
	// loadCopy loads another copy of program name that shares every map;
	// with fixed < MaxSpecs, the copy has a .rodata of its own in which
	// fixed_spec is fixed and fixed_spec_data is ps. tpCopies are the
	// further tracepoint programs with cookies (see TracepointProgram),
	// specCopies the programs of the attachments without. globals are the
	// maps of the global variables (.bss, .rodata) and the other maps
	// that copies share and only the programs use (scratch, comm_woken).
	loadCopy   func(name string, fixed uint32, ps *ProbeSpec, attachTo string) (*ebpf.Program, error)
	tpCopies   []*ebpf.Program
	specCopies []*ebpf.Program
	kmulti     *ebpf.Program // see KprobeMultiProgram
	rateCopies int           // specCopies loaded for rate limits with cookies (see RateLimitedCopies)
	// earlyRateLimit is whether the programs are the rate-limited build,
	// which has probe_uprobe_rl and probe_tracepoint_rl.
	earlyRateLimit bool
	globals        []*ebpf.Map
	// flush is flush_stage, run on each CPU by FlushStages; nil without
	// staging. cpus are the CPUs it runs on.
	flush  *ebpf.Program
	cpus   []int
	lost   lostCounters
	tokens tokenCounts
}

// Cookies reports whether the programs take their attachment's spec index
// from its BPF cookie. Without cookies (kernels before 5.15, or
// Options.NoCookies), each attachment has a program of its own whose spec
// is a constant; UprobeProgram and TracepointProgram give the program and
// cookie for each attachment in either case.
func (o *Objects) Cookies() bool { return o.cookies }

// UprobeProgram returns the program that records the uprobe, uretprobe or
// USDT attachment whose spec PutSpec stored at index spec, and the cookie
// to attach it with (link.UprobeOptions.Cookie). With cookies that is
// ProbeUprobe and spec; without, or for a rate-limited spec (see
// RateLimitedCopies), a copy loaded for this attachment alone, which
// shares every map, and 0.
func (o *Objects) UprobeProgram(spec uint32) (*ebpf.Program, uint64, error) {
	name := progUprobe
	if o.rateLimitedCopy(spec) {
		name = progUprobeRL
	} else if o.cookies {
		return o.ProbeUprobe, uint64(spec), nil
	}
	p, err := o.specProgram(name, spec)
	return p, 0, err
}

// RateLimitedCopies is how many attachments of rate-limited specs
// (SpecRateLimit) get a program of their own with attach cookies: a copy
// of the rate-limited build's probe_uprobe_rl or probe_tracepoint_rl with
// the spec as constants, which rejects an event past the limit before
// anything else. Such an event then makes no bpf_get_attach_cookie call
// and no nesting count, which cost it 10-12 ns of 72-75 (a helper call is
// most of that; the empty program runs in 51; bench/README.md, progtime).
// A probe of more attachments than that has the rest share the cookie
// program, where the limit is checked later: each copy is a program load
// and a .rodata of its own. Without cookies every attachment has a copy
// anyway, and every rate-limited one gets the early check.
const RateLimitedCopies = 64

// rateLimitedCopy reports whether the attachment of spec index spec gets a
// copy of a program with the early rate-limit check (see
// RateLimitedCopies), and counts it.
func (o *Objects) rateLimitedCopy(spec uint32) bool {
	if !o.earlyRateLimit || spec >= MaxSpecs || (o.cookies && o.rateCopies >= RateLimitedCopies) {
		return false
	}
	var ps ProbeSpec
	if o.ProbeSpecs.Lookup(spec, &ps) != nil || ps.Flags&SpecRateLimit == 0 {
		return false
	}
	if o.cookies {
		o.rateCopies++
	}
	return true
}

// TracepointProgram returns the program that records the tracepoint
// attachment whose spec PutSpec stored at index spec, and the cookie to
// attach it with (link.TracepointOptions.Cookie); k is how many probes on
// the same tracepoint were attached before. A tracepoint runs a given
// program at most once (the kernel refuses to attach it again: EEXIST):
// with cookies, it is ProbeTracepoint for k == 0 and otherwise copy k,
// loaded on first use, which shares every map; without cookies, or for a
// rate-limited spec (see RateLimitedCopies), a copy loaded for this
// attachment alone, and the cookie 0.
func (o *Objects) TracepointProgram(spec uint32, k int) (*ebpf.Program, uint64, error) {
	if o.rateLimitedCopy(spec) {
		p, err := o.specProgram(progTracepointRL, spec)
		return p, 0, err
	}
	if !o.cookies {
		p, err := o.specProgram(progTracepoint, spec)
		return p, 0, err
	}
	if k == 0 {
		return o.ProbeTracepoint, uint64(spec), nil
	}
	for len(o.tpCopies) < k {
		p, err := o.loadCopy(progTracepoint, fixedSpecCookie, nil, "")
		if err != nil {
			return nil, 0, fmt.Errorf("bpf: load copy %d of the tracepoint program: %w", len(o.tpCopies)+1, err)
		}
		o.tpCopies = append(o.tpCopies, p)
	}
	return o.tpCopies[k-1], uint64(spec), nil
}

// specProgram loads a copy of program name that records spec index spec
// whatever its cookie. The copy holds the spec that PutSpec stored as
// constants, which the verifier reads: it checks only the code that spec
// runs.
func (o *Objects) specProgram(name string, spec uint32) (*ebpf.Program, error) {
	return o.specProgramFor(name, spec, "")
}

// KprobeMultiProgram returns the program for kprobe_multi links
// (link.KprobeMulti, with each function's spec index as its cookie),
// loaded on first use. It needs attach cookies and a kernel with
// kprobe_multi links (HaveKprobeMulti).
func (o *Objects) KprobeMultiProgram() (*ebpf.Program, error) {
	if !o.cookies {
		return nil, errors.New("bpf: kprobe_multi links need attach cookies")
	}
	if o.kmulti == nil {
		p, err := o.loadCopy(progKmulti, fixedSpecCookie, nil, "")
		if err != nil {
			return nil, fmt.Errorf("bpf: load the kprobe_multi program: %w", err)
		}
		o.kmulti = p
	}
	return o.kmulti, nil
}

// PerfEventProgram returns the program that records the samples of a
// profile probe whose spec PutSpec stored at index spec: a copy with its
// spec as constants (perf event links take cookies only from 5.15, and
// through BPF_LINK_CREATE), which shares every map. Attach it to each
// CPU's perf event with AttachPerfEvent.
func (o *Objects) PerfEventProgram(spec uint32) (*ebpf.Program, error) {
	return o.specProgram(progPerfEvent, spec)
}

// FuncProgram returns the fentry (exit false) or fexit program that records
// the attachment on kernel function fn whose spec PutSpec stored at index
// spec: a copy loaded for this attachment alone, with fn as its target and
// its spec as constants (a tracing program's target is fixed at load), which
// shares every map. Attach it with link.AttachTracing. fn may be in a
// module: the kernel's BTF and then the modules' are searched.
func (o *Objects) FuncProgram(spec uint32, fn string, exit bool) (*ebpf.Program, error) {
	name := progFentry
	if exit {
		name = progFexit
	}
	return o.specProgramFor(name, spec, fn)
}

func (o *Objects) specProgramFor(name string, spec uint32, attachTo string) (*ebpf.Program, error) {
	if spec >= MaxSpecs {
		return nil, fmt.Errorf("bpf: spec index %d out of range [0,%d)", spec, MaxSpecs)
	}
	var ps ProbeSpec
	if err := o.ProbeSpecs.Lookup(spec, &ps); err != nil {
		return nil, fmt.Errorf("bpf: lookup spec %d: %w", spec, err)
	}
	if err := ps.Validate(); err != nil {
		return nil, fmt.Errorf("bpf: spec %d (stored by PutSpec?): %w", spec, err)
	}
	p, err := o.loadCopy(name, spec, &ps, attachTo)
	if err != nil {
		if attachTo != "" {
			return nil, fmt.Errorf("bpf: load %s for %s: %w", name, attachTo, err)
		}
		return nil, fmt.Errorf("bpf: load %s for spec %d: %w", name, spec, err)
	}
	o.specCopies = append(o.specCopies, p)
	return p, nil
}

// sharedLoad is a program that loadShared loads with loadCopy into *to.
type sharedLoad struct {
	name string
	to   **ebpf.Program
	err  error
}

// loadShared loads the programs at once, each in a goroutine of its own:
// the kernel verifies a program in the thread that loads it, and the
// uprobe, tracepoint and flush_stage programs took 19, 12 and 8 ms of the
// 170 ms a recorder of 4 probes took to be ready here, one after the other.
// Each goroutine reads the spec and the maps, which loadCopy never writes
// when fixed is fixedSpecCookie; btf.Cache is safe for concurrent use.
func (o *Objects) loadShared(progs []*sharedLoad) error {
	var wg sync.WaitGroup
	for _, p := range progs {
		wg.Go(func() { *p.to, p.err = o.loadCopy(p.name, fixedSpecCookie, nil, "") })
	}
	wg.Wait()
	for _, p := range progs {
		if p.err != nil {
			return p.err
		}
	}
	return nil
}

// The probe programs' names in bpftape.c.
const (
	progFlushStage = "flush_stage"
	progUprobe     = "probe_uprobe"
	progTracepoint = "probe_tracepoint"
	// The rate-limited build's programs for a rate-limited attachment
	// (see RateLimitedCopies).
	progUprobeRL     = "probe_uprobe_rl"
	progTracepointRL = "probe_tracepoint_rl"
	progKmulti       = "probe_kprobe_multi"
	progFentry       = "probe_fentry"
	progFexit        = "probe_fexit"
	progPerfEvent    = "probe_perf_event"
)

// fixedSpecCookie is fixed_spec's value (FIXED_SPEC_COOKIE in bpftape.c)
// when the spec index is the attach cookie.
const fixedSpecCookie = 0xffffffff

// Arm opens (true) or closes (false) the capture window: the programs
// record nothing while it is closed. Arm once every link is attached and
// disarm before the first is closed, and every probe covers the same
// interval.
func (o *Objects) Arm(on bool) error {
	v := uint32(0)
	if on {
		v = 1
	}
	if err := o.Armed.Set(v); err != nil {
		return fmt.Errorf("bpf: set armed: %w", err)
	}
	return nil
}

// Trace adds process tgid to the processes recorded with Options.Follow.
func (o *Objects) Trace(tgid uint32) error {
	if err := o.Traced.Update(tgid, uint8(1), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("bpf: trace process %d: %w", tgid, err)
	}
	return nil
}

// TracedProcesses returns the processes recorded with Options.Follow.
func (o *Objects) TracedProcesses() ([]uint32, error) {
	var (
		tgids []uint32
		tgid  uint32
		one   uint8
	)
	it := o.Traced.Iterate()
	for it.Next(&tgid, &one) {
		tgids = append(tgids, tgid)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("bpf: iterate traced processes: %w", err)
	}
	return tgids, nil
}

// Untrace removes process tgid (one that exited) from the recorded ones.
func (o *Objects) Untrace(tgid uint32) error {
	if err := o.Traced.Delete(tgid); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("bpf: untrace process %d: %w", tgid, err)
	}
	return nil
}

// Children returns how many children of traced processes TrackFork added
// to the traced ones, and how many found no room among the MaxTraced and
// are not recorded.
func (o *Objects) Children() (tracked, untracked uint64, err error) {
	if err := o.Tracked.Get(&tracked); err != nil {
		return 0, 0, fmt.Errorf("bpf: read tracked: %w", err)
	}
	if err := o.Untracked.Get(&untracked); err != nil {
		return 0, 0, fmt.Errorf("bpf: read untracked: %w", err)
	}
	return tracked, untracked, nil
}

// Close releases the programs and maps. Links using the programs stay
// attached until closed themselves.
func (o *Objects) Close() error {
	errs := []error{o.lost.close(), o.tokens.close()}
	for _, c := range append(append([]*ebpf.Program{o.ProbeUprobe, o.ProbeTracepoint, o.TrackFork, o.kmulti, o.flush}, o.tpCopies...), o.specCopies...) {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	for _, m := range append(append([]*ebpf.Map{o.Rings, o.ProbeSpecs, o.Lost, o.Filtered, o.OwnSwitches, o.SelfTids, o.Tokens, o.RateLimited, o.CPUState, o.Traced}, o.RingMaps...), o.globals...) {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}

// ForgetComms makes every CPU record the comm of its current thread again
// before its next sample, so that user space may forget the comms it holds.
func (o *Objects) ForgetComms() error {
	var gen uint64
	if err := o.CommGen.Get(&gen); err != nil {
		return fmt.Errorf("bpf: read comm_gen: %w", err)
	}
	if err := o.CommGen.Set(gen + 1); err != nil {
		return fmt.Errorf("bpf: update comm_gen: %w", err)
	}
	return nil
}

// Load checks the kernel features bpftape needs, then loads the programs
// and maps configured by opts. Samples carry no comm: a CPU sends a comm
// record only when the thread it records or that thread's comm changed; the
// comm is read at its offset in task_struct, taken from the kernel's BTF,
// with plain loads from bpf_get_current_task_btf's pointer (5.11; before
// it, or with BPFTAPE_NO_TASK_BTF=1 for benchmarks, with
// bpf_probe_read_kernel; without BTF, with bpf_get_current_comm). On a kernel without
// attach cookies, or with opts.NoCookies, the uprobe and tracepoint
// programs are loaded per attachment instead (see Objects.Cookies).
//
// A probe with a rate limit (Uses.RateLimit), or no Uses (everything),
// loads the build of the programs with the rate limits' code (bpftaperl);
// every other recording the build without it, which costs the verifier
// less (see bpftape.c).
func Load(opts Options) (*Objects, error) {
	if opts.Uses == nil || opts.Uses.RateLimit {
		return loadFrom(loadBpftaperl, opts)
	}
	return loadFrom(loadBpftape, opts)
}

// loadFrom is Load with the collection spec from loadSpec (tests patch it).
func loadFrom(loadSpec func() (*ebpf.CollectionSpec, error), opts Options) (*Objects, error) {
	size := opts.RingSize
	if size == 0 {
		size = DefaultRingSize()
	}
	page := uint32(os.Getpagesize())
	if size&(size-1) != 0 || size%page != 0 {
		return nil, fmt.Errorf("bpf: ring size %d is not a power of two multiple of the page size %d", size, page)
	}
	// The kernel's BTF (where task_struct keeps the comm) is parsed while
	// the collection spec is: 33-39 ms and 24-30 ms here, one after the
	// other before.
	go kernelTask()
	if err := CheckFeatures(); err != nil {
		return nil, err
	}

	spec, err := loadSpec()
	if err != nil {
		return nil, err
	}
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, fmt.Errorf("bpf: possible CPUs: %w", err)
	}
	rings := spec.Maps[bpftapeMapRings]
	rings.MaxEntries = uint32(ncpu)
	rings.InnerMap.MaxEntries = size
	stride := uint32(MaxProbes)
	if opts.Probes > 0 && opts.Probes < MaxProbes {
		stride = uint32(opts.Probes)
	}
	spec.Maps[bpftapeMapLost].MaxEntries = stride * uint32(ncpu)
	spec.Maps[bpftapeMapTokens].MaxEntries = stride
	if err := spec.Variables[bpftapeVarLostStride].Set(stride); err != nil {
		return nil, fmt.Errorf("bpf: set lost_stride: %w", err)
	}
	if err := spec.Variables[bpftapeVarFilterTgid].Set(opts.FilterTgid); err != nil {
		return nil, fmt.Errorf("bpf: set filter_tgid: %w", err)
	}
	if err := spec.Variables[bpftapeVarSelfTgid].Set(uint32(os.Getpid())); err != nil {
		return nil, fmt.Errorf("bpf: set self_tgid: %w", err)
	}
	if err := spec.Variables[bpftapeVarWakeupBytes].Set(opts.WakeupBytes); err != nil {
		return nil, fmt.Errorf("bpf: set wakeup_bytes: %w", err)
	}
	stage := opts.StageBytes
	if stage == 0 {
		stage = DefaultStageBytes
	}
	staging := stage > 0 && opts.WakeupBytes != 0 && haveRunOnCPU() == nil
	if stage > MaxStageBytes {
		return nil, fmt.Errorf("bpf: stage of %d bytes: at most %d", stage, MaxStageBytes)
	}
	if !staging {
		stage = 0
	}
	if err := spec.Variables[bpftapeVarStageBytes].Set(uint32(stage)); err != nil {
		return nil, fmt.Errorf("bpf: set stage_bytes: %w", err)
	}
	if u := opts.Uses; u != nil {
		for name, v := range map[string]uint32{
			bpftapeVarMaxClass: uint32(u.MaxClass), bpftapeVarUseFilters: b2u(u.Filters), bpftapeVarUseStacks: b2u(u.Stacks),
			bpftapeVarTpCtxEnd: u.TPContextEnd, bpftapeVarUseRateLimit: b2u(u.RateLimit),
		} {
			if name == bpftapeVarUseRateLimit && spec.Variables[name] == nil {
				continue // the build without rate limits (see Load)
			}
			if err := spec.Variables[name].Set(v); err != nil {
				return nil, fmt.Errorf("bpf: set %s: %w", name, err)
			}
		}
	}
	if opts.WakeOnComm {
		if err := spec.Variables[bpftapeVarWakeOnComm].Set(uint32(1)); err != nil {
			return nil, fmt.Errorf("bpf: set wake_on_comm: %w", err)
		}
	} else {
		spec.Maps[bpftapeMapCommWoken].MaxEntries = 1 // unused
	}
	if off, err := TaskCommOffset(); err == nil {
		if err := spec.Variables[bpftapeVarTaskCommOff].Set(off); err != nil {
			return nil, fmt.Errorf("bpf: set task_comm_off: %w", err)
		}
		if ok, _ := HaveTaskBTF(); ok && os.Getenv("BPFTAPE_NO_TASK_BTF") == "" {
			if err := spec.Variables[bpftapeVarTaskBtf].Set(uint32(1)); err != nil {
				return nil, fmt.Errorf("bpf: set task_btf: %w", err)
			}
		}
	}
	traced := spec.Maps[bpftapeMapTraced]
	traced.MaxEntries = 1 // unused
	if opts.Follow {
		off, err := TaskTgidOffset()
		if err != nil {
			return nil, fmt.Errorf("bpf: following child processes: %w", err)
		}
		traced.MaxEntries = MaxTraced
		if err := spec.Variables[bpftapeVarFollow].Set(uint32(1)); err != nil {
			return nil, fmt.Errorf("bpf: set follow: %w", err)
		}
		if err := spec.Variables[bpftapeVarTaskTgidOff].Set(off); err != nil {
			return nil, fmt.Errorf("bpf: set task_tgid_off: %w", err)
		}
	}
	if opts.ThreadBases {
		fs, gs, err := ThreadBaseOffsets()
		if err != nil {
			return nil, err
		}
		if err := spec.Variables[bpftapeVarTaskFsbaseOff].Set(fs); err != nil {
			return nil, fmt.Errorf("bpf: set task_fsbase_off: %w", err)
		}
		if err := spec.Variables[bpftapeVarTaskGsbaseOff].Set(gs); err != nil {
			return nil, fmt.Errorf("bpf: set task_gsbase_off: %w", err)
		}
	}

	// The maps and track_fork first, then the probe programs as copies
	// that share the maps (see loadCopy).
	var loaded struct {
		Rings      *ebpf.Map      `ebpf:"rings"`
		ProbeSpecs *ebpf.Map      `ebpf:"probe_specs"`
		Lost       *ebpf.Map      `ebpf:"lost"`
		Filtered   *ebpf.Map      `ebpf:"filtered"`
		OwnSw      *ebpf.Map      `ebpf:"own_switches"`
		Tokens     *ebpf.Map      `ebpf:"tokens"`
		RateLim    *ebpf.Map      `ebpf:"rate_limited"`
		SelfTids   *ebpf.Map      `ebpf:"self_tids"`
		CommWoken  *ebpf.Map      `ebpf:"comm_woken"`
		Samples    *ebpf.Map      `ebpf:"sample_scratch"`
		Stages     *ebpf.Map      `ebpf:"stages"`
		ExprOut    *ebpf.Map      `ebpf:"expr_out"`
		CPUState   *ebpf.Map      `ebpf:"cpu_state"`
		Traced     *ebpf.Map      `ebpf:"traced"`
		Scratch    *ebpf.Map      `ebpf:"stack_scratch"`
		Bss        *ebpf.Map      `ebpf:".bss"`
		Rodata     *ebpf.Map      `ebpf:".rodata"`
		TrackFork  *ebpf.Program  `ebpf:"track_fork"`
		Armed      *ebpf.Variable `ebpf:"armed"`
		CommGen    *ebpf.Variable `ebpf:"comm_gen"`
		Tracked    *ebpf.Variable `ebpf:"tracked"`
		Untracked  *ebpf.Variable `ebpf:"untracked"`
	}
	if err := spec.LoadAndAssign(&loaded, nil); err != nil {
		return nil, loadError(err)
	}
	objs := &Objects{
		Rings: loaded.Rings, ProbeSpecs: loaded.ProbeSpecs, Lost: loaded.Lost, Filtered: loaded.Filtered, CommGen: loaded.CommGen,
		OwnSwitches: loaded.OwnSw, SelfTids: loaded.SelfTids, Tokens: loaded.Tokens, RateLimited: loaded.RateLim,
		CPUState: loaded.CPUState, Traced: loaded.Traced, TrackFork: loaded.TrackFork,
		Armed: loaded.Armed, Tracked: loaded.Tracked, Untracked: loaded.Untracked,
		globals: []*ebpf.Map{loaded.Bss, loaded.Rodata, loaded.Scratch, loaded.Samples, loaded.ExprOut, loaded.Stages, loaded.CommWoken},
	}
	if objs.lost, err = mapLostCounters(objs.Lost, stride, ncpu); err != nil {
		objs.Close()
		return nil, err
	}
	if objs.tokens, err = mapTokenCounts(objs.Tokens, stride); err != nil {
		objs.Close()
		return nil, err
	}
	if err := objs.addSelfThreads(); err != nil {
		objs.Close()
		return nil, err
	}
	if staging {
		if objs.cpus, err = onlineCPUs(); err != nil {
			objs.Close()
			return nil, err
		}
	}
	objs.cookies = useCookies(opts.NoCookies, HaveAttachCookies)
	objs.earlyRateLimit = spec.Programs[progUprobeRL] != nil && spec.Programs[progTracepointRL] != nil
	btfCache := btf.NewCache()
	objs.loadCopy = func(name string, fixed uint32, ps *ProbeSpec, attachTo string) (*ebpf.Program, error) {
		shared := map[string]*ebpf.Map{
			bpftapeMapRings: objs.Rings, bpftapeMapProbeSpecs: objs.ProbeSpecs, bpftapeMapLost: objs.Lost,
			bpftapeMapCpuState: objs.CPUState, bpftapeMapTraced: objs.Traced,
			bpftapeMapStackScratch: loaded.Scratch, bpftapeMapFiltered: objs.Filtered,
			bpftapeMapOwnSwitches: objs.OwnSwitches, bpftapeMapSelfTids: objs.SelfTids, bpftapeMapCommWoken: loaded.CommWoken,
			bpftapeMapTokens: objs.Tokens, bpftapeMapRateLimited: objs.RateLimited,
			bpftapeMapSampleScratch: loaded.Samples, bpftapeMapExprOut: loaded.ExprOut, bpftapeMapStages: loaded.Stages,
			".bss": loaded.Bss, ".rodata": loaded.Rodata,
		}
		cs := spec
		if fixed != fixedSpecCookie {
			// A .rodata of its own: the rest of it as set above.
			cs = spec.Copy()
			if err := cs.Variables[bpftapeVarFixedSpec].Set(fixed); err != nil {
				return nil, fmt.Errorf("set fixed_spec: %w", err)
			}
			if err := cs.Variables[bpftapeVarFixedSpecData].Set(ps); err != nil {
				return nil, fmt.Errorf("set fixed_spec_data: %w", err)
			}
			delete(shared, ".rodata")
		}
		if attachTo != "" {
			if cs == spec {
				cs = spec.Copy()
			}
			cs.Programs[name].AttachTo = attachTo
		}
		// One BTF cache for every copy: a fentry copy's target is looked
		// up in the kernel's BTF, which is then decoded once.
		co := &ebpf.CollectionOptions{MapReplacements: shared, Cache: btfCache}
		if verifierStats {
			co.Programs.LogLevel = ebpf.LogLevelStats
		}
		if cs.Programs[name] == nil {
			return nil, fmt.Errorf("no program %s to copy", name)
		}
		// LoadAndAssign loads only what its struct names: a struct with
		// one field tagged with this program's name.
		one := reflect.New(reflect.StructOf([]reflect.StructField{{
			Name: "P", Type: reflect.TypeOf((*ebpf.Program)(nil)), Tag: reflect.StructTag(`ebpf:"` + name + `"`),
		}}))
		err := cs.LoadAndAssign(one.Interface(), co)
		prog, _ := one.Elem().Field(0).Interface().(*ebpf.Program)
		if err != nil {
			return nil, loadError(err)
		}
		if verifierStats {
			logVerifierStats(name, prog.VerifierLog)
		}
		return prog, nil
	}
	var shared []*sharedLoad
	if objs.cookies {
		shared = append(shared, &sharedLoad{name: progUprobe, to: &objs.ProbeUprobe},
			&sharedLoad{name: progTracepoint, to: &objs.ProbeTracepoint})
	}
	if staging {
		shared = append(shared, &sharedLoad{name: progFlushStage, to: &objs.flush})
	}
	if err := objs.loadShared(shared); err != nil {
		objs.Close()
		return nil, err
	}
	keys, fds := make([]uint32, ncpu), make([]uint32, ncpu)
	for cpu := range ncpu {
		m, err := ebpf.NewMap(rings.InnerMap)
		if err != nil {
			objs.Close()
			return nil, fmt.Errorf("bpf: create ring of CPU %d: %w", cpu, err)
		}
		objs.RingMaps = append(objs.RingMaps, m)
		keys[cpu], fds[cpu] = uint32(cpu), uint32(m.FD())
	}
	// One batch: every update of a map-in-map waits for running programs
	// (synchronize_rcu_expedited, ~14 ms here), a batch waits once.
	if _, err := objs.Rings.BatchUpdate(keys, fds, nil); err != nil {
		for cpu, m := range objs.RingMaps { // kernels without batch ops
			if err = objs.Rings.Put(uint32(cpu), m); err != nil {
				break
			}
		}
		if err != nil {
			objs.Close()
			return nil, fmt.Errorf("bpf: install the CPUs' rings: %w", err)
		}
	}
	return objs, nil
}

// loadError wraps an error of loading the programs, with the verifier's
// log in full.
func loadError(err error) error {
	var verr *ebpf.VerifierError
	if errors.As(err, &verr) {
		return fmt.Errorf("bpf: load: %+v", verr)
	}
	return fmt.Errorf("bpf: load: %w", err)
}

// PutSpec validates s and stores it as the spec of the attachment whose
// cookie is cookie (0..MaxSpecs-1), its spec index. Store it before
// attaching (events of an attachment without a spec are dropped) and,
// without cookies, before UprobeProgram or TracepointProgram, which load
// it into the attachment's program.
func (o *Objects) PutSpec(cookie uint32, s *ProbeSpec) error {
	if cookie >= MaxSpecs {
		return fmt.Errorf("bpf: cookie %d out of range [0,%d)", cookie, MaxSpecs)
	}
	if err := s.Validate(); err != nil {
		return fmt.Errorf("bpf: probe spec for cookie %d: %w", cookie, err)
	}
	if uint32(s.ProbeId) >= o.lost.stride {
		return fmt.Errorf("bpf: probe spec for cookie %d: probe id %d out of range [0,%d) (Options.Probes)", cookie, s.ProbeId, o.lost.stride)
	}
	if err := o.ProbeSpecs.Put(cookie, s); err != nil {
		return fmt.Errorf("bpf: put spec %d: %w", cookie, err)
	}
	return nil
}

// LostSamples returns how many samples of probe probeID were dropped because
// the ring buffer was full, summed over CPUs.
func (o *Objects) LostSamples(probeID uint16) (uint64, error) {
	var sum uint64
	for _, n := range o.lost.read(probeID, nil) {
		sum += n
	}
	return sum, nil
}

// FilteredSamples returns how many events of probe probeID its filter
// rejected (ProbeSpec.Pred), summed over CPUs.
func (o *Objects) FilteredSamples(probeID uint16) (uint64, error) {
	return sumPerCPU(o.Filtered, "filtered", probeID)
}

// OwnSwitchCount returns how many sched_switch events of probe probeID
// (SpecSelfSwitch) were left out as the recorder's own: switches between
// its threads and the idle task, or among its threads. Summed over CPUs.
func (o *Objects) OwnSwitchCount(probeID uint16) (uint64, error) {
	return sumPerCPU(o.OwnSwitches, "own_switches", probeID)
}

// MaxSelfThreads is how many of the recorder's threads the programs know
// (SpecSelfSwitch); the switches of further ones are recorded.
const MaxSelfThreads = 1024 // MAX_SELF_TIDS in bpftape.c

// addSelfThreads puts this process's threads in SelfTids, for
// SpecSelfSwitch; the program adds those it starts later as it sees them
// switched out.
func (o *Objects) addSelfThreads() error {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("bpf: the recorder's threads: %w", err)
	}
	for i, e := range ents {
		tid, err := strconv.ParseUint(e.Name(), 10, 32)
		if err != nil || i >= MaxSelfThreads {
			continue
		}
		if err := o.SelfTids.Update(uint32(tid), uint8(1), ebpf.UpdateAny); err != nil {
			return fmt.Errorf("bpf: add thread %d to self_tids: %w", tid, err)
		}
	}
	return nil
}

func sumPerCPU(m *ebpf.Map, name string, probeID uint16) (uint64, error) {
	var perCPU []uint64
	if err := m.Lookup(uint32(probeID), &perCPU); err != nil {
		return 0, fmt.Errorf("bpf: lookup %s[%d]: %w", name, probeID, err)
	}
	var sum uint64
	for _, n := range perCPU {
		sum += n
	}
	return sum, nil
}

// Uses is what a recording's specs need of the program (Options.Uses).
type Uses struct {
	MaxClass  uint8 // the largest SizeClass
	Filters   bool  // a spec has a filter (Npred > 0)
	Stacks    bool  // a spec records a kernel or user stack
	RateLimit bool  // a spec has a rate limit (SpecRateLimit)

	// TPContextEnd is the end of the shortest record among the
	// tracepoints attached (tracefs format: the last field's offset +
	// size; the caller sets it, UsesOf does not know the records). The
	// tracepoint program loads the aligned fields of the record's words
	// that end by it directly, and reads the others with
	// bpf_probe_read_kernel; 0 reads them all so. A larger value makes
	// the kernel refuse to attach the program to the shorter record.
	TPContextEnd uint32
}

// UsesOf is what specs need.
func UsesOf(specs ...*ProbeSpec) Uses {
	var u Uses
	for _, s := range specs {
		u.MaxClass = max(u.MaxClass, s.SizeClass)
		u.Filters = u.Filters || s.Npred > 0
		u.Stacks = u.Stacks || s.Kstack > 0 || s.Ustack > 0
		u.RateLimit = u.RateLimit || s.Flags&SpecRateLimit != 0
	}
	return u
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// verifierStats (BPFTAPE_VERIFIER_STATS=1) prints, for every program
// loaded, the verifier's count of the instructions it processed: how close
// a kernel's verifier comes to its limit of a million, which differs from
// kernel to kernel (make vmtest's guests print it).
var verifierStats = os.Getenv("BPFTAPE_VERIFIER_STATS") == "1"

// logVerifierStats writes the statistics line of a verifier log to stderr.
func logVerifierStats(name, log string) {
	for _, l := range strings.Split(log, "\n") {
		if strings.HasPrefix(l, "processed ") {
			fmt.Fprintf(os.Stderr, "bpftape: verifier: %s: %s\n", name, l)
		}
	}
}
