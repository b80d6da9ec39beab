package bpf

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// lostCounters is the lost map mapped into this process: stride counters
// (one per probe id) for each possible CPU, which the programs add to
// atomically. Reading them in memory rather than by map lookup matters on
// a preemptible kernel: a map syscall raises the kernel's bpf_prog_active
// on the reader's CPU, and a reader preempted there makes the kernel skip
// every program on that CPU, without counting, until it runs again.
type lostCounters struct {
	mem    []byte
	stride uint32
	ncpu   int
}

func mapLostCounters(m *ebpf.Map, stride uint32, ncpu int) (lostCounters, error) {
	size := int(stride) * ncpu * 8
	page := os.Getpagesize()
	mem, err := unix.Mmap(m.FD(), 0, (size+page-1)/page*page, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return lostCounters{}, fmt.Errorf("bpf: map the lost counters: %w", err)
	}
	return lostCounters{mem: mem[:size], stride: stride, ncpu: ncpu}, nil
}

// read returns probe id's counter of every possible CPU, in dst if it is
// large enough. A probe id without counters reads as zeros.
func (c *lostCounters) read(id uint16, dst []uint64) []uint64 {
	if cap(dst) < c.ncpu {
		dst = make([]uint64, c.ncpu)
	}
	dst = dst[:c.ncpu]
	for cpu := range dst {
		dst[cpu] = 0
		if uint32(id) < c.stride {
			off := (uint32(cpu)*c.stride + uint32(id)) * 8
			dst[cpu] = atomic.LoadUint64((*uint64)(unsafe.Pointer(&c.mem[off])))
		}
	}
	return dst
}

func (c *lostCounters) close() error {
	if c.mem == nil {
		return nil
	}
	err := unix.Munmap(c.mem[:cap(c.mem)])
	c.mem = nil
	return err
}

// LostCounts returns how many samples of probe probeID each possible CPU
// dropped because its ring was full, in dst if it is large enough. It
// reads the counters' memory: no syscall, so a reader that polls it never
// holds up the programs (see lostCounters).
func (o *Objects) LostCounts(probeID uint16, dst []uint64) []uint64 {
	return o.lost.read(probeID, dst)
}
