package arrowipc

import "sync"

// BufPool holds decoded buffers given back for reuse by the Decoders that
// share it (Decoder.Pool), so that a reader that hands each batch on in
// new memory need not allocate (and clear, and collect) every buffer of
// every batch: without it, reading one column of a 20M-event capture
// spent a third of its CPU time on that. A Decoder that does not reuse its
// buffers takes them from the pool; whoever is done with a batch Puts
// back the buffers it no longer reads.
type BufPool struct {
	mu   sync.Mutex
	free [][]byte
}

// maxPooled bounds the buffers a pool keeps: a few batches' worth.
const maxPooled = 256

// Put gives b back to the pool; nothing may read it after.
func (p *BufPool) Put(b []byte) {
	if cap(b) == 0 {
		return
	}
	p.mu.Lock()
	if len(p.free) < maxPooled {
		p.free = append(p.free, b[:0])
	}
	p.mu.Unlock()
}

// get returns the smallest pooled buffer that holds n bytes and is not
// much larger, or nil. A request handed a buffer of another column's size
// (a batch's 4 KiB validity bitmap, a 512 KiB column) takes it from the
// column it came from, which then allocates: misses spread from batch to
// batch.
func (p *BufPool) get(n int) []byte {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	best := -1
	for i, b := range p.free {
		if cap(b) >= n && cap(b) <= 4*n+4096 && (best < 0 || cap(b) < cap(p.free[best])) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := p.free[best]
	last := len(p.free) - 1
	p.free[best], p.free[last] = p.free[last], nil
	p.free = p.free[:last]
	return b
}
