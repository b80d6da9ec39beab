package sideband

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DefaultPages is the size of each CPU's ring, in pages (128 KB with 4 KB
// pages): some 900 mapping records, the exec-time mappings of some 40
// processes, between two reads. An unprivileged reader may lock
// perf_event_mlock_kb (516 KB) per CPU in all.
const DefaultPages = 32

// bitBuildID is perf_event_attr.build_id (Linux 5.12): MMAP2 records carry
// the mapped file's build id instead of its device and inode.
const bitBuildID = unix.CBitFieldMaskBit34

// Options configure Open.
type Options struct {
	// CPUs is the number of possible CPUs: a ring is opened on each of
	// 0..CPUs-1 that is online.
	CPUs int
	// Pages is each ring's size in pages, a power of two; 0 is
	// DefaultPages.
	Pages int
	// BuildID asks for build ids in the mapping records (Linux 5.12; see
	// bpf.HaveMmapBuildID). The kernel still sends the device and inode of
	// a file whose build id it could not read at once.
	BuildID bool
}

// Reader reads the side-band records of every CPU. Not safe for
// concurrent use.
type Reader struct {
	rings    []ring
	parser   parser
	batch    []Record
	scratch  []byte
	addFn    func([]byte) // r.add, made once
	lost     uint64
	bad      uint64
	buildIDs bool
}

// ring is one CPU's event and its mapped ring.
type ring struct {
	fd   int
	mem  []byte
	meta *unix.PerfEventMmapPage
	data []byte
}

// Open opens a dummy software event with its ring on every online CPU,
// recording from now on the executable mappings, execs, forks and exits
// of every process, stamped with the boot clock. It needs what a
// system-wide perf event needs (CAP_PERFMON, or perf_event_paranoid 0 or
// below). Close it when done.
func Open(o Options) (*Reader, error) {
	pages := o.Pages
	if pages == 0 {
		pages = DefaultPages
	}
	if pages < 1 || pages&(pages-1) != 0 {
		return nil, fmt.Errorf("sideband: %d pages per ring: not a power of two", pages)
	}
	if o.CPUs < 1 {
		return nil, errors.New("sideband: no CPUs")
	}
	page := os.Getpagesize()
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_SOFTWARE,
		Config:      unix.PERF_COUNT_SW_DUMMY,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample_type: unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME,
		// Executable mappings only: mmap_data stays off.
		Bits: unix.PerfBitMmap | unix.PerfBitMmap2 | unix.PerfBitComm | unix.PerfBitCommExec | unix.PerfBitTask |
			unix.PerfBitSampleIDAll | unix.PerfBitUseClockID | unix.PerfBitWatermark,
		Clockid: unix.CLOCK_BOOTTIME,
		// Nobody polls the rings (the recorder reads them as it drains):
		// wake-ups only when half full.
		Wakeup: uint32(pages * page / 2),
	}
	if o.BuildID {
		attr.Bits |= bitBuildID
	}
	r := &Reader{}
	r.addFn = r.add
	for cpu := range o.CPUs {
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if errors.Is(err, unix.ENODEV) {
			continue // offline
		}
		if errors.Is(err, unix.EINVAL) && attr.Bits&bitBuildID != 0 && len(r.rings) == 0 {
			// A kernel that does not know build_id: devices and inodes.
			attr.Bits &^= bitBuildID
			fd, err = unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		}
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("sideband: perf_event_open of a dummy event on CPU %d: %w", cpu, err)
		}
		mem, err := unix.Mmap(fd, 0, (1+pages)*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			unix.Close(fd)
			r.Close()
			return nil, fmt.Errorf("sideband: map the ring of CPU %d (%d KB): %w", cpu, pages*page>>10, err)
		}
		meta := (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0]))
		data := mem[page:]
		if off, size := meta.Data_offset, meta.Data_size; size != 0 && off+size <= uint64(len(mem)) && size&(size-1) == 0 {
			data = mem[off : off+size]
		}
		r.rings = append(r.rings, ring{fd: fd, mem: mem, meta: meta, data: data})
	}
	if len(r.rings) == 0 {
		return nil, errors.New("sideband: no CPU is online")
	}
	r.buildIDs = attr.Bits&bitBuildID != 0
	return r, nil
}

// BuildIDs reports whether the kernel took Options.BuildID: the mapping
// records then carry build ids where it could read them.
func (r *Reader) BuildIDs() bool { return r.buildIDs }

// Read calls f with every record the rings hold, in time order, and frees
// their room. The rings are read once each, up to where the kernel had
// written when Read looked: f's records are those of every CPU up to then,
// but for the ones of a record being written at that instant on another
// CPU. f must not keep its argument.
func (r *Reader) Read(f func(*Record)) {
	r.batch = r.batch[:0]
	for i := range r.rings {
		rg := &r.rings[i]
		head := atomic.LoadUint64(&rg.meta.Data_head) // acquire: the records before head are written
		tail := atomic.LoadUint64(&rg.meta.Data_tail)
		if head == tail {
			continue
		}
		var bad bool
		r.scratch, bad = ringRecords(rg.data, tail, head, r.scratch, r.addFn)
		if bad {
			r.bad++
		}
		atomic.StoreUint64(&rg.meta.Data_tail, head) // release: the kernel may write there again
	}
	// Each ring is in time order; a process that moved between CPUs has
	// its records in several.
	slices.SortStableFunc(r.batch, func(a, b Record) int {
		switch {
		case a.Time < b.Time:
			return -1
		case a.Time > b.Time:
			return 1
		}
		return 0
	})
	for i := range r.batch {
		f(&r.batch[i])
	}
}

// add parses one raw record into the batch.
func (r *Reader) add(raw []byte) {
	r.batch = append(r.batch, Record{})
	rec := &r.batch[len(r.batch)-1]
	if !r.parser.parse(raw, rec) {
		r.batch = r.batch[:len(r.batch)-1]
		return
	}
	if rec.Kind == Lost {
		r.lost += rec.Lost
	}
}

// Lost returns how many records the kernel dropped for want of room, and
// how many times a ring held something that was no record (skipped).
func (r *Reader) Lost() (lost, bad uint64) { return r.lost, r.bad }

// Close stops the events and unmaps their rings.
func (r *Reader) Close() error {
	var errs []error
	for _, rg := range r.rings {
		if err := unix.Munmap(rg.mem); err != nil {
			errs = append(errs, err)
		}
		if err := unix.Close(rg.fd); err != nil {
			errs = append(errs, err)
		}
	}
	r.rings = nil
	return errors.Join(errs...)
}
