package replay

import (
	"strings"

	"github.com/bpftape/bpftape/format"
)

// threadKeys keys events by thread for the verbs that pair events of one
// thread (latency, requests): the tid, and in a merged capture also the
// host, so that equal tids of two hosts never pair (nor, with --key,
// equal key values).
type threadKeys struct {
	cols  []int             // per probe, its host field's column; nil if the capture has none
	hosts map[string]uint64 // host -> number, from 1
}

func newThreadKeys(c *Capture) *threadKeys {
	k := &threadKeys{hosts: map[string]uint64{}}
	for pi := range c.Meta().Probes {
		p := &c.Meta().Probes[pi]
		if fi := c.Meta().HostFieldIndex(p); fi >= 0 {
			if k.cols == nil {
				k.cols = make([]int, len(c.Meta().Probes))
				for i := range k.cols {
					k.cols[i] = -1
				}
			}
			k.cols[pi] = c.Column(p.Fields[fi].Column)
		}
	}
	return k
}

// key returns the thread key of event row i of b.
func (k *threadKeys) key(b *format.Batch, i int) uint64 {
	tid := uint64(b.TID[i])
	if k.cols == nil {
		return tid
	}
	return k.host(b, i)<<32 | tid
}

// host returns the number of the host of event row i of b in a merged
// capture, from 1; 0 in a capture of one host.
func (k *threadKeys) host(b *format.Batch, i int) uint64 {
	if k.cols == nil || k.cols[b.Probe[i]] < 0 {
		return 0
	}
	col := b.Col(k.cols[b.Probe[i]])
	if !col.Valid(i) {
		return 0
	}
	h := col.Str(i)
	n, ok := k.hosts[h]
	if !ok {
		// A copy: h may be a view into memory the reader recycles
		// (ScanSpansWhere).
		n = uint64(len(k.hosts) + 1)
		k.hosts[strings.Clone(h)] = n
	}
	return n
}

// openCalls holds the entry times of the calls still open on each thread
// (by thread key), innermost last. The threads looked up last are kept at
// hand, in slots by the key's low bits (a thread id's): events of a thread
// come in runs, or interleave with a few other threads' (one on each
// CPU), and a map lookup per event was the largest cost of pairing them
// after decoding.
type openCalls struct {
	m     map[uint64]*[]int64
	slots [8]openSlot
}

type openSlot struct {
	key  uint64
	open *[]int64
}

// of returns the open calls of thread key k.
func (o *openCalls) of(k uint64) *[]int64 {
	slot := &o.slots[k%uint64(len(o.slots))]
	if slot.open != nil && slot.key == k {
		return slot.open
	}
	if o.m == nil {
		o.m = map[uint64]*[]int64{}
	}
	s := o.m[k]
	if s == nil {
		s = new([]int64)
		o.m[k] = s
	}
	*slot = openSlot{k, s}
	return s
}

// count returns the number of calls still open on every thread.
func (o *openCalls) count() uint64 {
	var n uint64
	for _, s := range o.m {
		n += uint64(len(*s))
	}
	return n
}
