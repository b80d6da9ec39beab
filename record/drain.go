package record

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/boottime"
	"github.com/bpftape/bpftape/record/resolve"
)

// LostInterval is how often the drain loop reads the per-CPU lost counters
// and writes what they grew by as loss records.
const LostInterval = 100 * time.Millisecond

// IdleDrainInterval is how long the drain loop lets the ring wait, at most,
// once nothing arrived: it doubles from bpf.DrainInterval while the rings
// stay empty and drops back at the first record. Each wake-up of an idle
// recorder cost 70-110 µs of CPU (7-11 ms/s at every 10 ms); a burst still
// wakes it at once through the programs' forced wake-ups.
const IdleDrainInterval = 100 * time.Millisecond

// lostCounts is the part of the BPF objects the drainer reads lost counts
// from (bpf.Objects.LostCounts, which reads them without a syscall).
type lostCounts interface {
	LostCounts(probeID uint16, dst []uint64) []uint64
}

// drainer is the single goroutine that moves samples from the ring buffer
// to the capture writer. Nothing else touches the writer while it runs.
type drainer struct {
	rd     *bpf.Ring
	w      *format.Writer
	lost   lostCounts
	probes []*resolve.Probe

	h        bpf.Header // of the sample being decoded
	ev       format.Event
	events   []uint64   // per probe
	lostN    []uint64   // per probe
	lostPrev [][]uint64 // per probe, per CPU: counter values already written
	perCPU   []uint64

	// stacks builds the capture's stack table; ustacks and kstacks hold,
	// by thread, the last stack record, waiting for its sample.
	stacks           stackCollector
	ustacks, kstacks map[uint32]*pendingStack
	noStack          uint64 // samples of a probe with stacks whose stack record was missing
	entryFixed       uint64 // user stacks given back the caller a uprobe at a function's entry misses
	// callerMissing is, per probe, whether a stack has shown that the
	// kernel does not put the caller into its entry stacks (stack).
	callerMissing []bool

	comms                        *commTable
	faults, truncated, malformed uint64
	noComm                       uint64 // samples whose thread no comm record named
	records                      uint64 // ring records read, comm records included
	lastLost                     time.Time
	sinceCheck                   int
	stopping                     atomic.Bool
	// windowEnd is the capture window's end once it closed (the recorder's
	// disarm): loss counts read after it are stamped with it, when they
	// happened at the latest.
	windowEnd atomic.Int64
	limit     func() error // checks Options.MaxSize between batches, if set
	live      Live         // Options.Live, if set
	flight    *flight      // with Options.Flight
}

// newDrainer returns a drainer of rd into w; forget, if not nil, makes the
// programs send every comm again (bpf.Objects.ForgetComms).
func newDrainer(rd *bpf.Ring, w *format.Writer, lost lostCounts, probes []*resolve.Probe, forget func() error) *drainer {
	d := &drainer{rd: rd, w: w, lost: lost, probes: probes, comms: newCommTable(forget),
		events: make([]uint64, len(probes)), lostN: make([]uint64, len(probes)),
		lostPrev: make([][]uint64, len(probes)),
		ustacks:  map[uint32]*pendingStack{}, kstacks: map[uint32]*pendingStack{},
		callerMissing: make([]bool, len(probes))}
	d.ev.Ints = make([]uint64, bpf.MaxArgs+2)
	d.ev.Strs = make([][]byte, bpf.MaxArgs+2)
	return d
}

// stackCollector is what the drainer needs of stacktable.Collector.
type stackCollector interface {
	Add(pid uint32, t int64, kernel bool, frames []uint64) uint64
	Take() *format.StackTable
	Snapshot(pid uint32, t int64)
	Exec(pid uint32, t int64)
	Sync()
}

// pendingStack is a thread's last stack record, for the sample that
// follows it.
type pendingStack struct {
	time   uint64
	probe  uint16
	frames []uint64
}

