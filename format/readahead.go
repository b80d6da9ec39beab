package format

import (
	"sync"
	"sync/atomic"

	"github.com/bpftape/bpftape/format/arrowipc"
	"github.com/bpftape/bpftape/format/internal/zstdframe"
)

// readAhead decodes the batches after the current one on goroutines of
// their own, each with its own decoder, and hands them to Next in file
// order. A batch is decoded into new memory (a Batch's strings stay valid
// after Next, as with one decoder), and at most 2 × workers batches are
// decoded ahead, so memory stays bounded by the batch size. Each decoder
// has a pool of its own, to which Next gives back the buffers of the
// batches it decoded (Recycle): a buffer is filled again on the core
// that filled it, where one pool for all handed each decoder memory last
// written on another core (requests 19% less CPU, heatmap 8%; bench/README.md,
// "A pool of buffers per decoding goroutine").
//
// A decoder takes the next batch itself, once a token says it may: there
// is one for each batch decoded ahead, and Next gives one back as it takes
// a batch. A goroutine that handed the batches out in order needed a core
// whenever a decoder finished one, and the decoders waited for it: count
// --by comm on the 100M synthesized capture took 0.665 s (median wall)
// with it, 0.616 without (bench/README.md, "Kept on 2026-12-03, at
// night").
type readAhead struct {
	slots  []chan decoded // batch i's at i % len(slots)
	tokens chan struct{}
	next   atomic.Int64 // the next batch a decoder takes
	taken  int          // the next batch Next takes
	done   chan struct{}
	wg     sync.WaitGroup
}

type decoded struct {
	b      *Batch
	raw    int64
	worked any // what Reader.Work returned for b
	err    error
}

// startAhead starts decoding from batch first with workers goroutines.
func (r *Reader) startAhead(first, workers int) {
	depth := 2 * workers
	a := &readAhead{slots: make([]chan decoded, depth), tokens: make(chan struct{}, depth), taken: first, done: make(chan struct{})}
	for k := range a.slots {
		a.slots[k] = make(chan decoded, 1)
		a.tokens <- struct{}{}
	}
	a.next.Store(int64(first))
	n := int64(r.ipc.NumBatches())
	a.wg.Add(workers)
	for w := 0; w < workers; w++ {
		go func(d *arrowipc.Decoder) {
			defer a.wg.Done()
			defer d.Close()
			for {
				select {
				case <-a.tokens:
				case <-a.done:
					return
				}
				i := a.next.Add(1) - 1
				if i >= n {
					return
				}
				b := new(Batch)
				raw, err := r.decode(d, int(i), b)
				var worked any
				if err == nil {
					worked, err = r.work(b)
				}
				// Batches i+1 to i+depth-1 are all that may be
				// taken before Next takes i: its slot is free.
				a.slots[i%int64(depth)] <- decoded{b, raw, worked, err}
			}
		}(r.newDecoder(new(arrowipc.BufPool)))
	}
	r.ahead = a
}

// newDecoder returns a decoder into new memory, or memory of pool,
// which decodes the time column's frames with zstdframe.TimeDecoder where
// it can (6.1-6.4 ns a time in BenchmarkTimeDecode against klauspost's
// 8.6-8.8) and klauspost's decoder the rest.
func (r *Reader) newDecoder(pool *arrowipc.BufPool) *arrowipc.Decoder {
	d := r.ipc.NewDecoder(false)
	d.Pool = pool
	d.SetValuesDecoder(ColTime, new(zstdframe.TimeDecoder).Decode)
	return d
}

// readAhead is read for a Reader with ReadAhead workers: it takes batch
// r.next from the goroutines decoding ahead, starting them on the first
// call.
func (r *Reader) readAhead() error {
	if r.ahead == nil {
		r.startAhead(r.next, r.ReadAhead)
	}
	a := r.ahead
	if a.taken != r.next {
		// Not reached: Next takes every batch in order.
		return corruptf("read ahead at batch %d, not %d", a.taken, r.next)
	}
	d := <-a.slots[a.taken%len(a.slots)]
	a.taken++
	a.tokens <- struct{}{}
	r.RawBytes += d.raw
	if d.b != nil {
		r.batch = *d.b
	}
	r.worked = d.worked
	return d.err
}

// stopAhead stops the goroutines decoding ahead, if any, and waits for
// them, so that Rewind and Close leave none behind.
func (r *Reader) stopAhead() {
	a := r.ahead
	if a == nil {
		return
	}
	r.ahead = nil
	close(a.done)
	a.wg.Wait()
}
