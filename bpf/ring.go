package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Ring reads the per-CPU ring buffers (Objects.RingMaps) through their
// memory mappings and merges them into one stream ordered by sample time.
// Unlike ringbuf.Reader it copies nothing (fn sees the record in the ring)
// and publishes each ring's consumer position once per batch of records
// rather than per record, so producers do not fight over that cache line at
// every event. One goroutine calls Drain; Flush and Close may be called from
// any.
//
// Order: records of one ring come in the order they were reserved; across
// rings, Drain passes the record with the smallest time first, among records
// reserved before it last looked at the producer positions. A thread cannot
// move to another CPU while a program runs for it, so its records, even on
// different rings, come in the order they were made.
//
// Staging (Objects.NewRing): the programs send a CPU's records in batches
// (BatchProbeID), which Drain passes on one record at a time. A CPU's
// partial batch reaches its ring only when the pass flushes the stages,
// every flushEvery at most; a pass then passes on only records older than
// the flush's start, so that no sample still staged on a quiet CPU comes
// after a younger one from a busy CPU.
type Ring struct {
	parts []*ringPart
	epfd  int // epoll on every ring, wake and timer
	// poll is epfd, non-blocking, in the Go runtime's poller: Drain
	// waits there, parked, not in epoll_wait, until timer or a ring
	// wakes it (see wait).
	poll     *os.File
	pollConn syscall.RawConn
	timer    int // timerfd: the end of a wait
	wake     int // eventfd: Flush and Close
	events   []unix.EpollEvent
	heads    [][]byte // per part: its next record in a merge pass
	times    []uint64 // per part: that record's time
	flushReq atomic.Bool
	reads    uint64 // merge passes that found records
	// flush, if not nil, sends the CPUs' staged samples to their rings
	// (Objects.FlushStages); busy: a CPU was running a program. A pass
	// then passes on only records older than cutoff, the time the last
	// flush (at lastFlush) began; held says the last pass stopped there.
	flush     func() (busy bool, err error)
	cutoff    uint64
	lastFlush time.Time
	held      bool

	mu       sync.Mutex
	closed   bool
	draining bool
}

// ringPart is one CPU's ring.
type ringPart struct {
	fd       int
	cons     []byte  // consumer page (read-write)
	prodData []byte  // producer page, then the data area mapped twice
	consPos  *uint64 // in cons
	prodPos  *uint64 // in prodData
	data     []byte  // 2*size bytes: a record that wraps is contiguous
	mask     uint64  // size-1
	every    uint64  // publish the position after this many bytes (publishEvery)

	pos       uint64 // consumer position, ahead of *consPos within a pass
	published uint64 // last position stored to *consPos
	prod      uint64 // producer position seen at the start of the pass

	// batch is what remains to pass on of the batch record at pos (see
	// BatchProbeID), batchLen that record's length.
	batch    []byte
	batchLen uint64
}

// Ring record header (include/uapi/linux/bpf.h).
const (
	ringHdrSize    = 8
	ringBusyBit    = 1 << 31
	ringDiscardBit = 1 << 30
)

// publishEvery is how many bytes Drain consumes from a ring before it
// publishes the ring's consumer position, at the latest: producers see the
// freed space then. A ring smaller than 4 publishEvery (the per-CPU rings
// of a host with many CPUs) publishes every quarter of its size, so that
// producers never wait for most of the ring.
const publishEvery = 256 << 10

// publishInterval is how often, in bytes, a ring of size bytes publishes
// its consumer position.
func publishInterval(size uint64) uint64 { return min(publishEvery, size/4) }

// busyWait bounds how long a merge pass waits for a record a producer is
// still writing (a BPF program finishes it within microseconds) before it
// ends the pass and leaves the rest for the next.
const busyWait = 200 * time.Microsecond

// Drain's results other than nil and fn's errors.
var (
	ErrRingClosed  = errors.New("bpf: ring closed")
	ErrRingFlushed = errors.New("bpf: ring flushed")
)

