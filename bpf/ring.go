package bpf

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Ring reads the events ring buffer through its memory mapping. Unlike
// ringbuf.Reader it copies nothing (fn sees the record in the ring) and
// publishes the consumer position once per batch of records rather than per
// record, so the producing CPUs do not fight over that cache line at every
// event. One goroutine calls Drain; Flush and Close may be called from any.
type Ring struct {
	fd       int     // the map's fd (owned by the map)
	epfd     int     // epoll on fd and wake
	wake     int     // eventfd: Flush and Close
	cons     []byte  // consumer page (read-write)
	prodData []byte  // producer page, then the data area mapped twice
	consPos  *uint64 // in cons
	prodPos  *uint64 // in prodData
	data     []byte  // 2*size bytes: a record that wraps is contiguous
	mask     uint64  // size-1
	events   [2]unix.EpollEvent
	flushReq atomic.Bool
	readPos  uint64 // consumer position, ahead of *consPos within a batch
	reads    uint64 // consume passes that found records

	mu       sync.Mutex
	closed   bool
	draining bool
}

// Ring record header (include/uapi/linux/bpf.h).
const (
	ringHdrSize   = 8
	ringBusyBit   = 1 << 31
	ringDiscardBt = 1 << 30
)

// publishEvery is how many bytes Drain consumes before it publishes the
// consumer position, at the latest: producers see the freed space then.
const publishEvery = 256 << 10

// Drain's results other than nil and fn's errors.
var (
	ErrRingClosed  = errors.New("bpf: ring closed")
	ErrRingFlushed = errors.New("bpf: ring flushed")
)

// NewRing maps the ring buffer m for reading.
func NewRing(m *ebpf.Map) (_ *Ring, err error) {
	if m.Type() != ebpf.RingBuf {
		return nil, fmt.Errorf("bpf: map %v is not a ring buffer", m)
	}
	size := int(m.MaxEntries())
	page := os.Getpagesize()
	r := &Ring{fd: m.FD(), epfd: -1, wake: -1, mask: uint64(size - 1)}
	defer func() {
		if err != nil {
			r.release()
		}
	}()
	if r.cons, err = unix.Mmap(r.fd, 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		return nil, fmt.Errorf("bpf: mmap ring consumer page: %w", err)
	}
	if r.prodData, err = unix.Mmap(r.fd, int64(page), page+2*size, unix.PROT_READ, unix.MAP_SHARED); err != nil {
		return nil, fmt.Errorf("bpf: mmap ring data: %w", err)
	}
	r.consPos = (*uint64)(unsafe.Pointer(&r.cons[0]))
	r.prodPos = (*uint64)(unsafe.Pointer(&r.prodData[0]))
	r.data = r.prodData[page:]
	r.readPos = atomic.LoadUint64(r.consPos)

	if r.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return nil, fmt.Errorf("bpf: epoll_create: %w", err)
	}
	if r.wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return nil, fmt.Errorf("bpf: eventfd: %w", err)
	}
	for _, fd := range []int{r.fd, r.wake} {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
		if err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			return nil, fmt.Errorf("bpf: epoll_ctl: %w", err)
		}
	}
	return r, nil
}

// Reads is how many times Drain found records waiting and read them: the
// number of batches the ring was read in. Call it from Drain's goroutine.
func (r *Ring) Reads() uint64 { return r.reads }

// Size is the ring's data size in bytes.
func (r *Ring) Size() int { return int(r.mask + 1) }

// AvailableBytes is how many bytes of records wait to be read.
func (r *Ring) AvailableBytes() int {
	return int(atomic.LoadUint64(r.prodPos) - atomic.LoadUint64(r.consPos))
}

// consume passes to fn every complete record up to the producer position,
// stopping at one a producer is still writing (busy). It publishes the
// consumer position as it goes and at the end. It returns the bytes consumed.
func (r *Ring) consume(fn func(raw []byte) error) (int, error) {
	start := r.readPos
	pos := r.readPos
	published := pos
	prod := atomic.LoadUint64(r.prodPos)
	var err error
	for pos < prod {
		off := pos & r.mask
		hdr := atomic.LoadUint32((*uint32)(unsafe.Pointer(&r.data[off])))
		if hdr&ringBusyBit != 0 {
			break
		}
		n := uint64(hdr &^ (ringBusyBit | ringDiscardBt))
		next := pos + (ringHdrSize+n+7)&^7
		if hdr&ringDiscardBt == 0 {
			if err = fn(r.data[off+ringHdrSize : off+ringHdrSize+n]); err != nil {
				pos = next
				break
			}
		}
		pos = next
		if pos-published >= publishEvery {
			atomic.StoreUint64(r.consPos, pos)
			published = pos
		}
		if pos >= prod {
			prod = atomic.LoadUint64(r.prodPos)
		}
	}
	r.readPos = pos
	atomic.StoreUint64(r.consPos, pos)
	if pos != start {
		r.reads++
	}
	return int(pos - start), err
}

// consumeTo reads until the consumer position reaches target, waiting for
// records producers are still writing (a BPF program finishes its record
// within microseconds).
func (r *Ring) consumeTo(target uint64, fn func(raw []byte) error) error {
	deadline := time.Now().Add(time.Second)
	for int64(target-r.readPos) > 0 {
		n, err := r.consume(fn)
		if err != nil {
			return err
		}
		if n == 0 {
			if time.Now().After(deadline) {
				return fmt.Errorf("bpf: ring record at %d stayed busy for 1s", r.readPos)
			}
			runtime.Gosched()
		}
	}
	return nil
}

// Drain passes the ring's records to fn, in order, until interval has
// passed since it was called (DrainInterval if 0: it returns nil), Flush
// was called (ErrRingFlushed) or the ring was closed (ErrRingClosed). In
// between it sleeps until the kernel wakes it (see Options.WakeupBytes) or a
// few milliseconds, whichever is first, so samples submitted without a
// wake-up are read promptly too. After a Flush it returns only once every
// record submitted before the Flush call was passed to fn. raw is valid only
// during the call to fn. Drain returns the first error from fn.
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
			if err := r.consumeTo(atomic.LoadUint64(r.prodPos), fn); err != nil {
				return err
			}
			return ErrRingFlushed
		}
		if _, err := r.consume(fn); err != nil {
			return err
		}
		wait := time.Until(end)
		if wait <= 0 {
			return nil
		}
		ms := int((wait + time.Millisecond - 1) / time.Millisecond)
		if _, err := unix.EpollWait(r.epfd, r.events[:], ms); err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("bpf: epoll_wait: %w", err)
		}
	}
}

// Flush makes the running (or next) Drain read every record submitted so far
// and return.
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

// Close unmaps the ring; a running Drain returns ErrRingClosed and the
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
	for _, fd := range []*int{&r.epfd, &r.wake} {
		if *fd >= 0 {
			errs = append(errs, unix.Close(*fd))
			*fd = -1
		}
	}
	for _, m := range []*[]byte{&r.cons, &r.prodData} {
		if *m != nil {
			errs = append(errs, unix.Munmap(*m))
			*m = nil
		}
	}
	return errors.Join(errs...)
}
