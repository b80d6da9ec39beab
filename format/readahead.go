package format

import (
	"sync"

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
type readAhead struct {
	order chan chan decoded
	done  chan struct{}
	wg    sync.WaitGroup
}

type decoded struct {
	b      *Batch
	raw    int64
	worked any // what Reader.Work returned for b
	err    error
}

type job struct {
	i  int
	ch chan decoded
}

// startAhead starts decoding from batch first with workers goroutines.
func (r *Reader) startAhead(first, workers int) {
	a := &readAhead{order: make(chan chan decoded, 2*workers), done: make(chan struct{})}
	jobs := make(chan job)
	a.wg.Add(1 + workers)
	go func() {
		defer a.wg.Done()
		defer close(a.order)
		defer close(jobs)
		for i := first; i < r.ipc.NumBatches(); i++ {
			ch := make(chan decoded, 1)
			select {
			case a.order <- ch:
			case <-a.done:
				return
			}
			select {
			case jobs <- job{i, ch}:
			case <-a.done:
				return
			}
		}
	}()
	for w := 0; w < workers; w++ {
		go func(d *arrowipc.Decoder) {
			defer a.wg.Done()
			defer d.Close()
			for j := range jobs {
				b := new(Batch)
				raw, err := r.decode(d, j.i, b)
				var worked any
				if err == nil {
					worked, err = r.work(b)
				}
				j.ch <- decoded{b, raw, worked, err}
			}
		}(r.newDecoder(new(arrowipc.BufPool)))
	}
	r.ahead = a
}

// newDecoder returns a decoder into new memory, or memory of pool,
// which decodes the time column's frames with zstdframe.TimeDecoder where
// it can (12% faster than klauspost's decoder in BenchmarkTimeDecode,
// which saved latency a fifth of its CPU) and klauspost's decoder the rest.
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
	ch, ok := <-r.ahead.order
	if !ok {
		// Not reached: the feeder sends a batch for every index.
		return corruptf("read ahead ended early")
	}
	d := <-ch
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
	// The feeder may wait on a full order channel: drain it.
	go func() {
		for range a.order {
		}
	}()
	a.wg.Wait()
}