// NewRing maps the ring buffers maps (one per CPU) for reading.
func NewRing(maps ...*ebpf.Map) (_ *Ring, err error) {
	r := &Ring{epfd: -1, wake: -1, timer: -1}
	defer func() {
		if err != nil {
			r.release()
		}
	}()
	if r.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return nil, fmt.Errorf("bpf: epoll_create: %w", err)
	}
	if err = unix.SetNonblock(r.epfd, true); err != nil {
		return nil, fmt.Errorf("bpf: epoll: %w", err)
	}
	// The File owns epfd from here: release closes it.
	r.poll = os.NewFile(uintptr(r.epfd), "bpftape rings")
	if r.pollConn, err = r.poll.SyscallConn(); err != nil {
		return nil, fmt.Errorf("bpf: epoll: %w", err)
	}
	if r.wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return nil, fmt.Errorf("bpf: eventfd: %w", err)
	}
	if r.timer, err = unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC|unix.TFD_NONBLOCK); err != nil {
		return nil, fmt.Errorf("bpf: timerfd: %w", err)
	}
	// Edge-triggered: each expiry wakes the reader once, and nobody
	// reads the timer (arming it again resets its count).
	tev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: int32(r.timer)}
	if err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_ADD, r.timer, &tev); err != nil {
		return nil, fmt.Errorf("bpf: epoll_ctl: %w", err)
	}
	fds := []int{r.wake}
	for i, m := range maps {
		p, err := mapRing(m)
		if err != nil {
			return nil, fmt.Errorf("bpf: ring %d: %w", i, err)
		}
		r.parts = append(r.parts, p)
		fds = append(fds, p.fd)
	}
	for _, fd := range fds {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
		if err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			return nil, fmt.Errorf("bpf: epoll_ctl: %w", err)
		}
	}
	r.events = make([]unix.EpollEvent, len(fds)+1)
	r.heads, r.times = make([][]byte, len(r.parts)), make([]uint64, len(r.parts))
	return r, nil
}

func mapRing(m *ebpf.Map) (_ *ringPart, err error) {
	if m.Type() != ebpf.RingBuf {
		return nil, fmt.Errorf("map %v is not a ring buffer", m)
	}
	size := int(m.MaxEntries())
	page := os.Getpagesize()
	p := &ringPart{fd: m.FD(), mask: uint64(size - 1), every: publishInterval(uint64(size))}
	if p.cons, err = unix.Mmap(p.fd, 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		return nil, fmt.Errorf("mmap consumer page: %w", err)
	}
	if p.prodData, err = unix.Mmap(p.fd, int64(page), page+2*size, unix.PROT_READ, unix.MAP_SHARED); err != nil {
		unix.Munmap(p.cons)
		return nil, fmt.Errorf("mmap data: %w", err)
	}
	p.consPos = (*uint64)(unsafe.Pointer(&p.cons[0]))
	p.prodPos = (*uint64)(unsafe.Pointer(&p.prodData[0]))
	p.data = p.prodData[page:]
	p.pos = atomic.LoadUint64(p.consPos)
	p.published = p.pos
	return p, nil
}

// Reads is how many times Drain found records waiting and read them: the
// number of batches the rings were read in. Call it from Drain's goroutine.
func (r *Ring) Reads() uint64 { return r.reads }

// AvailableBytes is how many bytes of records wait to be read, summed over
// the rings.
func (r *Ring) AvailableBytes() int {
	n := 0
	for _, p := range r.parts {
		n += int(atomic.LoadUint64(p.prodPos) - atomic.LoadUint64(p.consPos))
	}
	return n
}

// head returns the next complete record of p before p.prod, skipping
// discarded ones and passing on the records of a batch one by one. busy
// is true if a producer is still writing it.
func (p *ringPart) head() (rec []byte, busy bool) {
	for {
		if len(p.batch) > 0 {
			if rec, ok := nextStaged(p.batch); ok {
				return rec, false
			}
			p.endBatch() // malformed: the programs never write one
			continue
		}
		if p.pos >= p.prod {
			return nil, false
		}
		off := p.pos & p.mask
		hdr := atomic.LoadUint32((*uint32)(unsafe.Pointer(&p.data[off])))
		if hdr&ringBusyBit != 0 {
			return nil, true
		}
		n := uint64(hdr &^ (ringBusyBit | ringDiscardBit))
		if hdr&ringDiscardBit != 0 {
			p.advanceRing(n)
			continue
		}
		rec = p.data[off+ringHdrSize : off+ringHdrSize+n]
		if len(rec) >= HeaderSize && binary.LittleEndian.Uint16(rec[OffProbeID:]) == BatchProbeID {
			p.batch, p.batchLen = rec[HeaderSize:], n
			if len(p.batch) == 0 {
				p.endBatch()
			}
			continue
		}
		return rec, false
	}
}

