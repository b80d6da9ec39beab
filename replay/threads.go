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

// perThread holds a V for each thread key, made on first use. The
// threads looked up last are kept at hand, in slots by the key's low bits
// (a thread id's): events of a thread come in runs, or interleave with a
// few other threads' (one on each CPU), and a map lookup per event was the
// largest cost of pairing them after decoding (6.8% of latency's CPU on a
// capture of two threads, where one slot held only the last thread).
type perThread[V any] struct {
	m     map[uint64]*V
	slots [8]threadSlot[V]
	// free holds the Vs of threads forgotten by reuse, made ready for
	// the threads of the next batch.
	free []*V
}

type threadSlot[V any] struct {
	key uint64
	v   *V
}

// of returns the V of thread key k.
func (t *perThread[V]) of(k uint64) *V {
	slot := &t.slots[k%uint64(len(t.slots))]
	if slot.v != nil && slot.key == k {
		return slot.v
	}
	if t.m == nil {
		t.m = map[uint64]*V{}
	}
	v := t.m[k]
	if v == nil {
		if n := len(t.free); n > 0 {
			v, t.free = t.free[n-1], t.free[:n-1]
		} else {
			v = new(V)
		}
		t.m[k] = v
	}
	*slot = threadSlot[V]{k, v}
	return v
}

// reuse forgets every thread, keeping their Vs, emptied by empty, for
// the threads to come. A batch's part (latencyPart) grew a stack for each
// thread anew in every batch, fresh memory and a page fault every 4 KiB:
// 4,680 faults for latency on a 20M-event capture of four threads, 2,344
// with reuse, and 1.67 against 1.59 s of CPU on 100M events.
func (t *perThread[V]) reuse(empty func(*V)) {
	for _, v := range t.m {
		empty(v)
		t.free = append(t.free, v)
	}
	clear(t.m)
	t.slots = [len(t.slots)]threadSlot[V]{}
}

// openCalls holds the entry times of the calls still open on each thread
// (by thread key), innermost last.
type openCalls = perThread[[]int64]