// stack keeps a stack record until its sample comes. A user stack taken
// by a uprobe on a function's first instruction gets the caller back: the
// function has not pushed its frame pointer yet, so a frame-pointer walk
// goes from it straight to its caller's caller, unless the kernel (6.11 and
// later, on x86-64, or one with the change backported) added the return
// address at the stack pointer itself, which the record carries
// (bpf.StackRecRetaddr). Which it is, the stacks tell, probe by probe: a
// second frame other than the return address says the kernel did not add
// it, for this probe's stacks from then on. The same address there is the
// kernel's, or a call from a recursive function, whose caller returns
// where it does: so once a probe's stacks have shown that the kernel does
// not add it, a recursive stack gets its caller too. (A recording that
// begins inside a recursion, on a kernel that does not add the caller,
// takes its first recursive stacks for the kernel's, a level short, until
// a stack of the probe tells.)
func (d *drainer) stack(raw []byte) {
	h := &d.h
	kernel := h.Flags&bpf.StackRecKernel != 0
	byTID := d.ustacks
	if kernel {
		byTID = d.kstacks
	}
	ps := byTID[h.TID]
	if ps == nil {
		ps = &pendingStack{}
		byTID[h.TID] = ps
	}
	ps.time, ps.probe = h.Time, bpf.StackProbe(raw)
	ps.frames = ps.frames[:0]
	for i := range int(h.Nargs) {
		ps.frames = append(ps.frames, bpf.StackFrame(raw, i))
	}
	if !kernel && h.Flags&bpf.StackRecRetaddr != 0 && len(ps.frames) > 0 && d.missesCaller(ps.probe, ps.frames, bpf.StackRetaddr(raw)) {
		ps.frames = append(ps.frames, 0)
		copy(ps.frames[2:], ps.frames[1:])
		ps.frames[1] = bpf.StackRetaddr(raw)
		d.entryFixed++
	}
}

// missesCaller reports whether an entry stack of probe, frames, lacks the
// caller, whose return address is ret (see stack).
func (d *drainer) missesCaller(probe uint16, frames []uint64, ret uint64) bool {
	missing := len(frames) < 2 || frames[1] != ret
	if int(probe) < len(d.callerMissing) {
		if missing {
			d.callerMissing[probe] = true
		}
		return d.callerMissing[probe]
	}
	return missing
}

// stackID returns the id of the stack that the sample being decoded
// carries in byTID, 0 when its record did not come (the ring was full).
func (d *drainer) stackID(byTID map[uint32]*pendingStack, kernel bool) uint64 {
	h := &d.h
	ps := byTID[h.TID]
	if ps == nil || ps.time != h.Time || ps.probe != h.ProbeID {
		d.noStack++
		return 0
	}
	ps.time = 0
	return d.stacks.Add(h.PID, int64(h.Time), kernel, ps.frames)
}

// run drains until stop has been called and everything submitted before it
// is written, or until the ring or the writer fails.
func (d *drainer) run() error {
	d.lastLost = time.Now()
	interval := bpf.DrainInterval
	for {
		// Drain returns every interval, so that each cycle ends here,
		// and when stop flushes the ring.
		before := d.records
		var mark int64 // every record reserved before is read by Drain's first pass
		if d.live != nil || d.flight != nil {
			mark = boottime.Now()
		}
		err := d.rd.Drain(interval, d.sample)
		if err == nil && (d.live != nil || d.flight != nil) {
			// Staged samples younger than the last flush may still come.
			if c, ok := d.rd.Cutoff(); ok && int64(c) < mark {
				mark = int64(c)
			}
			if d.live != nil {
				d.live.Seen(mark)
			}
			if d.flight != nil && !d.stopping.Load() {
				if err := d.flight.cycle(mark); err != nil {
					return err
				}
			}
		}
		if d.records != before {
			interval = bpf.DrainInterval
		} else {
			interval = min(2*interval, IdleDrainInterval)
		}
		switch {
		case err == nil:
		case errors.Is(err, bpf.ErrRingFlushed):
			if d.stopping.Load() {
				// stop flushed after the probes were detached:
				// everything they submitted has been read.
				return d.readLost()
			}
		default:
			return err
		}
		if err := d.cycle(time.Now()); err != nil {
			return err
		}
	}
}

// stop asks run to finish; call it once no probe is attached any more.
func (d *drainer) stop() error {
	d.stopping.Store(true)
	return d.rd.Flush()
}

func (d *drainer) cycle(now time.Time) error {
	if d.stacks != nil {
		// The side-band's rings fill whether stacks come or not.
		d.stacks.Sync()
	}
	if d.flight != nil && !d.stopping.Load() {
		if err := d.flight.cycle(boottime.Now() - int64(time.Second)); err != nil {
			return err
		}
	}
	if now.Sub(d.lastLost) >= LostInterval {
		d.lastLost = now
		if err := d.readLost(); err != nil {
			return err
		}
	}
	if err := d.w.Tick(now); err != nil || d.limit == nil {
		return err
	}
	if d.stopping.Load() {
		// The window is closed: what is left in the rings goes into the
		// current part rather than start one that would stay (nearly) empty.
		return nil
	}
	return d.limit()
}

// checkEvery is how many samples the drainer appends, at most, between
// two cycles (Tick, the size limit).
const checkEvery = 4096