// nextStaged returns the first staged record of a batch's rest b.
func nextStaged(b []byte) ([]byte, bool) {
	if len(b) < stagedHdrSize {
		return nil, false
	}
	n := uint64(binary.LittleEndian.Uint32(b))
	if n > uint64(len(b)-stagedHdrSize) {
		return nil, false
	}
	return b[stagedHdrSize : stagedHdrSize+n], true
}

// advance moves past the head record, whose length is n.
func (p *ringPart) advance(n uint64) {
	if len(p.batch) == 0 {
		p.advanceRing(n)
		return
	}
	if step := stagedHdrSize + (n+7)&^7; step < uint64(len(p.batch)) {
		p.batch = p.batch[step:]
		return
	}
	p.endBatch()
}

// endBatch moves past the batch record at pos.
func (p *ringPart) endBatch() {
	p.batch = nil
	p.advanceRing(p.batchLen)
}

// advanceRing moves past the ring record at pos, whose length is n,
// publishing the position every p.every bytes.
func (p *ringPart) advanceRing(n uint64) {
	p.pos += (ringHdrSize + n + 7) &^ 7
	if p.pos-p.published >= p.every {
		p.publish()
	}
}

func (p *ringPart) publish() {
	atomic.StoreUint64(p.consPos, p.pos)
	p.published = p.pos
}

// recordTime is the time of a sample or comm record (offset OffTime).
func recordTime(rec []byte) uint64 {
	if len(rec) < OffTime+8 {
		return 0
	}
	return binary.LittleEndian.Uint64(rec[OffTime:])
}

// consume passes to fn, merged by time, the records reserved in every ring
// before it read their producer positions. It ends the pass early at a
// record a producer is still writing after busyWait: what follows it waits
// for the next pass, so a thread's records never overtake one another.
//
// With staging (flush set) it first sends every CPU's stage to its ring,
// and passes on only records older than the moment it began to: a CPU
// may stage a sample after its stage was sent, which must not come after
// a younger one from another CPU.
//
// It flushes the stages at most every flushEvery, unless force: each flush
// interrupts every CPU (an IPI, several microseconds in a VM), and a pass
// per few events (a reader that keeps up) made the flushes cost a traced
// write(2) 500 ns more. Records past the cutoff wait for the next flush.
func (r *Ring) consume(fn func(raw []byte) error, force bool) error {
	cutoff := uint64(math.MaxUint64)
	r.held = false
	if r.flush != nil {
		if force || time.Since(r.lastFlush) >= flushEvery {
			if err := r.flushStages(); err != nil {
				return err
			}
		}
		cutoff = r.cutoff
	}
	found := false
	for _, p := range r.parts {
		p.prod = atomic.LoadUint64(p.prodPos)
		found = found || p.prod != p.pos
	}
	if !found {
		return nil
	}
	r.reads++
	defer func() {
		for _, p := range r.parts {
			if p.pos != p.published {
				p.publish()
			}
		}
	}()
	if len(r.parts) == 1 {
		return r.consumeOne(r.parts[0], cutoff, fn)
	}

	heads, times := r.heads, r.times
	// load reads part i's head record; false if a producer still writes it.
	load := func(i int) bool {
		rec, busy := r.parts[i].head()
		if busy {
			if rec, busy = r.parts[i].waitBusy(); busy {
				return false
			}
		}
		heads[i] = rec
		if rec != nil {
			times[i] = recordTime(rec)
		}
		return true
	}
	for i := range r.parts {
		if !load(i) {
			return nil
		}
	}
	for {
		best := -1
		for i, h := range heads {
			if h != nil && (best < 0 || times[i] < times[best]) {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		if times[best] >= cutoff {
			r.held = true
			return nil
		}
		rec := heads[best]
		err := fn(rec)
		r.parts[best].advance(uint64(len(rec)))
		if err != nil {
			return err
		}
		if !load(best) {
			return nil
		}
	}
}

// consumeOne is consume for a single ring: no merging.
func (r *Ring) consumeOne(p *ringPart, cutoff uint64, fn func(raw []byte) error) error {
	for {
		rec, busy := p.head()
		if busy {
			if rec, busy = p.waitBusy(); busy {
				return nil
			}
		}
		if rec == nil {
			return nil
		}
		if recordTime(rec) >= cutoff {
			r.held = true
			return nil
		}
		err := fn(rec)
		p.advance(uint64(len(rec)))
		if err != nil {
			return err
		}
	}
}

// flushStages runs flush until no CPU is busy, for busyWait at most, and
// sets cutoff to the boot-clock time before it began (every sample older
// than that is then in a ring, unless a CPU stayed busy) and lastFlush.
func (r *Ring) flushStages() error {
	// Raw (see wait): Go's vDSO clock has no CLOCK_BOOTTIME, and x/sys's
	// ClockGettime goes through the runtime's system call path.
	var ts unix.Timespec
	if _, _, errno := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_BOOTTIME, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return fmt.Errorf("bpf: clock_gettime: %w", errno)
	}
	deadline := time.Now().Add(busyWait)
	for {
		busy, err := r.flush()
		if err != nil {
			return err
		}
		if !busy || time.Now().After(deadline) {
			r.cutoff, r.lastFlush = uint64(ts.Nano()), time.Now()
			return nil
		}
		runtime.Gosched()
	}
}

// waitBusy waits up to busyWait for the head record to be complete.
func (p *ringPart) waitBusy() (rec []byte, busy bool) {
	deadline := time.Now().Add(busyWait)
	for {
		runtime.Gosched()
		if rec, busy = p.head(); !busy || time.Now().After(deadline) {
			return rec, busy
		}
	}
}

// Drain passes the rings' records to fn until interval has passed since it
// was called (DrainInterval if 0: it returns nil), Flush was called
// (ErrRingFlushed) or the ring was closed (ErrRingClosed). In between it
// sleeps until the kernel wakes it (see Options.WakeupBytes), Flush is
// called, or the interval ends, so samples submitted without a wake-up are
// read within the interval. After a Flush it returns only once every record
// submitted before the Flush call was passed to fn. raw is valid only during
// the call to fn. Drain returns the first error from fn.
func (r *Ring) Drain(interval time.Duration, fn func(raw []byte) error) error {
	if interval <= 0 {
		interval = DrainInterval
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrRingClosed
	}
	r.draining = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.draining = false
		if r.closed {
			r.release()
		}
		r.mu.Unlock()
	}()
	end := time.Now().Add(interval)
	woken := false // by a ring
	for {
		r.mu.Lock()
		closed := r.closed
		r.mu.Unlock()
		if closed {
			return ErrRingClosed
		}
		if r.flushReq.Swap(false) {
			var buf [8]byte
			unix.Read(r.wake, buf[:]) // reset the eventfd; EAGAIN if already read
			return r.consumeAll(fn)
		}
		if err := r.consume(fn, woken); err != nil {
			return err
		}
		wait := time.Until(end)
		if wait <= 0 {
			return nil
		}
		if r.held {
			// The rest waits for the next flush, or a ring's wake-up.
			wait = min(wait, flushEvery-time.Since(r.lastFlush))
		} else if r.pending() {
			continue // producers wrote more during the pass
		}
		n, err := r.wait(wait)
		if err != nil {
			return err
		}
		woken = false
		for _, ev := range r.events[:n] {
			woken = woken || int(ev.Fd) != r.wake && int(ev.Fd) != r.timer
		}
	}
}

