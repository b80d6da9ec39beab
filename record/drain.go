package record

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
)

// LostInterval is how often the drain loop reads the per-CPU lost counters
// and writes what they grew by as loss records.
const LostInterval = 100 * time.Millisecond

// lostMap is the part of the BPF objects the drainer reads lost counts from.
type lostMap interface {
	Lookup(key, valueOut any) error
}

// drainer is the single goroutine that moves samples from the ring buffer
// to the capture writer. Nothing else touches the writer while it runs.
type drainer struct {
	rd     *ringbuf.Reader
	w      *format.Writer
	lost   lostMap
	probes []*probe

	ev       format.Event
	events   []uint64   // per probe
	lostN    []uint64   // per probe
	lostPrev [][]uint64 // per probe, per CPU: counter values already written
	perCPU   []uint64

	faults, truncated, malformed uint64
	lastLost                     time.Time
	sinceCheck                   int
	stopping                     atomic.Bool
	limit                        func() error // checks Options.MaxSize between batches, if set
}

func newDrainer(rd *ringbuf.Reader, w *format.Writer, lost lostMap, probes []*probe) *drainer {
	d := &drainer{rd: rd, w: w, lost: lost, probes: probes,
		events: make([]uint64, len(probes)), lostN: make([]uint64, len(probes)),
		lostPrev: make([][]uint64, len(probes))}
	d.ev.Ints = make([]uint64, bpf.MaxArgs)
	d.ev.Strs = make([][]byte, bpf.MaxArgs)
	return d
}

// run drains until stop has been called and everything submitted before it
// is written, or until the ring or the writer fails.
func (d *drainer) run() error {
	d.lastLost = time.Now()
	for {
		// Drain returns whenever someone calls rd.Flush: the ticker does
		// every DrainInterval, so that each cycle ends here.
		if err := bpf.Drain(d.rd, bpf.DrainInterval, d.sample); err != nil {
			return err
		}
		if d.stopping.Load() {
			// The Flush that ended this Drain may predate the
			// detaching of the probes: flush once more, now that
			// nothing can submit, and read to the end.
			if err := d.rd.Flush(); err != nil {
				return err
			}
			if err := bpf.Drain(d.rd, bpf.DrainInterval, d.sample); err != nil {
				return err
			}
			return d.readLost()
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
	if now.Sub(d.lastLost) >= LostInterval {
		d.lastLost = now
		if err := d.readLost(); err != nil {
			return err
		}
	}
	if err := d.w.Tick(now); err != nil || d.limit == nil {
		return err
	}
	return d.limit()
}

// sample decodes one ring record into the reused event and appends it.
func (d *drainer) sample(raw []byte) error {
	h, err := bpf.DecodeHeader(raw)
	if err != nil || int(h.ProbeID) >= len(d.probes) {
		d.malformed++
		return nil
	}
	p := d.probes[h.ProbeID]
	if h.Class != p.class || int(h.Nargs) != len(p.strSlot) {
		d.malformed++
		return nil
	}
	ev := &d.ev
	ev.Time = int64(h.Time)
	ev.CPU = h.CPU
	ev.PID = h.PID
	ev.TID = h.TID
	ev.Comm = raw[bpf.OffComm : bpf.OffComm+bpf.CommLen]
	ev.Probe = h.ProbeID
	for i, slot := range p.strSlot {
		if slot >= 0 {
			ev.Strs[i] = bpf.Str(raw, int(slot))
		} else {
			ev.Ints[i] = bpf.Arg(raw, i)
		}
	}
	if h.Flags&bpf.FlagReadFault != 0 {
		d.faults++
	}
	if h.Flags&bpf.FlagStrTruncated != 0 {
		d.truncated++
	}
	d.events[h.ProbeID]++
	if err := d.w.Append(ev); err != nil {
		return err
	}
	// Under a load the reader never catches up with, Drain would not
	// return for the ticker: check the clock every few thousand samples.
	if d.sinceCheck++; d.sinceCheck >= 4096 {
		d.sinceCheck = 0
		return d.cycle(time.Now())
	}
	return nil
}

// readLost writes, per probe and CPU, how much the lost counter grew since
// the last look as a loss record.
func (d *drainer) readLost() error {
	now := bootNow()
	for id := range d.probes {
		if err := d.lost.Lookup(uint32(id), &d.perCPU); err != nil {
			return fmt.Errorf("read lost counters: %w", err)
		}
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
				d.lostN[id] += n - prev[cpu]
				prev[cpu] = n
			}
		}
	}
	return nil
}

// bootNow reads CLOCK_BOOTTIME, the clock of bpf_ktime_get_boot_ns.
func bootNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}