// sample decodes one ring record into the reused event and appends it.
func (d *drainer) sample(raw []byte) error {
	d.records++
	h := &d.h
	err := h.Decode(raw)
	if err == nil && h.Class == bpf.ClassComm {
		return d.comm(raw)
	}
	if err == nil && h.Class == bpf.ClassStack {
		if d.stacks == nil {
			d.malformed++
			return nil
		}
		d.stack(raw)
		return nil
	}
	if err != nil || int(h.ProbeID) >= len(d.probes) {
		d.malformed++
		return nil
	}
	p := d.probes[h.ProbeID]
	if h.Class != p.Class || int(h.Nargs) != len(p.StrSlot) {
		d.malformed++
		return nil
	}
	ev := &d.ev
	ev.Time = int64(h.Time)
	ev.CPU = h.CPU
	ev.PID = h.PID
	ev.TID = h.TID
	if ev.Comm = d.comms.get(h.TID); ev.Comm == nil {
		d.noComm++
	}
	ev.Probe = h.ProbeID
	for i, slot := range p.StrSlot {
		if slot >= 0 {
			ev.Strs[i] = bpf.Str(raw, int(slot))
		} else {
			ev.Ints[i] = bpf.Arg(raw, i)
		}
	}
	if p.UStack > 0 {
		ev.Ints[p.UStack-1] = d.stackID(d.ustacks, false)
	}
	if p.KStack > 0 {
		ev.Ints[p.KStack-1] = d.stackID(d.kstacks, true)
	}
	if p.UStack > 0 || p.KStack > 0 {
		// The table's entries go with the batch of the first event
		// that needs them, or an earlier one.
		d.w.AddStacks(d.stacks.Take())
	}
	if h.Flags&bpf.FlagReadFault != 0 {
		d.faults++
	}
	if h.Flags&bpf.FlagStrTruncated != 0 {
		d.truncated++
	}
	d.events[h.ProbeID]++
	var alone bool
	if d.flight != nil {
		var err error
		if alone, err = d.flight.cut(ev); err != nil {
			return err
		}
	}
	if err := d.w.Append(ev); err != nil {
		return err
	}
	if alone {
		if err := d.w.Flush(); err != nil {
			return err
		}
	}
	if d.live != nil {
		d.live.Event(ev)
	}
	if d.flight != nil {
		d.flight.event(ev)
	}
	// Under a load the reader never catches up with, Drain would not
	// return for the ticker: check the clock every few thousand samples.
	if d.sinceCheck++; d.sinceCheck >= checkEvery {
		d.sinceCheck = 0
		return d.cycle(time.Now())
	}
	return nil
}

// comm records the name of a thread from its comm record (the record
// d.h holds).
func (d *drainer) comm(raw []byte) error {
	h := &d.h
	comm := bpf.Comm(raw)
	if d.stacks != nil {
		// Take the process's mappings now, while it runs: at a
		// thread's first comm record, and again when an exec may
		// have replaced them. An exec leaves one thread, the
		// leader (tid == pid), under the new name: its first
		// record, or a new name of it, re-reads them. (Its other
		// threads may have been seen before it: a -c command's
		// gate, a Go program, runs several.)
		prev := d.comms.get(h.TID)
		switch {
		case h.TID == h.PID && (prev == nil || string(prev) != string(comm)):
			d.stacks.Exec(h.PID, int64(h.Time))
		case prev == nil:
			d.stacks.Snapshot(h.PID, int64(h.Time))
		}
	}
	return d.comms.set(h.TID, comm)
}

// readLost writes, per probe and CPU, how much the lost counter grew since
// the last look as a loss record.
func (d *drainer) readLost() error {
	now := boottime.Now()
	if end := d.windowEnd.Load(); end > 0 && now > end {
		now = end // read after the window closed: the losses came before
	}
	for id := range d.probes {
		d.perCPU = d.lost.LostCounts(uint16(id), d.perCPU)
		prev := d.lostPrev[id]
		if len(prev) < len(d.perCPU) {
			prev = append(prev, make([]uint64, len(d.perCPU)-len(prev))...)
			d.lostPrev[id] = prev
		}
		for cpu, n := range d.perCPU {
			if n > prev[cpu] {
				if err := d.w.Lost(uint16(id), uint16(cpu), now, n-prev[cpu]); err != nil {
					return err
				}
				if d.live != nil {
					d.live.Lost(uint16(id), uint16(cpu), now, n-prev[cpu])
				}
				d.lostN[id] += n - prev[cpu]
				prev[cpu] = n
			}
		}
	}
	return nil
}