// wait waits up to d for an event of the rings, wake or the timer, and
// returns how many it put in r.events.
//
// It waits parked in the Go runtime's poller, which watches epfd, not
// blocked in epoll_wait; a timerfd in epfd, not a poller deadline, ends
// the wait. Every system call of a pass that cannot block (this
// epoll_wait with no timeout, arming the timer, the clock, runOnCPU) is
// made raw, outside the runtime's system call path. The runtime's sysmon
// thread sleeps while every P is idle. A goroutine entering a system call
// wakes it, and it then polls every 20 us, taking back a P blocked in a
// call for over 10 ms, which starts the polling over. Blocked in
// epoll_wait at every wait, the recorder kept sysmon polling: on this VM,
// whose context switches cost ~20 us, perf gave sysmon 22% of the
// recorder's CPU (tracepoint workload, 2 threads). Parked, with the
// pass's calls raw (4 rounds against the blocking wait, alternating):
// sysmon's wake-ups fell from 2,919-3,273 to 572-827 (tracepoint, 1
// thread, 6M events) and from 1,078-1,300 to 296-577 (uprobe, 1 thread,
// 1.5M), and the recorder's median CPU per event from 78.3 to 68.4 ns and
// from 100 to 90 ns; with 2 threads busy on both CPUs, 88.6 to 85.6 and
// 105 to 105. Idle, it switches 29 times a second instead of 61.
//
// An earlier version (38c6e55) ended the wait with a read deadline on
// poll. Each wait then reset a runtime timer, which wakes the poller
// through its eventfd; a 6.1-rt guest oopsed once in 2 runs of make
// vmtest in one of the recorder's 8-byte reads, under two kprobes on
// vfs_read. The timer keeps the runtime's timers and its eventfd out of
// the drain loop.
func (r *Ring) wait(d time.Duration) (int, error) {
	if d > 0 {
		spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
		if _, _, errno := unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(r.timer), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0); errno != 0 {
			return 0, fmt.Errorf("bpf: timerfd_settime: %w", errno)
		}
	}
	n := 0
	var werr error
	err := r.pollConn.Read(func(fd uintptr) bool {
		// Raw (see above): with timeout 0 it does not block.
		r1, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, fd, uintptr(unsafe.Pointer(&r.events[0])), uintptr(len(r.events)), 0, 0, 0)
		n, werr = int(r1), nil
		if errno != 0 {
			n, werr = 0, errno
		}
		// d <= 0: look once, do not park.
		return n > 0 || d <= 0 || werr != nil && werr != unix.EINTR
	})
	switch {
	case err != nil:
		return 0, fmt.Errorf("bpf: wait for the rings: %w", err)
	case werr != nil && werr != unix.EINTR:
		return 0, fmt.Errorf("bpf: epoll_wait: %w", werr)
	}
	return n, nil
}

