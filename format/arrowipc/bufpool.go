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

// get returns the smallest pooled buffer that holds n bytes, or nil.
func (p *BufPool) get(n int) []byte {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	best := -1
	for i, b := range p.free {
		if cap(b) >= n && (best < 0 || cap(b) < cap(p.free[best])) {
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
