package bpf

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// tokenCounts is the tokens map mapped into this process, read-write: one
// signed count per probe id, which the programs take from (SpecRateLimit)
// and user space adds to, both atomically. In memory rather than by map
// update, for the reason lostCounters gives: a map syscall every refill
// would hold up the programs on the caller's CPU on a preemptible kernel.
type tokenCounts struct {
	mem    []byte
	stride uint32
}

func mapTokenCounts(m *ebpf.Map, stride uint32) (tokenCounts, error) {
	size := int(stride) * 8
	page := os.Getpagesize()
	mem, err := unix.Mmap(m.FD(), 0, (size+page-1)/page*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return tokenCounts{}, fmt.Errorf("bpf: map the rate limits' tokens: %w", err)
	}
	return tokenCounts{mem: mem[:size], stride: stride}, nil
}

func (c *tokenCounts) at(id uint16) *int64 {
	if c.mem == nil || uint32(id) >= c.stride {
		return nil
	}
	return (*int64)(unsafe.Pointer(&c.mem[uint32(id)*8]))
}

func (c *tokenCounts) close() error {
	if c.mem == nil {
		return nil
	}
	err := unix.Munmap(c.mem[:cap(c.mem)])
	c.mem = nil
	return err
}

// TokensLeft returns how many events probe probeID may still record under its
// rate limit (SpecRateLimit): below zero when CPUs took the last token at
// once, which the next tokens added pay back. 0 for a probe id the
// recording does not have (Options.Probes).
func (o *Objects) TokensLeft(probeID uint16) int64 {
	p := o.tokens.at(probeID)
	if p == nil {
		return 0
	}
	return atomic.LoadInt64(p)
}

// AddTokens lets probe probeID record n more events under its rate limit,
// atomically against the programs taking them, and returns the count
// after. It reads no map by syscall.
func (o *Objects) AddTokens(probeID uint16, n int64) int64 {
	p := o.tokens.at(probeID)
	if p == nil {
		return 0
	}
	return atomic.AddInt64(p, n)
}

// RateLimitedCount returns how many events of probe probeID its rate limit
// rejected (SpecRateLimit), summed over CPUs.
func (o *Objects) RateLimitedCount(probeID uint16) (uint64, error) {
	return sumPerCPU(o.RateLimited, "rate_limited", probeID)
}