// Cutoff is, with staging, the boot-clock time before which Drain has
// passed on every record: the start of the last flush of the stages (a
// pass passes on nothing younger). ok is false without staging. Call it
// from Drain's goroutine.
func (r *Ring) Cutoff() (t uint64, ok bool) { return r.cutoff, r.flush != nil }

// flushEvery is how often, at most, a pass flushes the CPUs' stages
// unless a ring woke the reader (see consume).
const flushEvery = 2 * DrainInterval

// setFlush makes every pass flush the stages with flush first (see
// consume). The rings then wake epoll edge-triggered: a pass that stops at
// the cutoff leaves records in them, which would otherwise wake it at once.
func (r *Ring) setFlush(flush func() (bool, error)) error {
	r.flush = flush
	for _, p := range r.parts {
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: int32(p.fd)}
		if err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_MOD, p.fd, &ev); err != nil {
			return fmt.Errorf("bpf: epoll_ctl: %w", err)
		}
	}
	return nil
}

// pending reports whether a ring has records past what Drain has read.
func (r *Ring) pending() bool {
	for _, p := range r.parts {
		if atomic.LoadUint64(p.prodPos) != p.pos {
			return true
		}
	}
	return false
}

// consumeAll reads every record reserved before it was called.
func (r *Ring) consumeAll(fn func(raw []byte) error) error {
	if r.flush != nil {
		if err := r.flushStages(); err != nil {
			return err
		}
	}
	target := make([]uint64, len(r.parts))
	for i, p := range r.parts {
		target[i] = atomic.LoadUint64(p.prodPos)
	}
	deadline := time.Now().Add(time.Second)
	for {
		done := true
		for i, p := range r.parts {
			done = done && int64(target[i]-p.pos) <= 0
		}
		if done {
			return ErrRingFlushed
		}
		if time.Now().After(deadline) {
			return errors.New("bpf: a ring record stayed busy for 1s")
		}
		if err := r.consume(fn, r.flush != nil); err != nil {
			return err
		}
	}
}

// Flush makes the running (or next) Drain read every record submitted so far
// and return ErrRingFlushed.
func (r *Ring) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrRingClosed
	}
	r.flushReq.Store(true)
	var one = [8]byte{1}
	if _, err := unix.Write(r.wake, one[:]); err != nil && !errors.Is(err, unix.EAGAIN) {
		return fmt.Errorf("bpf: wake ring reader: %w", err)
	}
	return nil
}

// Close unmaps the rings; a running Drain returns ErrRingClosed and the
// mappings go once it has. Unread records are lost.
func (r *Ring) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	if r.draining {
		var one = [8]byte{1}
		unix.Write(r.wake, one[:])
		return nil
	}
	return r.release()
}

func (r *Ring) release() error {
	var errs []error
	if r.poll != nil {
		errs = append(errs, r.poll.Close())
		r.poll, r.epfd = nil, -1
	}
	for _, fd := range []*int{&r.epfd, &r.wake, &r.timer} {
		if *fd >= 0 {
			errs = append(errs, unix.Close(*fd))
			*fd = -1
		}
	}
	for _, p := range r.parts {
		for _, m := range []*[]byte{&p.cons, &p.prodData} {
			if *m != nil {
				errs = append(errs, unix.Munmap(*m))
				*m = nil
			}
		}
	}
	r.parts = nil
	return errors.Join(errs...)
}
